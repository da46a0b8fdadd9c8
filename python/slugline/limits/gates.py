"""Per-key concurrency caps in this worker: at most `cap` holders of a key at once; a newcomer waits up to `wait`
seconds for a slot, then is refused with `Busy`. One small entry per key that has holders or waiters, so the table
stays as small as the work under way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


class Busy(Exception):
    """Every slot of the key stayed taken for the whole wait."""


@dataclass
class _Slot:
    semaphore: asyncio.Semaphore
    users: int = 0  # holders and waiters: the entry goes when the last one leaves


@dataclass
class Gates:
    _slots: dict[str, _Slot] = field(default_factory=dict)

    @asynccontextmanager
    async def hold(self, key: str, cap: int, wait: float) -> AsyncIterator[None]:
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(asyncio.Semaphore(cap))
        slot.users += 1
        try:
            if slot.semaphore.locked():
                try:
                    await asyncio.wait_for(slot.semaphore.acquire(), wait)
                except TimeoutError:
                    raise Busy(key) from None
            else:  # a free slot: taken at once (wait_for with no time to wait would refuse even this)
                await slot.semaphore.acquire()
            try:
                yield
            finally:
                slot.semaphore.release()
        finally:
            slot.users -= 1
            if slot.users == 0:
                del self._slots[key]

    def __len__(self) -> int:
        return len(self._slots)
