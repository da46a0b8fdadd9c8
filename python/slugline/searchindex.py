"""The per-account search indexes behind `q` and `/search`: held in the Rust core, one per account and worker,
kept fresh across workers by `accounts.links_version`."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from slugline._core import SearchIndex
from slugline.models import Account, Link
from slugline.visibility import PUBLIC_LEVELS

T = TypeVar("T")


INDEXED = (
    Link.id,
    Link.slug,
    Link.destination_url,
    Link.title,
    Link.description,
    Link.note,
    Link.hashtags,
    Link.visibility,
)


def index_link(index: SearchIndex, link: Any) -> None:
    """Add or refresh one link; `link` is a Link or a row of the INDEXED columns."""
    index.upsert(
        id=link.id,
        slug=link.slug,
        destination_url=link.destination_url,
        title=link.title,
        description=link.description,
        note=link.note,
        hashtags=list(link.hashtags or ()),
        public=link.visibility in PUBLIC_LEVELS,
    )


class _Entry:
    __slots__ = ("index", "lock", "version")

    def __init__(self, version: int, index: SearchIndex) -> None:
        self.version = version
        self.index = index
        self.lock = threading.Lock()  # a SearchIndex must not be read and written at once


class SearchCache:
    """Account id -> (links_version, SearchIndex); an index is rebuilt when another worker changed the links."""

    def __init__(self, max_accounts: int = 1024) -> None:
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_accounts

    def use(self, session: Session, account_id: int, work: Callable[[SearchIndex], T]) -> T:
        """Run `work` on the account's current index (loading it if missing or stale)."""
        version = session.scalar(select(Account.links_version).where(Account.id == account_id)) or 0
        entry = self._current(account_id, version)
        if entry is None:
            entry = self._load(session, account_id, version)
        with entry.lock:
            return work(entry.index)

    def changed(self, account_id: int, new_version: int, link: Link | None, removed_id: str | None = None) -> None:
        """Apply this worker's own change in place when the index was exactly one version behind."""
        with self._lock:
            entry = self._entries.get(account_id)
        if entry is None:
            return
        with entry.lock:
            if entry.version != new_version - 1:
                with self._lock:
                    self._entries.pop(account_id, None)
                return
            if link is not None:
                index_link(entry.index, link)
            if removed_id is not None:
                entry.index.remove(removed_id)
            entry.version = new_version

    def _current(self, account_id: int, version: int) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(account_id)
            if entry is not None and entry.version == version:
                self._entries.move_to_end(account_id)
                return entry
        return None

    def _load(self, session: Session, account_id: int, version: int) -> _Entry:
        index = SearchIndex()
        for link in session.execute(select(*INDEXED).where(Link.account_id == account_id)):
            index_link(index, link)
        entry = _Entry(version, index)
        with self._lock:
            self._entries[account_id] = entry
            self._entries.move_to_end(account_id)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return entry
