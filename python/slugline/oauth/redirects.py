"""What an OAuth redirect URI may be, wherever one is accepted (Dynamic Client Registration, a Client ID Metadata
Document, a registration stored before this rule): the authorization code is sent there, and the consent page's CSP
names it. The rule is OAuth 2.1's (§2.3.1, §7.5) and RFC 8252's for native apps:

- `https` to a host name or an address;
- `http` only to the loopback interface, `127.0.0.1`, `[::1]` or `localhost` (a native app's own listener, RFC 8252
  §7.3): plain http anywhere else hands the code to whoever is on the path;
- a private-use scheme in reverse-domain form, which has a dot (`com.example.app:/callback`, RFC 8252 §7.1). So no
  scheme a browser handles itself (`javascript:`, `data:`, `vbscript:`, `file:`, `about:`, `blob:`...), none of which
  has a dot, and no bare `myapp:` that any app may claim;

never a fragment (RFC 6749 §3.1.2: the code's query would be read by script on the page) nor credentials.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "::1", "localhost")
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*\Z")  # RFC 3986 §3.1, as urlsplit gives it (lowercased)
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\Z")  # a DNS name or an IPv4 address, ASCII (IDNs come as punycode)
_WEB = ("https", "http")


class InvalidRedirect(ValueError):
    """The redirect URI is refused; the message says why, for a human."""


class Target(NamedTuple):
    """A redirect URI that passed the rule: its scheme, and its host and port for http(s) (None for an app's)."""

    scheme: str
    host: str | None
    port: int | None


def parse(uri: str) -> Target:
    """`uri` as a redirect URI this server accepts; InvalidRedirect with the reason otherwise."""
    if "#" in uri:
        raise InvalidRedirect("must not have a fragment")
    if any(c.isspace() or not c.isprintable() for c in uri):  # urlsplit would drop a line break, not refuse it
        raise InvalidRedirect("must not contain whitespace or control characters")
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:  # an unclosed IPv6 bracket, a port that is not a number
        raise InvalidRedirect("is not a valid URI") from None
    if parts.username is not None or parts.password is not None:
        raise InvalidRedirect("must not carry credentials")
    if parts.scheme in _WEB:
        host = parts.hostname or ""
        if not _is_host(host):
            raise InvalidRedirect(f"an {parts.scheme} URI needs a valid host name or address")
        if parts.scheme == "http" and host not in LOOPBACK:
            raise InvalidRedirect("http is allowed only to 127.0.0.1, [::1] or localhost: use https")
        return Target(parts.scheme, host, port)
    if not _SCHEME.match(parts.scheme) or "." not in parts.scheme:
        raise InvalidRedirect(
            "must be https, http to 127.0.0.1, [::1] or localhost, or an app's own scheme in reverse-domain form "
            "such as com.example.app:/callback"
        )
    return Target(parts.scheme, None, None)


def problem(uris: Iterable[object]) -> str | None:
    """Why one of `uris` (a client's redirect_uris) is refused, naming the field; None when all are accepted."""
    for uri in uris:
        try:
            parse(str(uri))
        except InvalidRedirect as exc:
            return f"redirect_uris: {exc}"
    return None


def accepted(uris: Iterable[object]) -> list[str]:
    """Those of `uris` the rule accepts: a registration stored before it keeps only these."""
    return [str(uri) for uri in uris if problem([uri]) is None]


def csp_source(uri: str) -> str | None:
    """The CSP source expression that lets a form's redirect go to `uri`: `scheme://host[:port]` for http(s),
    `scheme:` for an app's own scheme, built from the checked parts only. None for a URI the rule refuses, and for
    an IPv6 literal, which CSP's grammar cannot name (browsers would drop it anyway)."""
    try:
        target = parse(uri)
    except InvalidRedirect:
        return None
    if target.host is None:
        return f"{target.scheme}:"
    if ":" in target.host:
        return None
    return f"{target.scheme}://{target.host}" + ("" if target.port is None else f":{target.port}")


def _is_host(host: str) -> bool:
    if ":" in host:  # urlsplit took it from brackets: it must be an IPv6 address, without a zone
        try:
            return isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address)
        except ValueError:
            return False
    return len(host) <= 253 and _NAME.match(host) is not None
