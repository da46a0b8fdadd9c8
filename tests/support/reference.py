"""Pure-Python reference implementations of the core's algorithms: the equivalence oracle for
`slugline._core` and the baseline its benchmarks are measured against. Simple over fast."""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Rust's `char::is_whitespace` (Unicode White_Space); `str.isspace` also accepts U+001C..U+001F.
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(map(chr, range(0x2000, 0x200B)))
_SPLIT = re.compile(f"[{re.escape(WHITESPACE)}]+")


def split_whitespace(text: str) -> list[str]:
    return [token for token in _SPLIT.split(text) if token]


def normalize(text: str) -> str:
    def strip_marks(s: str) -> str:
        return "".join(c for c in s if not unicodedata.category(c).startswith("M"))

    return strip_marks(strip_marks(unicodedata.normalize("NFKD", text)).casefold())


def words(normalized: str) -> list[str]:
    return [w for w in re.split(r"[\W_]+", normalized) if w]


# ---- search ----------------------------------------------------------------------------------------

FIELDS = ("slug", "title", "hashtags", "description", "note", "destination_url")
WEIGHTS = {"slug": 3.0, "title": 3.0, "hashtags": 2.0, "description": 1.2, "note": 1.2, "destination_url": 1.0}
EXACT, PREFIX, FUZZY, SUBSTRING = 1.0, 0.6, 0.35, 0.3
MAX_TERMS = 16  # later distinct terms are ignored: they bound the work of one query
# The core also stops taking terms after reading 1,000,000 postings; no corpus here comes near that.
SUBSTRING_MIN_CHARS = 3  # shorter terms match only at a word's start: "a" inside every word says nothing


def within_one(a: str, b: str) -> bool:
    """Optimal-string-alignment distance <= 1."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            if len(a) == len(b):
                return a[i + 1 :] == b[i + 1 :] or (a[i : i + 2] == b[i : i + 2][::-1] and a[i + 2 :] == b[i + 2 :])
            short, long = (a, b) if len(a) < len(b) else (b, a)
            return short[i:] == long[i + 1 :]
    return True  # one is the other plus a trailing char


def word_quality(term: str, word: str, typos: bool) -> float:
    if word == term:
        return EXACT
    if word.startswith(term):
        return PREFIX
    typo = within_one(term, word) or (len(word) > len(term) and within_one(term, word[: len(term)]))
    if typos and len(term) >= 5 and typo:
        return FUZZY
    return 0.0


@dataclass
class Link:
    id: str
    fields: dict[str, str]
    tags: list[str]
    public: bool
    normalized: dict[str, str] = field(default_factory=dict)


class SearchIndex:
    def __init__(self) -> None:
        self.links: dict[str, Link] = {}

    def upsert(
        self,
        id: str,
        slug: str,
        destination_url: str,
        title: str | None,
        description: str | None,
        note: str | None,
        hashtags: list[str],
        public: bool,
    ) -> None:
        tags = sorted({normalize(t) for t in hashtags})
        texts = {
            "slug": slug,
            "title": title or "",
            "description": description or "",
            "note": note or "",
            "destination_url": destination_url,
            "hashtags": " ".join(hashtags),
        }
        link = Link(id, texts, tags, public, {f: normalize(t) for f, t in texts.items()})
        link.normalized["hashtags"] = " ".join(tags)
        self.links[id] = link

    def remove(self, id: str) -> bool:
        return self.links.pop(id, None) is not None

    def __len__(self) -> int:
        return len(self.links)

    def __contains__(self, id: str) -> bool:
        return id in self.links

    def _visible(self, public_only: bool) -> Iterable[Link]:
        return (link for link in self.links.values() if link.public or not public_only)

    def filter(self, query: str, public_only: bool = False) -> list[str]:
        terms = list(dict.fromkeys(split_whitespace(normalize(query))))[:MAX_TERMS]

        def matches(link: Link, term: str) -> bool:
            if term.startswith("#") and len(term) > 1:
                return term[1:] in link.tags
            texts = [link.normalized[f] for f in FIELDS if f != "hashtags"] + link.tags
            return any(term in text for text in texts)

        return [link.id for link in self._visible(public_only) if all(matches(link, t) for t in terms)]

    def search(
        self, query: str, limit: int = 20, public_only: bool = False
    ) -> tuple[int, list[tuple[str, float, dict[str, str]]]]:
        """Ranked ids and scores as the core computes them; highlights are left empty."""
        terms: list[tuple[str, bool]] = []  # (text, is_tag)
        for token in split_whitespace(normalize(query)):
            is_tag = token.startswith("#") and len(token) > 1
            parts = [(token[1:], True)] if is_tag else [(w, False) for w in words(token)]
            terms.extend(p for p in parts if p not in terms)
        terms = terms[:MAX_TERMS]
        if not terms:
            return 0, []
        hits: list[tuple[str, float, dict[str, str]]] = []
        for link in self._visible(public_only):
            total = 0.0
            for text, is_tag in terms:
                best = self._term_score(link, text, is_tag)
                if best == 0.0:
                    break
                total += best
            else:
                hits.append((link.id, round(total, 6), {}))
        hits.sort(key=lambda h: (-h[1], h[0]))
        return len(hits), hits[:limit]

    @staticmethod
    def _term_score(link: Link, term: str, is_tag: bool) -> float:
        if is_tag:
            return max((WEIGHTS["hashtags"] * word_quality(term, tag, typos=False) for tag in link.tags), default=0.0)
        best = 0.0
        for name in FIELDS:
            for word in words(link.normalized[name]):
                best = max(best, WEIGHTS[name] * word_quality(term, word, typos=True))
                inside = len(term) >= SUBSTRING_MIN_CHARS and term in word and not word.startswith(term)
                if name == "destination_url" and inside:
                    best = max(best, WEIGHTS[name] * SUBSTRING)
        return best


# ---- user agents, referrers, sources -------------------------------------------------------------

BOTS = [
    ("googlebot", "Googlebot"),
    ("bingbot", "bingbot"),
    ("facebookexternalhit", "facebookexternalhit"),
    ("slackbot", "Slackbot"),
    ("twitterbot", "Twitterbot"),
    ("curl/", "curl"),
    ("wget/", "Wget"),
    ("python-requests", "python-requests"),
    ("python-httpx", "httpx"),
    ("python-urllib", "urllib"),
    ("aiohttp", "aiohttp"),
    ("go-http-client", "Go-http-client"),
    ("okhttp", "okhttp"),
    ("node-fetch", "node-fetch"),
    ("axios/", "axios"),
    ("java/", "Java"),
    ("libwww-perl", "libwww-perl"),
    ("scrapy", "Scrapy"),
    ("headlesschrome", "HeadlessChrome"),
    ("whatsapp", "WhatsApp"),
    ("bot", "Other"),
    ("crawl", "Other"),
    ("spider", "Other"),
    ("slurp", "Other"),
    ("preview", "Other"),
    ("monitor", "Other"),
    ("lighthouse", "Other"),
]
BROWSERS = [
    (("SamsungBrowser/",), "Samsung Internet"),
    (("Edg/", "Edge/", "EdgA/", "EdgiOS/"), "Edge"),
    (("OPR/", "Opera", "OPiOS/", "OPT/"), "Opera"),
    (("Firefox/", "FxiOS/"), "Firefox"),
    (("CriOS/", "Chrome/", "Chromium/"), "Chrome"),
    (("MSIE ", "Trident/"), "IE"),
    (("Safari/", "iPhone", "iPad"), "Safari"),
]
SYSTEMS = [
    (("Windows",), "Windows"),
    (("iPad",), "iPadOS"),
    (("iPhone", "iPod"), "iOS"),
    (("CrOS",), "ChromeOS"),
    (("Android",), "Android"),
    (("Macintosh", "Mac OS X"), "macOS"),
    (("Linux", "X11"), "Linux"),
]
TABLET = ("iPad", "Tablet", "Kindle", "Silk/", "PlayBook")
MOBILE = ("Mobile", "iPhone", "iPod", "Windows Phone", "Opera Mini", "BlackBerry")


def _first(ua: str, rules: list[tuple[tuple[str, ...], str]]) -> str:
    return next((name for tokens, name in rules if any(t in ua for t in tokens)), "Other")


def classify_user_agent(ua: str) -> tuple[str, str, str]:
    os = _first(ua, SYSTEMS)
    if not ua.strip(WHITESPACE):
        return "other", "Other", os
    lower = ua.encode("utf-8", "surrogatepass").lower()  # ASCII-only lowering, like Rust's
    bot = next((name for needle, name in BOTS if needle.encode() in lower), None)
    if bot is not None:
        return "bot", bot, os
    if any(t in ua for t in TABLET) or (os == "Android" and "Mobile" not in ua):
        device = "tablet"
    elif any(t in ua for t in MOBILE):
        device = "mobile"
    else:
        device = "desktop" if os in ("Windows", "macOS", "Linux", "ChromeOS") else "other"
    return device, _first(ua, BROWSERS), os


def _valid_port(after_host: str) -> bool:
    return after_host == "" or (
        after_host.startswith(":")
        and len(after_host) <= 6
        and after_host[1:].isascii()
        and (after_host[1:] == "" or after_host[1:].isdigit())
    )


def without_controls(text: str) -> str:
    """`text` without control characters (category Cc, as Rust's `char::is_control`)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cc")


def referrer_host(referrer: str | None) -> str | None:
    if referrer is None:
        return None
    url = without_controls(referrer).strip(WHITESPACE)
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not scheme.isascii():
        return None
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    host_port = authority.rpartition("@")[2]
    if host_port.startswith("["):
        address, bracket, after = host_port[1:].partition("]")
        if not bracket or not _valid_port(after) or not address or not re.fullmatch(r"[0-9A-Fa-f:.]+", address):
            return None
        host = address
    else:
        host = host_port.split(":", 1)[0]
        if not _valid_port(host_port[len(host) :]):
            return None
    host = (host[:-1] if host.endswith(".") else host).lower()
    if not host or not all(c.isalnum() or c in "-._:" for c in host):
        return None
    for prefix in ("www.", "m."):
        if host.startswith(prefix):
            host = host[len(prefix) :]
            break
    return host or None


def classify_source(utm_source: str | None, via_qr: bool, referrer: str | None) -> str:
    utm = without_controls(utm_source or "").strip(WHITESPACE).lower()[:64]
    if utm:
        return utm
    if via_qr:
        return "qr"
    return referrer_host(referrer) or "direct"


# ---- click batches --------------------------------------------------------------------------------

Row = tuple[str, float, str, str, str, str, str | None, str]


class ClickBatch:
    def __init__(self) -> None:
        self._rows: list[Row] = []

    def add(
        self,
        link_id: str,
        timestamp: float,
        user_agent: str,
        referrer: str | None,
        utm_source: str | None,
        via_qr: bool,
        visitor_salt: bytes,
        ip: str,
    ) -> None:
        if not math.isfinite(timestamp):
            raise ValueError("timestamp must be finite")
        device, browser, os = classify_user_agent(user_agent)
        visitor = hmac.new(visitor_salt, f"{ip}\n{user_agent}".encode(), hashlib.sha256).hexdigest()[:32]
        source = classify_source(utm_source, via_qr, referrer)
        self._rows.append((link_id, timestamp, device, browser, os, source, referrer_host(referrer), visitor))

    def __len__(self) -> int:
        return len(self._rows)

    def rows(self) -> list[Row]:
        return list(self._rows)

    def rollup(self) -> list[tuple[str, int, str, str, int]]:
        return rollup((r[0], r[1], r[2], r[5]) for r in self._rows)

    def link_totals(self) -> list[tuple[str, int]]:
        return sorted(Counter(r[0] for r in self._rows if r[2] != "bot").items())


def rollup(clicks: Iterable[tuple[str, float, str, str]]) -> list[tuple[str, int, str, str, int]]:
    """(link_id, timestamp, device, source) clicks -> sorted (link_id, day, device, source, clicks)."""
    counts = Counter((link, math.floor(ts / 86400), device, source) for link, ts, device, source in clicks)
    return sorted((link, day, device, source, n) for (link, day, device, source), n in counts.items())


StoredClick = tuple[str, float, str, str, str, str, str | None, str]  # link, time, device, browser, os, source, ...
DIMENSIONS = ("device", "browser", "os", "source", "referrer")


def analyse(
    clicks: Iterable[StoredClick], filters: dict[str, str], variants: Iterable[int | None] | None = None
) -> dict[str, Any]:
    """What `_core.analyse` answers over the cubes of `clicks`: bots left out, every filter (lowercased) holding;
    visitors are the distinct (day, visitor hash) pairs, which the cubes count exactly while a day has at most
    1,024 of them in a key. `variants`, if given, holds each click's variant (a link's cubes keep them, an account
    view's do not): a `variant` filter then names one by its index, and each variant gets its clicks and visitors."""
    given = list(clicks)
    paired = list(zip(given, variants if variants is not None else [None] * len(given), strict=True))

    def fits(c: StoredClick, variant: int | None) -> bool:
        values = dict(zip(DIMENSIONS, c[2:7], strict=True))
        if "variant" in filters and str(variant) != filters["variant"]:
            return False
        return all(
            (value := values[name]) is not None and value.lower() == wanted
            for name, wanted in filters.items()
            if name != "variant"
        )

    kept_pairs = [(c, v) for c, v in paired if c[2] != "bot" and fits(c, v)]
    kept = [c for c, _ in kept_pairs]
    breakdowns = {name: Counter[str]() for name in DIMENSIONS}
    for c in kept:
        for name, value in zip(DIMENSIONS, c[2:7], strict=True):
            if value is not None:
                breakdowns[name][value] += 1
    per_variant: dict[int, list[StoredClick]] = {}
    for c, variant in kept_pairs:
        if variant is not None:
            per_variant.setdefault(variant, []).append(c)
    return {
        "total": len(kept),
        "visitors": _visitors(kept),
        "days": dict(Counter(math.floor(c[1] / 86400) for c in kept)),
        "hours": dict(Counter(math.floor(c[1] / 3600) for c in kept)),
        "breakdowns": {
            **{name: _ranked(counts) for name, counts in breakdowns.items()},
            # Clicks given as `StoredClick`s carry no place (`BatchCubes.from_clicks`): no country, no city.
            "country": [],
            "city": [],
            "variant": _ranked(Counter({str(v): len(cs) for v, cs in per_variant.items()})),
        },
        "variant_visitors": {v: _visitors(cs) for v, cs in per_variant.items()},
    }


def _visitors(clicks: list[StoredClick]) -> float:
    return float(len({(math.floor(c[1] / 86400), c[7]) for c in clicks}))


def _ranked(counts: Counter[str]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda c: (-c[1], c[0]))
