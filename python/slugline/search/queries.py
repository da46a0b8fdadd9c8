"""The three questions asked of an account's search index, each answerable two ways: by the account's whole index
(`run`), or by a scan over indexes of consecutive slices of its links (`scan`), for an account whose index does not
fit the worker's search memory (see `SearchCache.use`). Both ways give the same answer: scores depend on a link and
the query only, and the slices come in the order a page is read in (`newest_first`)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from slugline._core import SearchIndex

T_co = TypeVar("T_co", covariant=True)


class Query(Protocol[T_co]):
    @property
    def newest_first(self) -> bool:
        """The order the slices of a scan must come in: newest links first, or oldest first."""
        ...

    def run(self, index: SearchIndex) -> T_co:
        """The answer from the account's whole index."""
        ...

    def scan(self, slices: Iterable[SearchIndex]) -> T_co:
        """The answer from indexes of consecutive slices of the account's links, in `newest_first` order."""
        ...


Hit = tuple[str, float, dict[str, str]]


@dataclass(frozen=True, slots=True)
class Ranked:
    """`(total, hits)`: how many links match `q`, and the best `limit`, best first, ties by id (`GET /search`)."""

    q: str
    limit: int
    public_only: bool
    newest_first: bool = False

    def run(self, index: SearchIndex) -> tuple[int, list[Hit]]:
        return index.search(self.q, self.limit, self.public_only)

    def scan(self, slices: Iterable[SearchIndex]) -> tuple[int, list[Hit]]:
        total, best = 0, list[Hit]()
        for index in slices:
            count, hits = self.run(index)
            total += count
            # The best of each slice's best, in the index's order: a higher score, then the lower id.
            best = heapq.nsmallest(self.limit, [*best, *hits], key=lambda hit: (-hit[1], hit[0]))
        return total, best


@dataclass(frozen=True, slots=True)
class Page:
    """`(total, ids)`: how many links match `q`, and `limit` of their ids from `offset` in creation order, ties by id
    (`GET /links?q=` sorted by creation time)."""

    q: str
    public_only: bool
    newest_first: bool
    offset: int
    limit: int

    def run(self, index: SearchIndex) -> tuple[int, list[str]]:
        return self._page(index, self.offset, self.limit)

    def _page(self, index: SearchIndex, offset: int, limit: int) -> tuple[int, list[str]]:
        return index.filter_page(
            self.q, public_only=self.public_only, newest_first=self.newest_first, offset=offset, limit=limit
        )

    def scan(self, slices: Iterable[SearchIndex]) -> tuple[int, list[str]]:
        # The slices come in page order, so the page is the matches from `offset` of the slices one after another.
        total, ids = 0, list[str]()
        for index in slices:
            wanted = self.limit - len(ids)
            count, found = self._page(index, max(0, self.offset - total), wanted)
            total += count
            ids += found
        return total, ids


@dataclass(frozen=True, slots=True)
class Matching:
    """`(total, ids)`: every link matching `q` (`GET /links?q=` in another order, which the database sorts)."""

    q: str
    public_only: bool
    newest_first: bool = False

    def run(self, index: SearchIndex) -> tuple[int, list[str]]:
        ids = list(index.filter(self.q, self.public_only))
        return len(ids), ids

    def scan(self, slices: Iterable[SearchIndex]) -> tuple[int, list[str]]:
        ids: list[str] = []
        for index in slices:
            ids += index.filter(self.q, self.public_only)
        return len(ids), ids
