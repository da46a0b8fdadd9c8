"""Behind trusted reverse proxies: the client's address and scheme from X-Forwarded-For and X-Forwarded-Proto.

Each proxy appends the address it got the request from to X-Forwarded-For, so only the entries on the right, added by
proxies we trust, can be believed; anything further left is whatever the client chose to send. The client is
therefore the right-most entry that is not itself a trusted proxy. `SLUGLINE_TRUSTED_PROXIES` lists the proxies (IPs,
CIDRs, or names such as a test client's); `*` trusts whichever peer connects, as one proxy hop: the right-most entry
is the client, which is only safe when nothing but the proxy can reach the server (a warning says so at start-up).
A request that came through a trusted proxy may also bring its own request id (`X-Request-ID`, see `web.logs`).
"""

from __future__ import annotations

import logging
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from typing import Any

from slugline.web.logs import PROXIED_KEY

log = logging.getLogger("slugline")
SCHEMES = frozenset({"http", "https"})
ANY_WARNING = (
    "SLUGLINE_TRUSTED_PROXIES='*' believes X-Forwarded-For from any peer: a client that reaches this server directly "
    "chooses its own address (rate limits, visitor counts). List the proxies' addresses instead."
)


def _address(entry: str) -> IPv4Address | IPv6Address | None:
    """An X-Forwarded-For entry as an address: brackets and a port (`[::1]:80`, `1.2.3.4:80`) are dropped."""
    host = entry.strip()
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    try:
        return ip_address(host)
    except ValueError:
        return None


class TrustedProxies:
    def __init__(self, spec: str) -> None:
        self.any_peer = False
        self.networks: list[IPv4Network | IPv6Network] = []
        self.names: set[str] = set()
        for item in (part.strip() for part in spec.split(",")):
            if item == "*":
                self.any_peer = True
            elif item:
                try:
                    self.networks.append(ip_network(item, strict=False))
                except ValueError:
                    self.names.add(item)

    def listed(self, host: str) -> bool:
        if host.strip() in self.names:
            return True
        addr = _address(host)
        return addr is not None and any(addr in net for net in self.networks)

    def client(self, peer: str, forwarded: list[str]) -> str:
        """The client's address: the right-most forwarded entry that is not a listed proxy (the peer is trusted)."""
        for hop in reversed(forwarded):
            if not self.listed(hop):
                addr = _address(hop)
                return str(addr) if addr is not None else hop.strip()
        return forwarded[0].strip() if forwarded else peer  # every hop a trusted proxy: the farthest is all we know


def _values(scope: dict[str, Any], name: bytes) -> list[str]:
    """Every comma-separated value of every header of that name, in order."""
    joined = ",".join(v.decode("latin-1") for k, v in scope.get("headers", ()) if k == name)
    return [part for part in (p.strip() for p in joined.split(",")) if part]


def behind_proxies(app: Any, spec: str) -> Any:
    proxies = TrustedProxies(spec)
    if proxies.any_peer:
        log.warning(ANY_WARNING)

    async def forwarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        peer = scope.get("client")
        if scope["type"] in ("http", "websocket") and peer and (proxies.any_peer or proxies.listed(str(peer[0]))):
            scope = dict(scope)
            scope[PROXIED_KEY] = True  # its X-Request-ID is believed too (`web.logs`)
            hops = _values(scope, b"x-forwarded-for")
            if hops:
                scope["client"] = (proxies.client(str(peer[0]), hops), 0)
            schemes = _values(scope, b"x-forwarded-proto")
            if schemes and schemes[-1].lower() in SCHEMES:
                scheme = schemes[-1].lower()
                scope["scheme"] = scheme if scope["type"] == "http" else scheme.replace("http", "ws")
        await app(scope, receive, send)

    return forwarded
