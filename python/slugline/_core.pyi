"""Slugline's Rust core (built by maturin from ``rust_core/``): ids, keys, passwords, search, click classification.

Every function raises :class:`CoreError` (a ``ValueError``) for invalid input, and :class:`CorePanic`
(a ``RuntimeError``, never a ``ValueError``) for a bug inside the core; wrong argument types raise ``TypeError``.
"""

from collections.abc import Iterator, Sequence
from typing import Any, Literal, TypeAlias, final, overload

_KeyKind: TypeAlias = Literal["full", "public", "session"]
_Device: TypeAlias = Literal["desktop", "mobile", "tablet", "bot", "other"]

__all__ = [
    "BROWSERS",
    "DEVICES",
    "RESERVED_SLUGS",
    "SYSTEMS",
    "BatchCubes",
    "ClickBatch",
    "ClickQueue",
    "Clicks",
    "CoreError",
    "CorePanic",
    "EncodedClicks",
    "GeoDb",
    "LinkCounts",
    "RedirectRules",
    "SearchIndex",
    "ValueChunks",
    "Variants",
    "__version__",
    "_panic",
    "analyse",
    "classify_source",
    "classify_user_agent",
    "compose",
    "fitting_totals",
    "generate_key",
    "generate_link_id",
    "generate_slug",
    "hash_key",
    "hash_password",
    "is_preview_crawler",
    "key_kind",
    "keyed_hash",
    "link_counts",
    "link_json_rows",
    "move_link",
    "normalize",
    "pack_days",
    "projection_for",
    "projections",
    "recount",
    "referrer_host",
    "slug_error",
    "top_links",
    "verify_key",
    "verify_password",
    "without_variants",
]

__version__: str

RESERVED_SLUGS: frozenset[str]
"""Lowercase words that may not be used as a slug (compared case-insensitively)."""

class CoreError(ValueError):
    """Raised for invalid input to a core function."""

class CorePanic(RuntimeError):
    """Raised when the core hits a bug (a Rust panic); never a sign of bad input."""

# ---- slugs and ids -------------------------------------------------------------------------------

def generate_slug(length: int = 7) -> str:
    """A random base62 slug (0-9A-Za-z) from OS randomness; ``length`` must be 1..=64, else CoreError."""

def slug_error(slug: str) -> str | None:
    """``None`` when ``slug`` is valid, otherwise a message naming the field and the rule.

    Rules: 1-64 characters of ``A-Z a-z 0-9 _ -``, not a reserved word (case-insensitive).
    """

def generate_link_id() -> str:
    """A random link id: ``"lnk_"`` + 11 base62 characters."""

# ---- keys and tokens -----------------------------------------------------------------------------

def generate_key(kind: _KeyKind) -> str:
    """A new token: prefix + 32 random base62 + 6-char base62 CRC32 checksum.

    ``kind`` is ``"full"`` (``svc_live_``), ``"public"`` (``svc_pub_``) or ``"session"`` (``svc_sess_``);
    anything else raises CoreError.
    """

def key_kind(token: object) -> _KeyKind | None:
    """``"full"``, ``"public"`` or ``"session"`` for a well-formed token (prefix, length, alphabet, checksum).

    ``None`` for anything else, including non-strings: never raises for bad input (only CorePanic for a bug).
    No database needed.
    """

def hash_key(secret: bytes, token: str) -> str:
    """Lowercase hex HMAC-SHA256(secret, token): what is stored for a key."""

def verify_key(secret: bytes, token: str, expected_hex: str) -> bool:
    """Constant-time check of ``token`` against a stored :func:`hash_key` value; ``False`` on malformed hex."""

def keyed_hash(secret: bytes, message: str) -> str:
    """Lowercase hex HMAC-SHA256(secret, message), for cookie signing, visitor hashes and the like."""

# ---- passwords -----------------------------------------------------------------------------------

def hash_password(password: str) -> str:
    """argon2id PHC string (m=19456 KiB, t=2, p=1, random 16-byte salt). Releases the GIL."""

def verify_password(password: str, encoded: str) -> bool:
    """``False`` for a wrong password; CoreError when ``encoded`` is not a usable argon2 PHC string.

    Releases the GIL.
    """

# ---- link JSON -----------------------------------------------------------------------------------

def link_json_rows(rows: list[Any], base_url: str) -> list[bytes | None]:
    """Each row's link JSON, the bytes orjson writes for ``slugline.links.service.link_json(row, base_url)``;
    ``None`` for a row that is not a tuple of those 11 values in the shapes the event-loop readers give (text
    timestamps in SQLite's stored or PostgreSQL's UTC form, hashtags as a list or stored JSON text)."""

# ---- search --------------------------------------------------------------------------------------

def normalize(text: str) -> str:
    """NFKD, combining marks stripped, full Unicode case folding (``"Crème Brûlée"`` -> ``"creme brulee"``)."""

@final
class SearchIndex:
    """Per-account corpus of links, held in memory."""

    def __init__(self) -> None: ...
    def upsert(
        self,
        *,
        id: str,
        slug: str,
        destination_url: str,
        title: str | None,
        description: str | None,
        note: str | None,
        hashtags: list[str],
        public: bool,
        created: int = 0,
    ) -> None:
        """Add or replace a link. ``public`` is true for visibility public/unlisted (what a public key may see);
        ``created`` is when it was made, in microseconds since 1970 (the order ``filter_page`` gives).

        Keyword-only, so that no two of the neighbouring strings can be swapped unnoticed."""

    def remove(self, id: str) -> bool:
        """Forget a link; ``False`` if it was not indexed."""

    def __len__(self) -> int: ...
    def __contains__(self, id: str, /) -> bool: ...
    def memory_bytes(self) -> int:
        """Heap bytes the index holds, computed from its buffers' capacities (what a memory budget counts)."""

    def shrink_to_fit(self) -> None:
        """Give back spare capacity of the growing buffers; worth it once after a bulk load. Releases the GIL."""

    @overload
    def filter_page(
        self,
        query: str,
        *,
        public_only: bool,
        newest_first: bool,
        offset: int,
        limit: int,
        max_text: None = None,
    ) -> tuple[int, list[str]]:
        """``(total, ids)``: how many links match ``query`` (as ``filter``), and ``limit`` of their ids from
        ``offset``, newest first by ``created`` (ties: by id, descending) or oldest first. Releases the GIL.

        With ``max_text``, None instead when checking the links' text would read more than that (units of about
        8 bytes; see ``filter``): the answer would be wider than the query, and a thread should ask instead."""
    @overload
    def filter_page(
        self, query: str, *, public_only: bool, newest_first: bool, offset: int, limit: int, max_text: int
    ) -> tuple[int, list[str]] | None: ...
    def filter(self, query: str, public_only: bool = False) -> list[str]:
        """Ids of the links matching ``query`` (the ``q`` of ``GET /links``), in no particular order.

        The query is normalized and split on whitespace; every term must match (AND). A plain term matches
        when it is a substring of the normalized slug, title, destination_url, description, note or a hashtag;
        ``#tag`` matches only a hashtag equal to ``normalize(tag)``. A blank query matches every link. Only
        the first 16 distinct terms count, and once a query has read 1,000,000 index entries it takes no
        further terms (only absurd queries on huge accounts get there); terms checked in the links' text stop
        likewise once the checks have read ~512 MB. ``public_only`` leaves out links upserted with
        ``public=False``. Releases the GIL.
        """

    @overload
    def search(
        self, query: str, limit: int = 20, public_only: bool = False, max_text: None = None
    ) -> tuple[int, list[tuple[str, float, dict[str, str]]]]:
        """Ranked search: ``(total matches, top `limit` hits as (id, score, highlights))``.

        Hits are sorted by score (descending), then id. Terms match field words exactly, as a prefix, or
        (terms of 5+ characters) with one typo, and (terms of 3+ characters) anywhere inside a word of the
        destination URL; ``#tag`` terms match hashtags only; every term must match. Only the first 16
        distinct terms count, and none after the query has read 1,000,000 index entries.
        ``highlights`` maps each matching field (``slug``, ``title``, ``description``, ``note``,
        ``destination_url``, ``hashtags``) to an HTML-escaped snippet of the original text with matches in
        ``<mark>…</mark>``. A blank query returns ``(0, [])``. Releases the GIL.

        With ``max_text``, None instead when highlighting the hits would read more than that many bytes of
        ASCII text (text that is not all ASCII counts eight times): the caller then searches on a thread.
        """
    @overload
    def search(
        self, query: str, limit: int = 20, public_only: bool = False, *, max_text: int
    ) -> tuple[int, list[tuple[str, float, dict[str, str]]]] | None: ...

# ---- clicks --------------------------------------------------------------------------------------

def classify_user_agent(user_agent: str) -> tuple[_Device, str, str]:
    """``(device, browser, os)``; device is one of ``desktop``, ``mobile``, ``tablet``, ``bot``, ``other``."""

def is_preview_crawler(user_agent: bytes | None) -> bool:
    """Whether a User-Agent header's raw bytes are a link-preview crawler's (Slackbot, facebookexternalhit,
    Twitterbot, LinkedInBot, Discordbot, WhatsApp, TelegramBot, ...): case-insensitive substrings; None is no header."""

def referrer_host(referrer: str | None) -> str | None:
    """Host of an absolute http(s) referrer, lowercased, without port or a leading ``www.``/``m.``; else None."""

def classify_source(utm_source: str | None, via_qr: bool, referrer: str | None) -> str:
    """``utm_source`` (trimmed, lowercased, <= 64 chars) if non-empty, else ``qr``, else the referrer host,
    else ``direct``."""

DEVICES: frozenset[str]
"""Every device name ``classify_user_agent`` gives: what a redirect rule's ``device`` may name."""
BROWSERS: frozenset[str]
"""Every browser name ``classify_user_agent`` gives a browser (``Other`` included; bots' own names aside)."""
SYSTEMS: frozenset[str]
"""Every OS name ``classify_user_agent`` gives (``Other`` included)."""

@final
class RedirectRules:
    """A link's redirect rules compiled from their JSON (``[{"if": {...}, "to": "..."}]``, at most 20); immutable."""

    def __new__(cls, rules_json: str) -> RedirectRules:
        """Raises ``CoreError`` for malformed rules."""
    @property
    def needs_country(self) -> bool:
        """Whether a rule asks for the visitor's country."""
    def __len__(self) -> int: ...
    def choose(self, user_agent: bytes, accept_language: bytes, country: str | None = None) -> int | None:
        """The index of the first rule that holds for this visitor, or None (the link's own destination)."""

@final
class Variants:
    """A link's weighted variants compiled from their JSON (``[{"to": "...", "weight": 3}]``, 2 to 10 of them, each
    weight 1 to 1,000); immutable."""

    def __new__(cls, variants_json: str) -> Variants:
        """Raises ``CoreError`` for malformed variants."""
    def __len__(self) -> int: ...
    def choose(self, salt: bytes, link_id: str, ip: str, user_agent: bytes) -> int:
        """The index of this visitor's variant: a keyed hash of (address, user agent, link) under the day's visitor
        ``salt``, placed on the cumulative weights. The same all day for one visitor; shares follow the weights."""

@final
class GeoDb:
    """An MMDB file (GeoLite2 or DB-IP, Country or City), memory-mapped or held in memory; immutable, shared by
    threads."""

    def __new__(cls, data: bytes) -> GeoDb:
        """The whole file's bytes; raises ``CoreError`` if they are not an MMDB database."""
    @staticmethod
    def open(path: str) -> GeoDb:
        """The file at ``path``, memory-mapped (the workers of a host share its pages); raises ``CoreError`` if it
        cannot be opened or is not an MMDB database. Replace the file by a rename while it is open, never in place."""
    @property
    def mapped(self) -> bool:
        """Whether the database is a memory map of its file."""
    @property
    def kind(self) -> str:
        """The database's own name for its kind (``GeoLite2-City``, ``DBIP-Country-Lite``, ...)."""
    @property
    def has_cities(self) -> bool: ...
    def country(self, ip: str) -> str | None:
        """The country (ISO 3166-1 alpha-2) of an IPv4 or IPv6 address in text; None if unknown."""
    def place(self, ip: str) -> tuple[str | None, str | None, str | None]:
        """``(country, region, city)``, each None where unknown (region and city only from a City database)."""

_RawClick: TypeAlias = tuple[str, float, bytes, bytes, str | None, bool, str]
"""``(link_id, timestamp, user_agent, referrer, utm_source, via_qr, ip)`` as recorded (headers already cut)."""

@final
class ClickQueue:
    """Clicks between the redirects and the database, within a byte budget (every click not yet released)."""

    def __new__(cls, *, budget: int, batch: int, max_user_agent: int, max_referrer: int, max_source: int) -> ClickQueue:
        """``batch`` waiting clicks make a full batch; headers are cut to ``max_user_agent`` and ``max_referrer``
        bytes and ``utm_source`` to ``max_source`` characters when a click is recorded."""

    def record(
        self,
        link_id: str,
        user_agent: bytes,
        referrer: bytes,
        utm_source: str | None,
        via_qr: bool,
        ip: str,
        timestamp: float | None = None,
        country: str | None = None,
        variant: int | None = None,
    ) -> Literal[0, 1, 2]:
        """Keep one click, stamped now unless ``timestamp`` is given: 0 when kept, 1 when kept and a full batch
        now waits, 2 when the budget is spent (the click is counted in ``dropped`` and not kept). ``country``: a
        trusted proxy's country header (two letters, else ignored), which wins over the GeoIP database's;
        ``variant``: the index of the link's variant the visitor was sent to (0-254), if it has variants."""

    def take(self, max: int) -> Clicks:
        """Up to ``max`` of the oldest waiting clicks; their bytes stay counted until released."""

    def give_back(self, clicks: Clicks) -> None:
        """Put clicks that could not be written back at the front, in order; ``clicks`` is emptied."""

    def release(self, clicks: Clicks) -> None:
        """Clicks written (or refused for good) leave the budget; ``clicks`` is emptied."""

    def __len__(self) -> int:
        """Clicks waiting (not those taken)."""

    @property
    def bytes(self) -> int:
        """Bytes held by every click not yet released."""

    @property
    def budget(self) -> int: ...
    @property
    def dropped(self) -> int:
        """Clicks refused at the budget since the queue was made."""

    def waiting(self) -> list[_RawClick]: ...

@final
class Clicks:
    """Clicks taken out of a ``ClickQueue``."""

    def __len__(self) -> int: ...
    def days(self) -> list[int]:
        """The distinct epoch days of these clicks, sorted."""

    def encode(self, salts: dict[int, bytes], max_text: int, geo: GeoDb | None = None) -> EncodedClicks:
        """Classify (each distinct user agent once), hash visitors with their day's salt, place them (``geo``: each
        distinct address once) and roll up, with the GIL released; sources and referrer hosts are cut to
        ``max_text`` characters. Raises ``CoreError`` for a day missing from ``salts``."""

    def split(self) -> list[Clicks]:
        """One ``Clicks`` per click, in order; this one is emptied."""

@final
class EncodedClicks:
    """A classified batch, ready for one database write."""

    @property
    def totals(self) -> str:
        """JSON ``[[link_id, counted], ...]`` for every link of the batch, sorted by id (bots not counted)."""

    @property
    def links(self) -> int:
        """Distinct links in the batch."""

    def __len__(self) -> int: ...
    def copy_text(self, alive: set[str] | None = None) -> bytes:
        """The click rows in PostgreSQL's COPY text format, without links missing from ``alive`` (when given)."""

    def values(self, alive: set[str] | None = None, chunk: int = 100) -> ValueChunks:
        """The click rows as flat parameter lists of at most ``chunk`` rows of 12 values: link_id, clicked_at
        (``YYYY-MM-DD HH:MM:SS.ffffff`` UTC), device, browser, os, source, referrer host or None, visitor, country,
        region, city and variant index (each or None). Each list is built when the iterator is asked for it, so the
        GIL is held one list at a time."""

_CubeKey: TypeAlias = tuple[int, str, int, int]
_StoredCube: TypeAlias = tuple[int, str, int, int, bytes, bytes | None, bytes | None, bytes | None, bytes | None]
_NewCube: TypeAlias = tuple[int, str, int, int, bytes | None, bytes | None, bytes | None, bytes | None, bytes | None]

@final
class BatchCubes:
    """The roll-up cubes one encoded batch adds, by row (account id, scope, level, bucket)."""

    def __new__(cls, encoded: EncodedClicks, owners: dict[str, tuple[int, bool]]) -> BatchCubes:
        """``owners``: link id -> (account id, whether a public-only key sees the link); clicks of other links
        and bots' clicks are left out."""

    @staticmethod
    def from_clicks(
        clicks: list[tuple[str, float, str, str, str, str, str | None, str]],
        owners: dict[str, tuple[int, bool]],
        views: bool = True,
        details: Sequence[tuple[str | None, str | None, int | None]] | None = None,
    ) -> BatchCubes:
        """The cubes of clicks read back from the click log: (link id, unix time, device, browser, os, source,
        referrer host or None, visitor hash); without ``views``, only the links' own cubes. ``details`` holds each
        click's (country, city, variant index), each None if unknown; without it none is known."""

    def keys(self) -> list[_CubeKey]:
        """The rows this batch touches, sorted."""

    def merged(self, stored: list[_StoredCube], weight: int = 1, projected: bool = False) -> list[_NewCube]:
        """The rows to write: the stored ones given (any of ``keys``) with this batch merged in, and new ones; with
        ``weight`` -1 this batch is taken out of them instead (a migration recounting clicks already counted). With
        ``projected``, each link's month written comes with its projections, rows of levels 3, 4 and 5 (device with
        browser and os; with source and referrer host; with country and city) that filtered top links read instead."""

def move_link(
    link_id: str,
    account: int,
    scopes: list[str],
    link_rows: list[tuple[int, int, bytes, bytes | None, bytes | None]],
    stored: list[_StoredCube],
    weight: int,
) -> list[_NewCube]:
    """One link's stored cubes ``(level, bucket, cube, uniques, hours)`` added to (``weight`` 1) or taken out of
    (-1) the account views ``scopes``, whose stored rows are ``stored``. Rows left empty come back with cube
    None, to be deleted."""

def recount(stored: _StoredCube, parts: list[tuple[bytes, bytes | None, bytes | None, bytes | None]]) -> _NewCube:
    """``stored`` (an account view's day row) made again from its links' day cubes ``parts`` ``(cube, uniques,
    hours, sketches)``, its per-link counts kept: exact visitors after a link left the view."""

def projection_for(filters: dict[str, str]) -> int | None:
    """The level of the projection of a link's month that totals what the month does under ``filters`` (3: device,
    browser and os; 4: device, source and referrer host; 5: device, country and city), if one does."""

def projections(cube: bytes) -> list[bytes]:
    """The projections of a link's month ``cube`` column (levels 3, 4 and 5, in that order), as ``merged`` makes
    them: what a migration writes beside the months stored before."""

def without_variants(stored: _StoredCube) -> _NewCube:
    """``stored`` as a cube of the version before variants (2), its clicks and visitors of every variant counted as
    without one: what migration 0021's downgrade leaves for the code before it, which cannot read version 3."""

def compose(key: _CubeKey, parts: list[tuple[str, tuple[bytes, bytes | None, bytes | None, bytes | None]]]) -> _NewCube:
    """The row ``key`` of an account view made from its links' cubes ``(link id, (cube, uniques, hours,
    sketches))``, counting clicks per link."""

def analyse(
    rows: list[tuple[int, int, bytes, bytes | None, bytes | None]],
    filters: dict[str, str],
    hours: bool,
    packs: list[tuple[int, int, int, bytes, bytes | None]] = ...,
) -> dict[str, Any]:
    """Clicks, visitors and breakdowns of stored day rows ``(weight, epoch day, cube, uniques, hours)`` and month
    packs ``(weight, first day, last day, cube, uniques)`` (only their days from first to last are read) whose
    clicks fit every filter (dimension -> value; ``variant`` is an index in decimal): ``{total, visitors,
    days: {day: n}, hours: {hour: n}, breakdowns: {dimension: [(value, n)] most first}, variant_visitors:
    {index: visitors}}``. Packs keep no hours."""

def pack_days(
    days: list[tuple[int, bytes, bytes | None, bytes | None]],
) -> tuple[bytes, bytes | None, bytes | None]:
    """A month's day cubes ``(epoch day, cube, uniques, links)`` of a view as one pack: its ``(cube, uniques,
    links)`` columns, holding the same clicks and visitors (no hours, no sketches) and each link's clicks over all
    its days."""

def fitting_totals(rows: list[tuple[int, int, bytes]], filters: dict[str, str]) -> dict[int, int]:
    """The clicks that fit ``filters`` (as ``analyse`` takes them) in each group of ``(group, weight, cube)`` rows,
    each cube column added ``weight`` times; a group without clicks that fit is 0 or absent."""

def top_links(rows: list[tuple[int, bytes]], n: int) -> list[tuple[str, int]]:
    """The ``n`` most clicked links over stored per-link counts ``(weight, links)``."""

def link_counts(rows: list[tuple[int, bytes]]) -> LinkCounts:
    """Every link's clicks over stored per-link counts ``(weight, links)``, kept in the core."""

@final
class LinkCounts:
    """Every link's clicks over a period, most clicked first; no link is made a Python object until asked for."""

    def top(self, n: int) -> list[tuple[str, int]]:
        """The ``n`` most clicked links, as (link id, clicks)."""
    def top_with(self, rows: list[tuple[int, bytes]], n: int) -> list[tuple[str, int]]:
        """The ``n`` most clicked links with the clicks of ``rows`` of per-link counts ``(weight, links)`` added (the
        days since these counts were made), as (link id, clicks)."""
    def get(self, links: list[str]) -> list[int]:
        """The clicks of each of ``links`` (0 for a link without any)."""
    def __len__(self) -> int: ...
    def __sizeof__(self) -> int:
        """Bytes held, roughly."""

@final
class ValueChunks(Iterator[list[str | int | None]]):
    """``EncodedClicks.values``: one parameter list per step."""

    def __next__(self) -> list[str | int | None]: ...

@final
class ClickBatch:
    """Clicks gathered by the flusher between two writes; classification happens here, off the request path."""

    def __init__(self) -> None: ...
    def add(
        self,
        *,
        link_id: str,
        timestamp: float,
        user_agent: str,
        referrer: str | None,
        utm_source: str | None,
        via_qr: bool,
        visitor_salt: bytes,
        ip: str,
    ) -> None:
        """Classify and keep one click. The visitor is the first 32 hex chars of
        HMAC-SHA256(visitor_salt, ip + "\\n" + user_agent); the IP itself is not kept. Keyword-only."""

    def __len__(self) -> int: ...
    def rows(self) -> list[tuple[str, float, _Device, str, str, str, str | None, str]]:
        """``(link_id, timestamp, device, browser, os, source, referrer_host, visitor)`` in insertion order."""

    def rollup(self) -> list[tuple[str, int, _Device, str, int]]:
        """``(link_id, day, device, source, clicks)`` with day = UTC epoch day, sorted by the first four.

        Releases the GIL."""

    def link_totals(self) -> list[tuple[str, int]]:
        """``(link_id, clicks)`` excluding bots, sorted by link id."""

    # Only in builds with the `testing` feature (the dev build of `make build`), not in release wheels.
    @staticmethod
    def synthetic(n: int, links: int, days: int, seed: int) -> ClickBatch:
        """A deterministic pseudo-random batch of ``n`` clicks, for benchmarks."""

# ---- test hook: only in builds with the `testing` feature (the dev build of `make build`) ----------

def _panic(message: str, detach: bool = False) -> None:
    """Panic inside Rust on purpose (with the GIL released when ``detach``); surfaces as CorePanic. For tests only."""
