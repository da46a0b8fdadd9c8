"""An account's figures and its top links read at once on two threads (`analytics.service.get_analytics`), each in a
transaction of its own, when the account has a second query slot free; on one thread otherwise. Both ways answer
the same; on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from slugline.accounts import callers
from slugline.analytics import reading, service, toplinks
from slugline.analytics.cache import AnswerCache
from slugline.common.caller import Caller
from slugline.common.errors import Invalid
from slugline.limits import rules as limits
from slugline.runtime import Runtime
from tests.support.helpers import CHROME, Account
from tests.support.past_clicks import IPHONE, TODAY, clicked

QUESTIONS: list[dict[str, Any]] = [
    {"days": 30},
    {"days": 120},
    {"days": 120, "device": "mobile"},
    {"days": 120, "source": "google.com"},
    {"days": 7, "interval": "hour"},
    {"days": 120, "interval": "week", "device": "desktop", "source": "newsletter"},
]


def _caller(rt: Runtime, who: Account, public_only: bool = False) -> Caller:
    return callers.resolve(rt, callers.parse(rt, f"Bearer {who.public if public_only else who.full}"), "http://sl.test")


def _accounts_clicks(client: TestClient, who: Account, runtime: Runtime) -> None:
    sources = ("google.com", "newsletter", None)
    clicked(
        client,
        who,
        runtime,
        **{
            f"t{n}": [
                (TODAY - d, CHROME if (d + n) % 3 else IPHONE, sources[(d + n) % 3]) for d in range(0, 100, n + 1)
            ]
            for n in range(5)
        },
    )


def _at_once(runtime: Runtime, caller: Caller, question: dict[str, Any]) -> dict[str, Any]:
    async def ask() -> dict[str, Any]:
        return await service.get_analytics(runtime, caller, dict(question))

    return anyio.run(ask)


def test_both_parts_run_at_once_and_answer_what_one_thread_does(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    _accounts_clicks(client, alice, runtime)
    # Each part waits at the barrier for the other: on one thread (one after the other) it would time out.
    meet = threading.Barrier(2, timeout=10)
    threads: dict[str, int] = {}

    def met(name: str, read: Callable[..., Any]) -> Callable[..., Any]:
        def part(*args: Any, **kwargs: Any) -> Any:
            threads[name] = threading.get_ident()
            meet.wait()
            return read(*args, **kwargs)

        return part

    answer, top = reading.read_answer, toplinks.top_links
    for public_only in (False, True):
        caller = _caller(runtime, alice, public_only)
        for question in QUESTIONS:
            runtime.analytics = AnswerCache(1)  # nothing kept: every part reads the cubes
            with monkeypatch.context() as patched:
                patched.setattr(reading, "read_answer", met("answer", answer))
                patched.setattr(toplinks, "top_links", met("top", top))
                both = _at_once(runtime, caller, question)
            assert threads["answer"] != threads["top"]
            runtime.analytics = AnswerCache(1)
            one = service.analytics_on_thread(runtime, caller, dict(question))
            assert both == one, question
            assert both["total_clicks"] > 0 and both["top_links"], question


def test_without_a_spare_slot_the_answer_is_read_on_one_thread(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every other slot of the account taken: the question neither waits for one nor takes a second thread."""
    _accounts_clicks(client, alice, runtime)
    caller = _caller(runtime, alice)
    threads: set[int] = set()
    answer, top = reading.read_answer, toplinks.top_links

    def seen(read: Callable[..., Any]) -> Callable[..., Any]:
        def part(*args: Any, **kwargs: Any) -> Any:
            threads.add(threading.get_ident())
            return read(*args, **kwargs)

        return part

    monkeypatch.setattr(reading, "read_answer", seen(answer))
    monkeypatch.setattr(toplinks, "top_links", seen(top))

    async def ask_beside(others: int) -> dict[str, Any]:
        async with anyio.create_task_group() as group:
            taken, done = anyio.Event(), anyio.Event()

            async def hold() -> None:
                async with limits.analysing(runtime, caller.account_id):
                    taken.set()
                    await done.wait()

            for _ in range(others):
                taken = anyio.Event()
                group.start_soon(hold)
                await taken.wait()
            with anyio.fail_after(10):
                out = await service.get_analytics(runtime, caller, {"days": 120, "device": "mobile"})
            done.set()
        return out

    cap = limits.query_cap(runtime)
    assert cap >= 2
    one = anyio.run(ask_beside, cap - 1)
    assert len(threads) == 1
    threads.clear()
    both = anyio.run(ask_beside, 0)
    assert len(threads) == 2
    assert one == both and one["top_links"]


def test_a_parts_error_is_raised_as_it_is(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not inside an exception group: the interfaces answer it as they would from one thread (here 422)."""
    _accounts_clicks(client, alice, runtime)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise Invalid("refused by the test")

    monkeypatch.setattr(toplinks, "top_links", refused)
    with pytest.raises(Invalid, match="refused by the test"):
        _at_once(runtime, _caller(runtime, alice), {"days": 30})
    answer = client.get("/api/v1/analytics", params={"days": 30}, headers=alice.auth())
    assert answer.status_code == 422 and answer.json() == {"error": "refused by the test"}
