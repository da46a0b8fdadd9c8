"""The redirect hot path: a raw ASGI layer in front of the app that answers `/{slug}` itself.

`GET`/`HEAD /{slug}` (and `POST /{slug}` for a password) never reach FastAPI routing or the ORM: the slug
resolves from `LinkCache`, the click goes to the Rust click queue in one call, and a 302 goes out. A `GET` or `HEAD`
of a public or unlisted link already in the cache takes the shortest path (`fast`): the cache only ever holds slugs that
passed the path checks, so a hit needs none of them. Everything
else — `/api/...`, `/mcp`, reserved words, paths with a second segment, lifespan — passes through untouched.
A `HEAD` is answered like a `GET` but records no click: nobody is taken to the destination. Every other method, here
or in the app behind, may be answered before its body is read: `web.keepalive` keeps the connection usable then.

Every HTTP request but those of the shortest path goes through `web.logs.RequestLog` (its id in `X-Request-ID`, the
request as the context of its log lines, the access log). The shortest path only puts an id in its 302: a random
one costs ~0.1 µs, where wrapping `send` would cost several times that; with the access log on it is not taken, so
that every redirect gets its line.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from slugline import _core
from slugline.clicks.buffer import ClickRecorder
from slugline.common.errors import RequestTimeout
from slugline.common.tally import CacheStats
from slugline.common.visibility import Visibility
from slugline.links.lifecycle import take_click
from slugline.redirects.accept import prefers_json
from slugline.redirects.ends import GONE_HTML, GONE_JSON, GUARDED, Life, is_crawler
from slugline.redirects.linkcache import Entry, LinkCache, Missing
from slugline.redirects.routing import Router
from slugline.redirects.unlock import Unlocker, form_page
from slugline.redirects.urls import ascii_url, merge_query
from slugline.runtime import Runtime
from slugline.storage.db import unavailable
from slugline.web import keepalive
from slugline.web.logs import PROXIED_KEY, REQUEST_ID_HEADER, ROUTE_KEY, RequestLog, request_id
from slugline.web.request import client_ip
from slugline.web.unavailable import send_unavailable

SLUG_PATH = re.compile(r"/([A-Za-z0-9_-]{1,64})")
ANSWERED = frozenset({"GET", "HEAD", "POST"})
FAST = frozenset({"GET", "HEAD"})  # methods a cached public or unlisted link answers on the shortest path
REDIRECTED = frozenset({Visibility.PUBLIC, Visibility.UNLISTED})  # straight to the destination
NO_STORE = [(b"cache-control", b"private, no-store"), (b"x-robots-tag", b"noindex")]
REDIRECT_HEADERS = [*NO_STORE, (b"content-length", b"0")]
PAGE_HEADERS = [
    *NO_STORE,
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
    ),
]
CARD_HEADERS = [*NO_STORE, (b"content-security-policy", b"default-src 'none'; img-src *; frame-ancestors 'none'")]
HTML = b"text/html; charset=utf-8"
NOT_FOUND_HTML = (
    b'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Link not found</title></head>'
    b"<body><main><h1>Link not found</h1><p>This short link does not exist or is no longer available."
    b"</p></main></body></html>\n"
)
NOT_FOUND_JSON = b'{"error":"link not found"}'
INTERNAL_ERROR_JSON = b'{"error":"internal server error"}'
EMPTY_BODY = {"type": "http.response.body", "body": b""}

log = logging.getLogger("slugline.redirect")

Scope = dict[str, Any]
Header = tuple[bytes, bytes]


class RedirectLayer:
    """Wraps the ASGI app whose lifespan puts `runtime` and `clicks` on `app.state`."""

    def __init__(self, app: Any, requests: RequestLog | None = None) -> None:
        self.app = app
        self.requests = requests or RequestLog()
        self._redirects: Redirects | None = None
        self._shortest: Redirects | None = None  # `_redirects` once started, unless every request is to be logged
        self.errors = 0  # answers of 500 or 503

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        redirects = self._shortest
        if redirects is not None and scope["type"] == "http" and scope["method"] in FAST:
            try:
                entry = redirects.cache.peek(scope["path"][1:])
            except Exception:  # the ordinary path below asks again, and reports what went wrong
                entry = None
            if type(entry) is Entry and entry.visibility in REDIRECTED:
                await redirects.fast(entry, scope, send)
                return
        if scope["type"] == "http":
            await self.requests(self._http, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _http(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["method"] not in FAST:  # a body the answer may come before (`web.keepalive`)
            receive, send = keepalive.guard(scope, receive, send)
        if scope["method"] in ANSWERED:
            found = SLUG_PATH.fullmatch(scope["path"])
            if found is not None and found[1].lower() not in _core.RESERVED_SLUGS:
                scope[ROUTE_KEY] = "/{slug}"
                await self._answer(found[1], scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _answer(self, slug: str, scope: Scope, receive: Any, send: Any) -> None:
        """Serve the slug; anything unexpected is logged and answered 500 (FastAPI's handlers are not in play)."""
        started = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            redirects = self._redirects or self._start()
            await redirects.serve(slug, scope, receive, tracked)
        except Exception as exc:
            self.errors += 1
            if started:  # once a response has begun there is nothing more to send
                log.exception("answering /%s failed", slug)
            elif unavailable(exc):  # a link not in the cache while the database is away: the visitor may retry
                log.warning("answering /%s: database unavailable (%s)", slug, type(exc).__name__)
                await send_unavailable(send)
            else:
                log.exception("answering /%s failed", slug)
                await respond(scope, send, 500, INTERNAL_ERROR_JSON, b"application/json", NO_STORE)

    def outcomes(self) -> dict[str, int]:
        """Redirect requests answered by this worker so far, by outcome (`slugline.metrics`)."""
        redirects = self._redirects
        counts = {} if redirects is None else dict(redirects.outcomes)
        counts["hit"] = counts.get("hit", 0) + (0 if redirects is None else redirects.fast_hits)
        counts["error"] = self.errors
        return counts

    def cache_stats(self) -> CacheStats | None:
        """The link cache's figures, once the first redirect has made it: a lookup of a redirect request answered
        from it is a hit, one that read the database a miss."""
        redirects = self._redirects
        if redirects is None:
            return None
        cache = redirects.cache
        hits = redirects.fast_hits + redirects.cache_hits
        return CacheStats(hits, redirects.cache_misses, cache.evictions, cache.bytes, len(cache))

    def _start(self) -> Redirects:
        state = self.app.state
        self._redirects = Redirects(state.runtime, state.clicks)
        if not self.requests.access:
            self._shortest = self._redirects
        return self._redirects


class Redirects:
    def __init__(self, rt: Runtime, clicks: ClickRecorder) -> None:
        self.cache = LinkCache(rt.db, max_bytes=rt.settings.link_cache_bytes)
        rt.link_hooks.append(self.cache.invalidate)
        self.clicks = clicks
        self.record = clicks.queue.record  # one call into Rust per click
        self.unlocker = Unlocker(rt)
        self.router = Router(rt.settings, clicks.geo, clicks.salts, rt.db)
        self.db = rt.db
        elsewhere = rt.settings.not_found_url
        self.not_found_location = None if elsewhere is None else ascii_url(elsewhere).encode("ascii")
        # Counted in plain ints, which `slugline.metrics` reads once a second: no shared-memory write per redirect.
        self.fast_hits = 0  # redirects of the shortest path
        self.cache_hits = self.cache_misses = 0  # lookups of the other redirect requests
        self.outcomes: dict[str, int] = {}  # the other redirect requests, by outcome

    def tally(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    async def serve(self, slug: str, scope: Scope, receive: Any, send: Any) -> None:
        entry = self.cache.peek(slug)
        cached = not isinstance(entry, Missing)
        if isinstance(entry, Missing):
            self.cache_misses += 1
            entry = await self.cache.load(slug)
        else:
            self.cache_hits += 1
        if entry is None or entry.visibility == Visibility.PRIVATE:
            self.tally("not_found")
            await not_found(scope, send, self.not_found_location)
        elif entry.life is not None and await self.ended_or_card(entry, scope, send):
            return
        elif entry.visibility == Visibility.PASSWORD:
            await self.protected(slug, entry, scope, receive, send)
        elif scope["method"] == "POST":
            self.tally("method_not_allowed")
            await respond(
                scope, send, 405, b'{"error":"method not allowed"}', b"application/json", [(b"allow", b"GET, HEAD")]
            )
        else:
            await self.redirect(entry, scope, send, outcome="hit" if cached else "miss")

    async def fast(self, entry: Entry, scope: Scope, send: Any) -> None:
        """`redirect` for a cached public or unlisted link and a `GET` or `HEAD`: the hot path, kept to the bare
        minimum."""
        self.fast_hits += 1
        rid = (REQUEST_ID_HEADER, request_id(scope))
        try:
            location = self.count(entry, scope)
        except Exception:
            log.exception("answering %s failed (request %s)", scope["path"], rid[1].decode())
            await respond(scope, send, 500, INTERNAL_ERROR_JSON, b"application/json", [*NO_STORE, rid])
            return
        await send(
            {"type": "http.response.start", "status": 302, "headers": [(b"location", location), rid, *REDIRECT_HEADERS]}
        )
        await send(EMPTY_BODY)

    async def redirect(
        self, entry: Entry, scope: Scope, send: Any, extra: tuple[Header, ...] = (), *, outcome: str
    ) -> None:
        """A 302, counted under `outcome`; or, for a link whose click limit is reached, its end (counted `gone`)."""
        life = entry.life
        if life is not None and life.max_clicks is not None and not await self.let_through(entry, life, scope):
            self.tally("gone")
            self.count(entry, scope)  # the refused visit is recorded all the same
            await ended(life, scope, send)
            return
        self.tally(outcome)
        location = self.count(entry, scope)
        await send(
            {
                "type": "http.response.start",
                "status": 302,
                "headers": [(b"location", location), *REDIRECT_HEADERS, *extra],
            }
        )
        await send(EMPTY_BODY)

    async def ended_or_card(self, entry: Entry, scope: Scope, send: Any) -> bool:
        """Answers an expired link (and records the visit), or a link-preview crawler asking for a link with a
        card; False: neither, the link is served as usual."""
        life = entry.life
        assert life is not None
        if life.expires is not None and time.time() >= life.expires:
            self.tally("gone")
            self.count(entry, scope)
            await ended(life, scope, send)
            return True
        if (
            life.card is not None
            and entry.visibility == GUARDED  # a private or password link shows nothing
            and scope["method"] != "POST"
            and is_crawler(header(scope, b"user-agent"))
        ):
            self.tally("card")
            self.count(entry, scope)
            await respond(scope, send, 200, life.card, HTML, CARD_HEADERS)
            return True
        return False

    async def let_through(self, entry: Entry, life: Life, scope: Scope) -> bool:
        """Whether this visitor may go through a link with a click limit. A person takes one of its places, counted
        in the database (exact across workers and hosts); a bot or a `HEAD` takes none. Once the entry was read used
        up, nobody goes through and nothing is asked of the database: places are never given back, and a raised
        limit drops this worker's entry at once and the others' within their TTL."""
        if life.used_up:
            return False
        agent = header(scope, b"user-agent").decode("latin-1")
        if scope["method"] == "HEAD" or _core.classify_user_agent(agent)[0] == "bot":
            return True
        return await take_click(self.db, entry.link_id)

    def count(self, entry: Entry, scope: Scope) -> bytes:
        """The `Location` for this request; a click recorded unless it is a `HEAD`. Called before the response goes
        out, so a 302 a client received is never missing from the counts. A link with rules or variants: `routed`."""
        if entry.rules is not None:
            return self.routed(entry, scope)
        query = scope["query_string"]
        if query:
            location, utm, via_qr = merge_query(entry.destination, query)
        else:
            location, utm, via_qr = entry.location, None, False
        if scope["method"] != "HEAD":
            agent = referrer = b""
            for name, value in scope["headers"]:
                if name == b"user-agent":
                    agent = value
                elif name == b"referer":
                    referrer = value
            if PROXIED_KEY in scope:  # a trusted proxy may have named the country: the click writer believes it
                country = self.router.noted(scope)
                outcome = self.record(entry.link_id, agent, referrer, utm, via_qr, client_ip(scope), None, country)
            else:
                outcome = self.record(entry.link_id, agent, referrer, utm, via_qr, client_ip(scope))
            if outcome:  # a full batch waits, or the buffer is full
                self.clicks.notice(outcome)
        return location

    def routed(self, entry: Entry, scope: Scope) -> bytes:
        """`count` for a link with rules or variants: one walk of the headers gives them and the click what they read;
        the click records the variant the visitor was sent to."""
        assert entry.rules is not None
        agent = referrer = language = b""
        for name, value in scope["headers"]:
            if name == b"user-agent":
                agent = value
            elif name == b"referer":
                referrer = value
            elif name == b"accept-language":
                language = value
        destination, location, variant = self.router.pick(entry, scope, agent, language)
        utm, via_qr = None, False
        if scope["query_string"]:
            location, utm, via_qr = merge_query(destination, scope["query_string"])
        if scope["method"] != "HEAD":
            country = self.router.noted(scope) if PROXIED_KEY in scope else None
            ip = client_ip(scope)
            outcome = self.record(entry.link_id, agent, referrer, utm, via_qr, ip, None, country, variant)
            if outcome:
                self.clicks.notice(outcome)
        return location

    async def protected(self, slug: str, entry: Entry, scope: Scope, receive: Any, send: Any) -> None:
        query = scope["query_string"]
        if scope["method"] != "POST":
            if self.unlocker.is_unlocked(entry, header(scope, b"cookie", b"; ")):
                await self.redirect(entry, scope, send, outcome="unlocked")
            else:
                self.tally("password_form")
                await respond(scope, send, 200, form_page(slug, query), HTML, PAGE_HEADERS)
            return
        decision = await self.unlocker.attempt(entry, client_ip(scope))
        if not decision.allowed:
            self.tally("password_limited")
            page = form_page(slug, query, f"Too many attempts. Try again in {decision.retry_after} seconds.")
            await respond(scope, send, 429, page, HTML, [*PAGE_HEADERS, (b"retry-after", b"%d" % decision.retry_after)])
            return
        try:
            form = await self.unlocker.form(receive)
        except RequestTimeout as exc:
            self.tally("password_timeout")
            await respond(scope, send, 408, form_page(slug, query, exc.message), HTML, PAGE_HEADERS)
            return
        if not await self.unlocker.check(entry, (form or {}).get("password", [""])[0]):
            self.tally("wrong_password")
            await respond(scope, send, 401, form_page(slug, query, "Wrong password. Try again."), HTML, PAGE_HEADERS)
            return
        cookie = self.unlocker.cookie(entry, slug, secure=scope.get("scheme") == "https")
        await self.redirect(entry, scope, send, ((b"set-cookie", cookie),), outcome="unlocked")


def header(scope: Scope, name: bytes, joiner: bytes = b", ") -> bytes:
    """Every field of that name, joined; cookies (which HTTP/2 may split into fields) are joined with `; `."""
    return joiner.join(value for key, value in scope["headers"] if key == name)


async def not_found(scope: Scope, send: Any, elsewhere: bytes | None = None) -> None:
    """404, or a 302 to `SLUGLINE_NOT_FOUND_URL` (`elsewhere`) when it is set."""
    if elsewhere is not None:
        await send(
            {"type": "http.response.start", "status": 302, "headers": [(b"location", elsewhere), *REDIRECT_HEADERS]}
        )
        await send(EMPTY_BODY)
    elif prefers_json(header(scope, b"accept")):
        await respond(scope, send, 404, NOT_FOUND_JSON, b"application/json", NO_STORE)
    else:
        await respond(scope, send, 404, NOT_FOUND_HTML, HTML, PAGE_HEADERS)


async def ended(life: Life, scope: Scope, send: Any) -> None:
    """An expired or used-up link: to its `expired_url`, else 410 Gone (a page for browsers, JSON otherwise)."""
    if life.expired_location is not None:
        headers = [(b"location", life.expired_location), *REDIRECT_HEADERS]
        await send({"type": "http.response.start", "status": 302, "headers": headers})
        await send(EMPTY_BODY)
    elif prefers_json(header(scope, b"accept")):
        await respond(scope, send, 410, GONE_JSON, b"application/json", NO_STORE)
    else:
        await respond(scope, send, 410, GONE_HTML, HTML, PAGE_HEADERS)


async def respond(
    scope: Scope, send: Any, status: int, body: bytes, content_type: bytes, extra: list[tuple[bytes, bytes]]
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", b"%d" % len(body)), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
