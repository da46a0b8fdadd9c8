"""Where a link's redirect rules send this visitor, and the country a trusted proxy names for the click writer.

The rules are evaluated in the Rust core (`_core.RedirectRules.choose`) on the raw `User-Agent` and
`Accept-Language` bytes and, only for rules that ask for it, the visitor's country: a trusted proxy's country header
(`clicks.geo.header_names`, believed only on requests `web.proxies` marked as having come through one), else the
GeoIP database. A visitor no rule holds for goes to one of the link's variants if it has any
(`_core.Variants.choose`: a keyed hash of the address, user agent and link under the day's visitor salt, the key the
click writer's visitor hash takes, so one visitor keeps one variant all day on every worker; nothing is stored);
rules come first, so a rule can take a country or a device out of an experiment. The day's salt is read from the
database (`clicks.store.SaltBook`, shared with the click writer) once a day per worker; while that read fails a
random salt of this worker stands in, tried again after `SALT_RETRY` seconds. A link without rules or variants
never comes here."""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

from slugline.clicks.geo import GeoIp, country_code, header_names
from slugline.clicks.store import SaltBook
from slugline.redirects.linkcache import Entry
from slugline.settings import Settings
from slugline.storage.db import Database
from slugline.web.logs import PROXIED_KEY
from slugline.web.request import client_ip

SALT_RETRY = 5.0  # seconds between tries at reading the day's salt while the database does not answer
DAY = 86_400
log = logging.getLogger("slugline.redirect")


class Router:
    def __init__(self, settings: Settings, geo: GeoIp, salts: SaltBook, db: Database) -> None:
        self.geo = geo  # the click writer's: one copy of the database in memory
        self.country_headers = header_names(settings.country_header)  # in the order they are believed
        self._salts, self._db = salts, db
        self._day, self._salt = -1, b""  # the day whose salt is known, and the salt
        self._retry_at = 0.0
        self._stand_in: tuple[int, bytes] = (-1, b"")  # a salt of this worker's while the database's cannot be read

    def salt(self) -> bytes:
        """Today's visitor salt (UTC days since 1970, as the click writer counts them)."""
        now = time.time()
        day = int(now // DAY)
        if day == self._day:
            return self._salt
        if now >= self._retry_at:
            try:
                self._salt, self._day = self._salts.get(self._db, [day])[day], day
                return self._salt
            except Exception as exc:  # whatever the database raised: the redirect goes on with a stand-in
                log.warning("today's visitor salt cannot be read, variants drawn with a salt of this worker: %s", exc)
                self._retry_at = now + SALT_RETRY
        if self._stand_in[0] != day:
            self._stand_in = (day, secrets.token_bytes(32))
        return self._stand_in[1]

    def noted(self, scope: dict[str, Any]) -> str | None:
        """The country a trusted proxy's header names (call only for a request `web.proxies` marked), or None."""
        found: dict[bytes, bytes] = {}
        wanted = self.country_headers
        for name, value in scope["headers"]:
            if name in wanted:
                found[name] = value
        return next(filter(None, (country_code(found.get(name)) for name in wanted)), None) if found else None

    def pick(self, entry: Entry, scope: dict[str, Any], agent: bytes, language: bytes) -> tuple[str, bytes, int | None]:
        """The destination and `Location` for this visitor (`User-Agent` and `Accept-Language` as sent), and the
        variant chosen if any: the first rule that holds, else one of the link's variants, else its own."""
        routes = entry.rules
        assert routes is not None
        if routes.destinations:
            country = None
            if routes.needs_country:
                if PROXIED_KEY in scope:
                    country = self.noted(scope)
                if country is None:
                    country = self.geo.country(client_ip(scope))
            chosen = routes.compiled.choose(agent, language, country)
            if chosen is not None:
                return routes.destinations[chosen], routes.locations[chosen], None
        split = routes.split
        if split is None:
            return entry.destination, entry.location, None
        drawn = split.compiled.choose(self.salt(), entry.link_id, client_ip(scope), agent)
        return split.destinations[drawn], split.locations[drawn], drawn
