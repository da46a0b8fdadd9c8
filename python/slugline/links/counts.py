"""How many links an account has (all of them, or those a public-only key sees), remembered per version of the
account's links.

Every link write bumps `accounts.links_version` in its own transaction, so a count stored with the version it
was read at is exact for as long as the version read by a later request is the same, on any worker or host: a
stale count can never be served. At most `MAX_ENTRIES` counts are kept, the least recently used dropped first.
"""

from __future__ import annotations

from slugline.common.bounded import BoundedCache

MAX_ENTRIES = 10_000


class LinkCounts:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        # (account id, public only) -> (links version, count)
        self._counts: BoundedCache[tuple[int, bool], tuple[int, int]] = BoundedCache(max_entries=max_entries)

    def get(self, account_id: int, public_only: bool, version: int) -> int | None:
        """The count stored at exactly this version, or None."""
        found = self._counts.get((account_id, public_only), lambda held: held[0] == version)
        return None if found is None else found[1]

    def put(self, account_id: int, public_only: bool, version: int, count: int) -> None:
        """Keep the count read at `version`, unless a newer count is already here."""
        self._counts.put((account_id, public_only), (version, count), replaces=lambda held: held[0] <= version)

    def __len__(self) -> int:
        return len(self._counts)
