"""The traffic of `analytics_scale.py`: which link is clicked, when, by whom (address and browser) and from where.

The year of clicks the build writes and the live redirects of its load driver are drawn from this one model, so
they look alike. Links are clicked Zipf-like (rank 0 is the hottest); a visitor is one address with one browser
(what the visitor hash sees) drawn from a pool with many repeat visits; origins mix search, social, a few hundred
blogs, newsletters (`utm_source`), QR scans and direct visits; a few percent of the clicks are bots. Days follow a
growing trend with a weekly dip and a few viral spikes; hours follow a day in Europe and the Americas. Only the
standard library is used: the build step also runs under an older Slugline's interpreter.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

LINK_SKEW = 1.1  # Zipf exponent over the links' ranks: the top link gets ~15% of the clicks, the last a few dozen
VISITOR_SKEW = 2.0  # visitor index = pool * random() ** skew: the front of the pool comes back often
CLICKS_PER_VISITOR = 4  # the pool's size against the clicks
BOT_SHARE = 0.04
CHROME = ("120.0.0.0", "124.0.0.0", "128.0.0.0", "130.0.0.0", "131.0.0.0")
FIREFOX = ("121.0", "128.0", "132.0", "133.0")
APPLE = ("16_6", "17_5", "17_6", "18_0", "18_1")
BLINK, WEBKIT = "AppleWebKit/537.36 (KHTML, like Gecko)", "AppleWebKit/605.1.15 (KHTML, like Gecko)"
WIN, MAC, LINUX = "Windows NT 10.0; Win64; x64", "Macintosh; Intel Mac OS X 10_15_7", "X11; Linux x86_64"
IPHONE, GALAXY = "iPhone; CPU iPhone OS {} like Mac OS X", "Linux; Android 14; SM-S921B"
# (weight, template, versions): desktop, then phones, then tablets; each version is a User-Agent string of its own.
HUMANS: list[tuple[float, str, Sequence[str]]] = [
    (18, f"Mozilla/5.0 ({WIN}) {BLINK} Chrome/{{}} Safari/537.36", CHROME),
    (5, f"Mozilla/5.0 ({WIN}) {BLINK} Chrome/{{0}} Safari/537.36 Edg/{{0}}", CHROME),
    (3, f"Mozilla/5.0 ({WIN}; rv:{{0}}) Gecko/20100101 Firefox/{{0}}", FIREFOX),
    (7, f"Mozilla/5.0 ({MAC}) {BLINK} Chrome/{{}} Safari/537.36", CHROME),
    (5, f"Mozilla/5.0 ({MAC}) {WEBKIT} Version/{{}} Safari/605.1.15", ("17.5", "17.6", "18.0", "18.1")),
    (2, "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.7; rv:{0}) Gecko/20100101 Firefox/{0}", FIREFOX),
    (2, f"Mozilla/5.0 ({LINUX}) {BLINK} Chrome/{{}} Safari/537.36", CHROME),
    (1.5, f"Mozilla/5.0 ({LINUX}; rv:{{0}}) Gecko/20100101 Firefox/{{0}}", FIREFOX),
    (0.5, f"Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) {BLINK} Chrome/{{}} Safari/537.36", CHROME),
    (20, f"Mozilla/5.0 ({IPHONE}) {WEBKIT} Version/17.0 Mobile/15E148 Safari/604.1", APPLE),
    (3, f"Mozilla/5.0 ({IPHONE}) {WEBKIT} CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1", APPLE),
    (16, f"Mozilla/5.0 (Linux; Android 10; K) {BLINK} Chrome/{{}} Mobile Safari/537.36", CHROME),
    (3, f"Mozilla/5.0 ({GALAXY}) {BLINK} SamsungBrowser/26.0 Chrome/{{}} Mobile Safari/537.36", CHROME),
    (1, "Mozilla/5.0 (Android 14; Mobile; rv:{0}) Gecko/{0} Firefox/{0}", FIREFOX),
    (3, f"Mozilla/5.0 (iPad; CPU OS {{}} like Mac OS X) {WEBKIT} Version/17.0 Mobile/15E148 Safari/604.1", APPLE),
    (1.5, f"Mozilla/5.0 (Linux; Android 14; SM-X710) {BLINK} Chrome/{{}} Safari/537.36", CHROME),
    (0.3, f"Mozilla/5.0 (Linux; Android 9; KFTRWI) {BLINK} Silk/131.3.1 like Chrome/{{}} Safari/537.36", CHROME),
]
BOTS: list[tuple[float, str]] = [
    (3, "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
    (1, "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"),
    (1.5, "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"),
    (1, "Twitterbot/1.0"),
    (1, "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"),
    (1, "WhatsApp/2.23.20.0"),
    (1, "curl/8.5.0"),
    (0.5, "python-requests/2.32.3"),
]
# (weight, referrer URL or "", utm_source or None, via QR)
Origin = tuple[bytes, str | None, bool]
BIG_ORIGINS: list[tuple[float, str, str | None, bool]] = [
    (28, "", None, False),
    (18, "https://www.google.com/", None, False),
    (2, "https://www.bing.com/", None, False),
    (1.5, "https://duckduckgo.com/", None, False),
    (6, "https://t.co/Xk2pQ9aZ1b", None, False),
    (1, "https://x.com/", None, False),
    (5, "https://l.facebook.com/l.php", None, False),
    (3, "https://www.linkedin.com/feed/", None, False),
    (1, "https://lnkd.in/e3Xq-9b", None, False),
    (3, "https://news.ycombinator.com/item?id=41234567", None, False),
    (4, "https://www.reddit.com/r/programming/comments/1abc/", None, False),
    (1, "https://old.reddit.com/r/selfhosted/", None, False),
    (6, "", "newsletter", False),
    (1.5, "https://mastodon.social/", "mastodon", False),
    (1, "https://www.producthunt.com/", "producthunt", False),
    (1, "", "email", False),
    (1, "https://app.slack.com/", "slack", False),
    (0.5, "", "rss", False),
    (4, "", None, True),
]
BLOG_SHARE = 10  # the long tail's total weight against BIG_ORIGINS'
BLOGS = 300
WORDS = ("code", "data", "byte", "cloud", "rust", "tiny", "deep", "open", "night", "pixel", "quiet", "lazy", "signal")
NOUNS = ("notes", "log", "garden", "journal", "digest", "lab", "works", "press", "thoughts", "letters", "stack")
TLDS = ("com", "dev", "io", "net", "org", "blog", "xyz")
WEEKDAYS = (1.05, 1.1, 1.1, 1.05, 0.95, 0.7, 0.65)  # Monday first
HOURS = (0.35, 0.3, 0.25, 0.22, 0.22, 0.28, 0.4, 0.6, 0.8, 0.95, 1.0, 1.0, 1.05, 1.15, 1.25, 1.3, 1.3, 1.25, 1.15, 1.0,
         0.85, 0.7, 0.55, 0.45)  # fmt: skip


def _cumulative(weights: Sequence[float]) -> list[float]:
    return list(itertools.accumulate(weights))


class Traffic:
    """Draws clicks; deterministic for one seed."""

    def __init__(self, seed: int, links: int, visitors: int) -> None:
        self.rng = random.Random(seed)
        self.links = links
        self.visitors = max(100, visitors)
        self._link_cum = _cumulative([1 / (rank + 1) ** LINK_SKEW for rank in range(links)])
        agents = [(w / len(vs), t.format(v).encode()) for w, t, vs in HUMANS for v in vs]
        self._agents = [agent for _, agent in agents]
        self._agent_cum = _cumulative([w for w, _ in agents])
        self._bots = [agent.encode() for _, agent in BOTS]
        self._bot_cum = _cumulative([w for w, _ in BOTS])
        hosts = [f"{a}{n}.{t}" for a in WORDS for n in NOUNS for t in TLDS]
        random.Random(seed + 1).shuffle(hosts)
        tail = [(BLOG_SHARE / (i + 1) / _harmonic(BLOGS), f"https://{h}/posts/{i}", None, False) for i, h in
                enumerate(hosts[:BLOGS])]  # fmt: skip
        origins = BIG_ORIGINS + tail
        self._origins: list[Origin] = [(url.encode(), utm, qr) for _, url, utm, qr in origins]
        self._origin_cum = _cumulative([w for w, *_ in origins])

    def ranks(self, count: int) -> list[int]:
        """`count` links' ranks, the hot ones often."""
        return self.rng.choices(range(self.links), cum_weights=self._link_cum, k=count)

    def visitor(self) -> tuple[str, bytes, bool]:
        """A visitor's address and User-Agent, the same ones every time that visitor comes back; and whether it is
        a bot (which sends no Referer)."""
        rng = self.rng
        if rng.random() < BOT_SHARE:
            bot = bisect.bisect(self._bot_cum, rng.random() * self._bot_cum[-1])
            return f"66.249.{bot}.{rng.randrange(1, 255)}", self._bots[bot], True
        v = int(self.visitors * rng.random() ** VISITOR_SKEW)
        spread = (v * 2654435761) % 4294967296 / 4294967296  # a fixed, well-mixed fraction per visitor
        agent = self._agents[bisect.bisect(self._agent_cum, spread * self._agent_cum[-1])]
        if v % 10 == 0:  # one visitor in ten on IPv6
            return f"2001:db8:{v >> 16:x}:{v & 0xFFFF:x}::1", agent, False
        return f"{23 + (v >> 24)}.{(v >> 16) & 255}.{(v >> 8) & 255}.{v & 255}", agent, False

    def origin(self) -> Origin:
        """(Referer header, utm_source, via a QR code) of one click."""
        return self._origins[bisect.bisect(self._origin_cum, self.rng.random() * self._origin_cum[-1])]

    def day_counts(self, clicks: int, days: int, now: datetime) -> list[tuple[datetime, float, int]]:
        """(midnight UTC, seconds of it that have passed by `now`, clicks) of each of the last `days` days, oldest
        first, today included up to `now`; the counts add up to `clicks`."""
        today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        spikes = set(self.rng.sample(range(days), k=max(1, days // 60)))
        rows: list[tuple[datetime, float, float]] = []
        for back in range(days - 1, -1, -1):
            day = today - timedelta(days=back)
            age = days - 1 - back
            length = (now - day).total_seconds() if back == 0 else 86400.0
            weight = (0.55 + 0.9 * age / max(1, days - 1)) * WEEKDAYS[day.weekday()] * length / 86400
            rows.append((day, length, weight * (self.rng.uniform(2.5, 6) if age in spikes else 1)))
        total = sum(weight for *_, weight in rows)
        counts = [math.floor(clicks * weight / total) for *_, weight in rows]
        counts[-1] += clicks - sum(counts)
        return [(day, length, count) for (day, length, _), count in zip(rows, counts, strict=True)]

    def times(self, day: datetime, length: float, count: int) -> list[float]:
        """`count` sorted Unix times within the first `length` seconds of `day`, shaped like a day's traffic."""
        start = day.timestamp()
        rng = self.rng
        if length < 86400:  # today, still under way: spread evenly over what has passed
            return sorted(start + rng.random() * length for _ in range(count))
        hours = rng.choices(range(24), cum_weights=_HOUR_CUM, k=count)
        return sorted(start + (hour + rng.random()) * 3600 for hour in hours)


_HOUR_CUM = _cumulative(HOURS)


def _harmonic(n: int) -> float:
    return sum(1 / (i + 1) for i in range(n))


def utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)
