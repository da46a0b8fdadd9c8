"""A new worker's warm-up: every path it runs works (a failure would only be logged), and it leaves the worker's
caches as they were: it reads no account and keeps nothing."""

from __future__ import annotations

import logging

import anyio
import pytest

from slugline.app import create_api
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.web import warmup

FAILED = "warming up the worker failed"


def test_the_warm_up_runs_every_path_and_keeps_nothing(
    settings: Settings, runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    api = create_api(settings, runtime)
    with caplog.at_level(logging.WARNING, logger="slugline"):
        anyio.run(warmup.warm_up, api, runtime)
    assert not [r for r in caplog.records if FAILED in r.getMessage()], caplog.text
    assert runtime.analytics.stats().misses == 0 and runtime.analytics.bytes == 0
    assert len(runtime.identities) == 0


def test_a_warm_up_that_fails_is_logged_and_the_worker_serves(
    settings: Settings, runtime: Runtime, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("no analytics today")

    monkeypatch.setattr(warmup, "analytics_on_thread", broken)
    with caplog.at_level(logging.WARNING, logger="slugline"):
        anyio.run(warmup.warm_up, create_api(settings, runtime), runtime)
    assert FAILED in caplog.text and "no analytics today" in caplog.text
