"""Client ID Metadata Documents: a client whose `client_id` is an https URL publishes its registration there, and
this server fetches it — through the fetcher's address and port checks (no private, loopback or metadata address,
only `SLUGLINE_FETCH_PORTS`; the connection goes to the address that was checked), with no redirects, a small byte
cap and a short, byte-budgeted cache, so a client_id can neither aim the server inward nor make it hold much memory.
Anyone may send any client_id, so each fetch counts against the caller's IP's budget of anonymous fetches, the one
`/analyze` draws from: a stream of new client_ids cannot turn the server into a DNS and HTTPS client for hire.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from urllib.parse import urlsplit

import httpcore
import orjson
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from slugline.common.bounded import BoundedCache
from slugline.common.bounds import MAX_CLIENT_METADATA
from slugline.fetch import fetcher
from slugline.limits import rules as limits
from slugline.oauth import metadata, redirects
from slugline.runtime import Runtime

MAX_DOCUMENT = MAX_CLIENT_METADATA  # bytes of one document (the draft expects a few hundred)
CACHE_BUDGET = 1 << 20  # bytes of documents cached per worker
CACHE_SECONDS = 300.0
TIMEOUT = 5.0


class DocumentError(ValueError):
    """The client_id URL or the document behind it is refused; the message is meant for a human."""


def is_document_url(client_id: str) -> bool:
    return client_id.startswith("https://")


# A cached document: when it expires (monotonic seconds), what it cost in bytes, and the client it registers.
Cached = tuple[float, int, OAuthClientInformationFull]


class DocumentCache:
    """URL → client, least recently used first, within a byte budget; an entry past its expiry is not answered."""

    def __init__(self, budget: int = CACHE_BUDGET) -> None:
        self.entries: BoundedCache[str, Cached] = BoundedCache(max_bytes=budget, size=lambda url, held: held[1])

    @property
    def used(self) -> int:
        return self.entries.bytes

    def get(self, url: str) -> OAuthClientInformationFull | None:
        found = self.entries.get(url, accept=lambda held: held[0] >= time.monotonic())
        return None if found is None else found[2]

    def put(self, url: str, size: int, client: OAuthClientInformationFull) -> None:
        self.entries.put(url, (time.monotonic() + CACHE_SECONDS, size + len(url), client))


CACHE = DocumentCache()


def _check_url(url: str) -> None:
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket ("https://[::1/x"): the client_id is the caller's to choose
        raise DocumentError("client_id is not a valid URL") from None
    if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/") or parts.fragment:
        raise DocumentError("client_id must be an https URL with a path and no fragment")
    if parts.username or parts.password or any(seg in (".", "..") for seg in parts.path.split("/")):
        raise DocumentError("client_id must not carry credentials or dot segments")


async def resolve(
    rt: Runtime, url: str, ip: str, ssl_context: ssl.SSLContext | None = None
) -> OAuthClientInformationFull:
    """The client registered by the document at `url` (cached), for a caller at `ip`; DocumentError when it cannot be
    used, RateLimited (before any lookup) when that IP has spent its anonymous fetches."""
    if (cached := CACHE.get(url)) is not None:
        return cached
    _check_url(url)
    await limits.check_anonymous_fetch(rt, ip, "too many client metadata documents fetched for this address")
    body = await download(rt, url, ssl_context)
    try:
        data = orjson.loads(body)
        client = OAuthClientInformationFull.model_validate({**data, "client_secret": None})
    except (orjson.JSONDecodeError, ValidationError, TypeError) as exc:
        raise DocumentError(f"the client metadata document is not valid: {str(exc)[:200]}") from None
    if data.get("client_id") != url:
        raise DocumentError("the client metadata document's client_id is not its own URL")
    if client.token_endpoint_auth_method not in (None, "none") or not client.redirect_uris:
        raise DocumentError("the client metadata document must list redirect_uris and use no client secret")
    if (problem := metadata.problem(client) or redirects.problem(client.redirect_uris)) is not None:
        raise DocumentError(f"the client metadata document is not valid: {problem}")
    client.token_endpoint_auth_method = "none"
    CACHE.put(url, len(body), client)
    return client


async def download(rt: Runtime, url: str, ssl_context: ssl.SSLContext | None = None) -> bytes:
    """GET `url` from a checked address and port, at most MAX_DOCUMENT bytes of JSON, no redirects."""
    try:
        target = fetcher.parse_url(url)
        async with asyncio.timeout(TIMEOUT):
            ports = rt.settings.fetch_port_set()
            addrs = await fetcher.checked_addresses(target, rt.fetch_networks(), ports)
            return await _get(target, addrs, ssl_context)
    except fetcher.UnsafeURLError as exc:
        raise DocumentError(f"client_id refused: {exc}") from None
    except (TimeoutError, OSError, httpcore.NetworkError, httpcore.TimeoutException, httpcore.ProtocolError) as exc:
        raise DocumentError(f"the client metadata document could not be fetched: {str(exc)[:200]}") from None


async def _get(target: fetcher.Target, addrs: list[fetcher.IPAddress], ssl_context: ssl.SSLContext | None) -> bytes:
    url = httpcore.URL(scheme=target.scheme, host=target.host, port=target.port, target=target.path)
    headers = [("Host", target.host_header), ("User-Agent", fetcher.USER_AGENT), ("Accept", "application/json")]
    pool = httpcore.AsyncConnectionPool(
        ssl_context=ssl_context, network_backend=fetcher.PinnedBackend(addrs), retries=0
    )
    async with pool, pool.stream("GET", url, headers=headers) as resp:
        if resp.status != 200:
            raise DocumentError(f"the client metadata document answered HTTP {resp.status}")
        body = bytearray()
        async for chunk in resp.aiter_stream():
            body += chunk
            if len(body) > MAX_DOCUMENT:
                raise DocumentError(f"the client metadata document is larger than {MAX_DOCUMENT // 1024} KiB")
        return bytes(body)
