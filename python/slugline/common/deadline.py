"""Coarse time limits for the event loop's own short waits: `with within(seconds):` raises TimeoutError in the task
once the block has run `seconds`, give or take `TICK`, as `async with asyncio.timeout(seconds):` does to the
moment.

`asyncio.timeout` schedules a timer of its own per block, and under uvloop a timer is a libuv handle made, started,
stopped and closed (its closing finished on a later turn of the loop): a sizeable share of a PostgreSQL
primary-key read on the loop, for a block that only waits on a socket. The limits here are for waits whose
limit is seconds and only bounds a fault (a server that stopped answering): one sweep per loop, every `TICK` while
any limit is live, finds the blocks past theirs and cancels their tasks. Entering and leaving a block costs a clock
read and a set's add and remove.
"""

from __future__ import annotations

import asyncio
import weakref
from types import TracebackType

TICK = 0.1  # seconds between sweeps while any limit is live: a block runs at most this much past its limit


class _Sweep:
    """One event loop's live limits, and the timer that checks them (armed only while there are any)."""

    __slots__ = ("armed", "live")

    def __init__(self) -> None:
        self.live: set[within] = set()
        self.armed = False

    def add(self, limit: within, loop: asyncio.AbstractEventLoop) -> None:
        self.live.add(limit)
        if not self.armed:
            self.armed = True
            loop.call_later(TICK, self.sweep, loop)

    def sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for limit in [limit for limit in self.live if limit.due <= now]:
            self.live.discard(limit)
            limit.expire()
        if self.live:
            loop.call_later(TICK, self.sweep, loop)
        else:
            self.armed = False


# Keyed weakly: a finished loop's sweep goes with it (a pending sweep is the loop's own callback, not a reference
# to the loop from here).
_sweeps: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Sweep] = weakref.WeakKeyDictionary()


class within:
    """The block raises TimeoutError once it has run `seconds` (up to `TICK` later); a cancellation from elsewhere
    passes through as it came. For use in a task, around awaits."""

    __slots__ = ("_cancelling", "_expired", "_sweep", "_task", "due", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.due = 0.0
        self._expired = False

    def __enter__(self) -> within:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("within() is used inside a task")
        # Weakly: a limit still live when its loop ends (a thread's loop stopped with a request in flight) must not
        # keep the loop, through the task, from being collected with its connections.
        self._task = weakref.ref(task)
        self._cancelling = task.cancelling()
        self.due = loop.time() + self.seconds
        sweep = _sweeps.get(loop)
        if sweep is None:
            sweep = _sweeps[loop] = _Sweep()
        self._sweep = sweep
        sweep.add(self, loop)
        return self

    def expire(self) -> None:
        task = self._task()
        if task is not None:
            self._expired = True
            task.cancel()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._sweep.live.discard(self)
        task = self._task()  # the task running this block: alive
        # As asyncio.timeout: the cancellation is ours to turn into TimeoutError only if no other was asked for.
        if (
            self._expired
            and task is not None
            and task.uncancel() <= self._cancelling
            and kind is asyncio.CancelledError
        ):
            raise TimeoutError from exc
