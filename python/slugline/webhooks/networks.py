"""The private networks deliveries may reach: none, unless the operator allows them (`webhooks_allow_private`)."""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network, ip_network

from slugline.runtime import Runtime

PRIVATE = tuple(
    ip_network(n)
    for n in ("127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "100.64.0.0/10")
)


def allowed_networks(rt: Runtime) -> list[IPv4Network | IPv6Network]:
    return list(PRIVATE) if rt.settings.webhooks_allow_private else []
