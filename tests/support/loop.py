"""The event loop the loop paths (`storage.loopread`, `storage.loopwrite`) are driven on in the tests that use `now`."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any, Protocol, TypeVar

import pytest

from slugline.runtime import Runtime

T = TypeVar("T")


class Now(Protocol):
    def __call__(self, coro: Coroutine[Any, Any, T], /) -> T: ...


@pytest.fixture
def now(runtime: Runtime) -> Iterator[Now]:
    """Runs the loop path's coroutines on one event loop (PostgreSQL's connections belong to it)."""
    with asyncio.Runner() as runner:
        yield runner.run
        runner.run(runtime.db.close_loop())
