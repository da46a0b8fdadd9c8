"""A day's unique visitors for one view of an account, remembered with the two facts that keep it exact.

Unique visitors are the distinct visitor hashes of a period's clicks, bots left out. Counting them means reading
every click row of the period: `/analytics` over an account's million clicks took seconds. The hash's salt is the
day's, so one person is a different hash each day, and a period's count is the sum of its days' counts. A view is the
account's links as a full or a public-only key sees them, or one link, with every source or one.

A day's count is kept with what was read before it was counted:
- the account's `links_version`. Every link write bumps it in its own transaction: a deleted link takes its clicks
  with it, and a visibility change moves a link's clicks in or out of a public-only view.
- the view's non-bot click total of that day in `click_daily`. The click writer adds to it in the transaction that
  adds the click rows. Without a link write, a day's click rows only grow, and its total with them.

A later request uses the count only when it reads the same version and the same total, on any worker or host. A
click or link write committed while the count was being made leaves the entry looking stale, never fresh: the
version and total it is stored with are older than the rows it counted. Any link write counts, even one that cannot
change a visitor count (a new link, a title): an account whose links change between two views has its whole period
counted again, as every view was before. The counts take at most `MAX_BYTES`, each counted with its key's strings (a
source is what a click's `utm_source` or referrer said: up to 255 characters, ~1 KB outside the BMP), and at most
`MAX_ENTRIES` of them are kept; the least recently used go first.
"""

from __future__ import annotations

import sys
from datetime import date, datetime

from slugline.common.bounded import BoundedCache

MAX_ENTRIES = 20_000  # a 365-day view takes at most 365
MAX_BYTES = 8 << 20
# What an entry costs besides its strings: its place in the table, the key and value tuples, the datetime, the date
# and the ints (tracemalloc: ~440 bytes; `tests/api/v1/test_unique_visitors.py` checks it covers them).
ENTRY_BYTES = 512

# (account id, account created at, public-only view, link id or None, source or None, day): an id alone may name
# another account later (SQLite reuses the id of the newest row deleted), whose links version starts over.
Key = tuple[int, datetime, bool, str | None, str | None, date]
Count = tuple[int, int, int]  # (links version, the day's clicks, visitors)


class VisitorCounts:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._counts: BoundedCache[Key, Count] = BoundedCache(max_entries=max_entries, max_bytes=max_bytes, size=_cost)

    def get(self, key: Key, version: int, clicks: int) -> int | None:
        """The count stored under exactly this links version and this click total of the day, or None."""
        found = self._counts.get(key, lambda held: held[0] == version and held[1] == clicks)
        return None if found is None else found[2]

    def put(self, key: Key, version: int, clicks: int, visitors: int) -> None:
        """Keep a count made after `version` and the day's `clicks` were read."""
        self._counts.put(key, (version, clicks, visitors))

    @property
    def bytes(self) -> int:
        """What the counts kept are counted at."""
        return self._counts.bytes

    def __len__(self) -> int:
        return len(self._counts)


def _cost(key: Key, _count: Count) -> int:
    link_id, source = key[3], key[4]
    return (
        ENTRY_BYTES
        + (0 if link_id is None else sys.getsizeof(link_id))
        + (0 if source is None else sys.getsizeof(source))
    )
