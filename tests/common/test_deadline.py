"""`within`: the loop's coarse time limits raise TimeoutError as `asyncio.timeout` does, up to `TICK` late, and
never swallow or invent a cancellation."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from slugline.common import deadline
from slugline.common.deadline import TICK, within

Runner = Callable[[Coroutine[Any, Any, Any]], Any]
RUNNERS = pytest.mark.parametrize("run", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])


@RUNNERS
def test_a_block_past_its_limit_raises_timeout_error(run: Runner) -> None:
    async def main() -> float:
        started = time.monotonic()
        with pytest.raises(TimeoutError), within(0.2):
            await asyncio.sleep(10)
        return time.monotonic() - started

    took = run(main())
    assert 0.2 - 0.005 <= took < 0.2 + TICK + 0.2  # uvloop's timers run on a millisecond clock: up to 1 ms early


@RUNNERS
def test_a_block_done_in_time_leaves_no_cancellation_behind(run: Runner) -> None:
    async def main() -> int:
        with within(0.05):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # past the limit and a sweep: nothing may cancel the task now
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    assert run(main()) == 0


@RUNNERS
def test_a_cancellation_from_elsewhere_passes_through(run: Runner) -> None:
    async def main() -> None:
        async def waits() -> None:
            with within(10):
                await asyncio.sleep(10)

        task = asyncio.create_task(waits())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())


@RUNNERS
def test_a_cancellation_from_elsewhere_wins_over_an_expired_limit(run: Runner) -> None:
    """As asyncio.timeout: once the task was also cancelled by someone else, the block raises CancelledError."""

    async def main() -> None:
        async def waits() -> None:
            with within(0.1):
                try:
                    await asyncio.sleep(10)
                finally:
                    await asyncio.sleep(10)  # the limit's cancellation came; this waits for the outside one

        task = asyncio.create_task(waits())
        await asyncio.sleep(0.1 + 2 * TICK + 0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())


@RUNNERS
def test_nested_limits_each_answer_for_their_own(run: Runner) -> None:
    async def main() -> str:
        with within(5):
            with pytest.raises(TimeoutError), within(0.1):
                await asyncio.sleep(10)
            await asyncio.sleep(0.2)  # the outer limit is still live and far off
        return "done"

    assert run(main()) == "done"


@RUNNERS
def test_one_tasks_limit_does_not_touch_another(run: Runner) -> None:
    async def main() -> list[str]:
        async def short() -> str:
            try:
                with within(0.1):
                    await asyncio.sleep(10)
            except TimeoutError:
                return "timed out"
            return "finished"

        async def long() -> str:
            with within(5):
                await asyncio.sleep(0.4)
            return "finished"

        return list(await asyncio.gather(short(), long()))

    assert run(main()) == ["timed out", "finished"]


@RUNNERS
def test_the_sweep_stops_once_no_limit_is_live(run: Runner) -> None:
    async def main() -> tuple[bool, bool]:
        with within(5):
            await asyncio.sleep(0)
            armed_while_live = deadline._sweeps[asyncio.get_running_loop()].armed
        await asyncio.sleep(TICK * 2 + 0.05)
        return armed_while_live, deadline._sweeps[asyncio.get_running_loop()].armed

    assert run(main()) == (True, False)


def test_outside_a_loop_it_refuses() -> None:
    with pytest.raises(RuntimeError), within(1):
        pass


def test_a_loop_that_ends_with_a_limit_live_is_still_collected() -> None:
    """A thread's loop stopped with a request in flight: the live limit must not keep the loop (and, through the
    loop, its connections) for good."""

    async def stuck() -> None:
        with within(10):
            await asyncio.sleep(10)

    loop = asyncio.new_event_loop()
    task = loop.create_task(stuck())
    loop.run_until_complete(asyncio.sleep(0.01))
    assert loop in deadline._sweeps and deadline._sweeps[loop].live
    loop.close()
    ended = weakref.ref(loop)
    del loop, task
    gc.collect()
    assert ended() is None
