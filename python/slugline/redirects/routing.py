"""Where a link's redirect rules send this visitor, and the country a trusted proxy names for the click writer.

The rules are evaluated in the Rust core (`_core.RedirectRules.choose`) on the raw `User-Agent` and
`Accept-Language` bytes and, only for rules that ask for it, the visitor's country: a trusted proxy's country header
(`clicks.geo.header_names`, believed only on requests `web.proxies` marked as having come through one), else the
GeoIP database. A link without rules never comes here."""

from __future__ import annotations

from typing import Any

from slugline.clicks.geo import GeoIp, country_code, header_names
from slugline.redirects.linkcache import Entry
from slugline.settings import Settings
from slugline.web.logs import PROXIED_KEY
from slugline.web.request import client_ip


class Router:
    def __init__(self, settings: Settings, geo: GeoIp) -> None:
        self.geo = geo  # the click writer's: one copy of the database in memory
        self.country_headers = header_names(settings.country_header)  # in the order they are believed

    def noted(self, scope: dict[str, Any]) -> str | None:
        """The country a trusted proxy's header names (call only for a request `web.proxies` marked), or None."""
        found: dict[bytes, bytes] = {}
        wanted = self.country_headers
        for name, value in scope["headers"]:
            if name in wanted:
                found[name] = value
        return next(filter(None, (country_code(found.get(name)) for name in wanted)), None) if found else None

    def pick(self, entry: Entry, scope: dict[str, Any], agent: bytes, language: bytes) -> tuple[str, bytes]:
        """The destination and `Location` for this visitor (`User-Agent` and `Accept-Language` as sent): the first
        rule that holds, else the link's own."""
        routes = entry.rules
        assert routes is not None
        country = None
        if routes.needs_country:
            if PROXIED_KEY in scope:
                country = self.noted(scope)
            if country is None:
                country = self.geo.country(client_ip(scope))
        chosen = routes.compiled.choose(agent, language, country)
        if chosen is None:
            return entry.destination, entry.location
        return routes.destinations[chosen], routes.locations[chosen]
