"""Fetch a page's preview metadata without letting a user aim the server at internal addresses.

Every hop is resolved once, every address checked, and the connection goes to a checked address
(httpcore with a pinned network backend), so DNS rebinding between check and connect cannot work.
"""

from __future__ import annotations

import asyncio
import codecs
import ipaddress
import re
import socket
import ssl
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple
from urllib.parse import quote, urljoin, urlsplit

import httpcore
from selectolax.lexbor import LexborHTMLParser

from slugline import __version__
from slugline.common.bounds import MAX_DESCRIPTION, MAX_TITLE, MAX_URL
from slugline.common.tally import Tally

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
USER_AGENT = f"Slugline/{__version__} (+link preview)"
MAX_BYTES = 1 << 20  # of a page read for its metadata
MAX_REDIRECTS = 5
FETCHES = Tally()  # calls by outcome, read by `slugline.metrics`
FETCH_OUTCOMES = ("ok", "error", "timeout", "unreachable", "refused")
TIMEOUT = 5.0  # seconds for the whole fetch, redirects included
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"
_REDIRECTS = (301, 302, 303, 307, 308)
WEB_PORTS = frozenset({80, 443})  # a page's metadata lives on a web port; others are databases, caches, admin APIs
# Not all of these are caught by `is_global` on every Python patch release, so name them outright.
_BLOCKED = tuple(ipaddress.ip_network(n) for n in ("0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "64:ff9b:1::/48"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


class UnsafeURLError(ValueError):
    """The URL is not an absolute public http(s) URL; the message is meant for a human."""


@dataclass(slots=True)
class PageMeta:
    url: str
    final_url: str | None = None
    status: int | None = None
    content_type: str | None = None
    title: str | None = None
    description: str | None = None
    image: str | None = None
    favicon: str | None = None
    site_name: str | None = None
    redirects: list[str] = field(default_factory=list)
    reachable: bool = False
    fetch_error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _is_public(addr: IPAddress) -> bool:
    if isinstance(addr, ipaddress.IPv6Address):
        embedded = addr.ipv4_mapped or addr.sixtofour
        if embedded is None and addr in _NAT64:
            embedded = ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
        if embedded is not None:
            return _is_public(embedded)
        if addr.teredo or addr.is_site_local:
            return False
    flags = (addr.is_private, addr.is_loopback, addr.is_link_local, addr.is_multicast, addr.is_reserved)
    return addr.is_global and not any(flags) and not addr.is_unspecified and not any(addr in n for n in _BLOCKED)


def check_address(addr: IPAddress, allow_networks: Sequence[IPNetwork] = ()) -> None:
    """Raise UnsafeURLError unless `addr` is public or inside one of `allow_networks`. The message never names the
    address: anonymous callers read it (/analyze, OAuth metadata documents), and what an internal name resolves to
    is a map of the network behind this server."""
    if any(addr in net for net in allow_networks) or _is_public(addr):
        return
    raise UnsafeURLError("url resolves to a private or reserved address, which is not allowed")


def _literal_ip(host: str) -> IPAddress | None:
    if host.isdigit():  # "2130706433" is 127.0.0.1 to inet_aton, so treat it as the address it is
        if int(host) >= 1 << 32:
            raise UnsafeURLError("url host is not a valid address")
        return ipaddress.IPv4Address(int(host))
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def _resolve(host: str, port: int) -> list[IPAddress]:
    """All addresses of `host`; tests replace this to simulate DNS answers."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))


@dataclass(frozen=True, slots=True)
class Target:
    """A checked http(s) URL, split as a request to it needs it (`parse_url`)."""

    url: str
    scheme: str
    host: str  # ASCII, no brackets
    port: int
    path: str  # request target: path and query, percent-encoded
    host_header: str


def parse_url(url: str) -> Target:
    """`url` as a `Target`; UnsafeURLError for what must not be fetched (credentials, odd schemes, bad hosts).
    Its addresses are checked apart (`checked_addresses`), then connected to through `PinnedBackend`."""
    if len(url) > MAX_URL:
        raise UnsafeURLError(f"url must be at most {MAX_URL} characters")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise UnsafeURLError("url must not contain whitespace or control characters")
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket: "http://[abc/"
        raise UnsafeURLError("url is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.netloc:
        raise UnsafeURLError("url must be an absolute http(s) URL")
    if "@" in parts.netloc:
        raise UnsafeURLError("url must not contain credentials")
    try:
        port = parts.port
        host = (parts.hostname or "").encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        raise UnsafeURLError("url has an invalid host or port") from None
    if not host:
        raise UnsafeURLError("url must have a host")
    if port == 0:
        raise UnsafeURLError("url has an invalid port")
    port = port or (443 if scheme == "https" else 80)
    safe = "/%:@!$&'()*+,;=-._~"
    path = quote(parts.path or "/", safe=safe) + (f"?{quote(parts.query, safe=safe + '?')}" if parts.query else "")
    host_header = f"[{host}]" if ":" in host else host
    host_header += "" if port == (443 if scheme == "https" else 80) else f":{port}"
    return Target(url, scheme, host, port, path, host_header)


async def checked_addresses(
    target: Target, allow_networks: Sequence[IPNetwork], ports: Collection[int]
) -> list[IPAddress]:
    """The addresses of `target`'s host, each checked (public, or in `allow_networks`) with its port (one of `ports`):
    UnsafeURLError for the first that is not. Connect to these and no others."""
    literal = _literal_ip(target.host)
    addrs = [literal] if literal is not None else await _resolve(target.host, target.port)
    if not addrs:
        raise socket.gaierror("no addresses")
    for addr in addrs:
        check_address(addr, allow_networks)
        # Networks allowed outright (loopback, for tests) are trusted on any port.
        if target.port not in ports and not any(addr in net for net in allow_networks):
            allowed = ", ".join(str(p) for p in sorted(ports))
            raise UnsafeURLError(f"url port {target.port} is not allowed (allowed ports: {allowed})")
    return addrs


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects to the addresses that were checked, whatever host name httpcore asks for."""

    def __init__(self, addrs: Sequence[IPAddress]) -> None:
        self._addrs = addrs
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        *args: Any,
        **kwargs: Any,
    ) -> httpcore.AsyncNetworkStream:
        error: Exception = httpcore.ConnectError("no address to connect to")
        for addr in self._addrs:
            try:
                return await self._inner.connect_tcp(str(addr), port, timeout, *args, **kwargs)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        raise error

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def _get(target: Target, addrs: Sequence[IPAddress], opts: _Options) -> tuple[int, dict[str, str], bytes]:
    """One GET; the body is read (up to max_bytes) only when it is HTML we will parse."""
    url = httpcore.URL(scheme=target.scheme, host=target.host, port=target.port, target=target.path)
    headers = [("Host", target.host_header), ("User-Agent", opts.user_agent), ("Accept", _ACCEPT)]
    headers.append(("Accept-Encoding", "identity"))  # a byte cap means nothing on a compressed body
    pool = httpcore.AsyncConnectionPool(ssl_context=opts.ssl_context, network_backend=PinnedBackend(addrs), retries=0)
    async with pool, pool.stream("GET", url, headers=headers) as resp:
        found = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in resp.headers}
        body = bytearray()
        if resp.status not in _REDIRECTS and _media_type(found) in _HTML_TYPES:
            async for chunk in resp.aiter_stream():
                body += chunk
                if len(body) >= opts.max_bytes:
                    break
        return resp.status, found, bytes(body[: opts.max_bytes])


def _media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";")[0].strip().lower()


def _text(value: str | None, limit: int) -> str | None:
    return " ".join(value.split())[:limit] or None if value else None


def _link(base: str, value: str | None) -> str | None:
    """`value` (page content) resolved against `base`; None unless it is a plausible http(s) URL."""
    if not value or not value.strip():
        return None
    try:
        url = urljoin(base, value.strip())
        scheme = urlsplit(url).scheme
    except ValueError:  # e.g. "http://[x/": whatever the page says, it is not a URL
        return None
    return url if scheme in ("http", "https") and len(url) <= MAX_URL else None


def _decode(body: bytes, content_type: str) -> str:
    found = re.search(r"charset\s*=\s*[\"']?([^;\s\"']+)", content_type, re.I)
    sniffed = _CHARSET.search(body[:4096])
    name = found.group(1) if found else sniffed.group(1).decode("ascii") if sniffed else "utf-8"
    try:
        # Only text encodings ("hex", "rot13", "zlib" are codecs too); some of those ("idna", "undefined",
        # "punycode") still refuse to decode arbitrary bytes with errors="replace": UnicodeError, a ValueError.
        if getattr(codecs.lookup(name), "_is_text_encoding", False):
            return body.decode(name, errors="replace")
    except (LookupError, ValueError):
        pass
    return body.decode("utf-8", errors="replace")


def _apply_html(meta: PageMeta, body: bytes, content_type: str, base: str) -> None:
    tree = LexborHTMLParser(_decode(body, content_type))
    tags: dict[str, str] = {}
    for node in tree.css("meta"):
        key = (node.attributes.get("property") or node.attributes.get("name") or "").strip().lower()
        content = node.attributes.get("content")
        if key and content:
            tags.setdefault(key, content)
    title = tree.css_first("title")
    icons = (n.attributes.get("href") for n in tree.css("link[rel][href]") if _has_icon_rel(n.attributes.get("rel")))
    meta.title = _text(
        tags.get("og:title") or tags.get("twitter:title") or (title.text() if title else None), MAX_TITLE
    )
    description = tags.get("og:description") or tags.get("description") or tags.get("twitter:description")
    meta.description = _text(description, MAX_DESCRIPTION)
    meta.image = _link(base, tags.get("og:image") or tags.get("og:image:url") or tags.get("twitter:image"))
    meta.favicon = _link(base, next(icons, None) or "/favicon.ico")
    meta.site_name = _text(tags.get("og:site_name"), MAX_TITLE)


def _has_icon_rel(rel: str | None) -> bool:
    return "icon" in (rel or "").lower().split()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, socket.gaierror):
        return "could not resolve host"
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    if cause is not None:
        return f"TLS error: {getattr(cause, 'verify_message', None) or cause.reason or cause}"[:200]
    label = "invalid HTTP response" if isinstance(exc, httpcore.ProtocolError) else "could not connect"
    return f"{label}: {exc}"[:200] if str(exc) else label


class _Options(NamedTuple):
    allow_networks: Sequence[IPNetwork]
    max_bytes: int
    max_redirects: int
    user_agent: str
    ssl_context: ssl.SSLContext | None
    ports: Collection[int]


async def _follow(meta: PageMeta, target: Target, opts: _Options) -> None:
    addrs = await checked_addresses(target, opts.allow_networks, opts.ports)
    for hop in range(opts.max_redirects + 1):
        status, headers, body = await _get(target, addrs, opts)
        meta.final_url, meta.status, meta.content_type = target.url, status, headers.get("content-type")
        location = headers.get("location")
        if status not in _REDIRECTS or not location:
            meta.reachable = True
            if _media_type(headers) in _HTML_TYPES:
                _apply_html(meta, body, headers.get("content-type", ""), target.url)
            return
        if hop == opts.max_redirects:
            meta.fetch_error = f"too many redirects (more than {opts.max_redirects})"
            return
        try:
            next_url = urljoin(target.url, location)
        except ValueError:
            meta.fetch_error = "invalid redirect location"
            return
        try:
            target = parse_url(next_url)
            addrs = await checked_addresses(target, opts.allow_networks, opts.ports)
        except UnsafeURLError as exc:
            raise UnsafeURLError(f"url redirects to a refused location: {exc}") from None
        meta.redirects.append(target.url)


async def fetch_metadata(
    url: str,
    *,
    allow_networks: Sequence[IPNetwork] = (),
    timeout: float = TIMEOUT,  # noqa: ASYNC109 - the whole fetch's budget, applied with asyncio.timeout
    max_bytes: int = MAX_BYTES,
    max_redirects: int = MAX_REDIRECTS,
    user_agent: str = USER_AGENT,
    ssl_context: ssl.SSLContext | None = None,
    ports: Collection[int] = WEB_PORTS,
) -> PageMeta:
    """Preview metadata of `url`. Raises UnsafeURLError for refused URLs; network trouble is in the result. Each
    call is counted in `FETCHES` by outcome: `ok`, `error` (an answer, but too many redirects or a bad location),
    `timeout`, `unreachable` or `refused`."""
    try:
        target = parse_url(url)
    except UnsafeURLError:
        FETCHES.add("refused")
        raise
    meta = PageMeta(url=url)
    try:
        async with asyncio.timeout(timeout):
            opts = _Options(allow_networks, max_bytes, max_redirects, user_agent, ssl_context, ports)
            await _follow(meta, target, opts)
    except TimeoutError:
        meta.reachable, meta.fetch_error = False, f"timed out after {timeout:g} s"
        FETCHES.add("timeout")
        return meta
    except (OSError, httpcore.NetworkError, httpcore.TimeoutException, httpcore.ProtocolError) as exc:
        meta.reachable, meta.fetch_error = False, _describe(exc)
        FETCHES.add("unreachable")
        return meta
    except UnsafeURLError:
        FETCHES.add("refused")
        raise
    FETCHES.add("ok" if meta.fetch_error is None else "error")
    return meta
