"""Input models shared by REST, MCP and the docs: every bound and every field's help text lives here, once.

The OpenAPI document and the MCP tool schemas are both generated from these models, so what a client is told is
what the service enforces.
"""

from __future__ import annotations

import copy
import re
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from slugline import _core
from slugline.common import patterns
from slugline.common.bounds import (
    MAX_BROWSER,
    MAX_CLICKS_LIMIT,
    MAX_DAYS,
    MAX_DESCRIPTION,
    MAX_LINK_PASSWORD,
    MAX_NOTE,
    MAX_OS,
    MAX_PAGE,
    MAX_PASSWORD,
    MAX_PER,
    MAX_PLACE,
    MAX_PREVIEW_DESCRIPTION,
    MAX_PREVIEW_TITLE,
    MAX_QR_MARGIN,
    MAX_QR_SIZE,
    MAX_QUERY,
    MAX_REFERRER,
    MAX_SEARCH_LIMIT,
    MAX_SLUG,
    MAX_SOURCE,
    MAX_TAG,
    MAX_TAGS,
    MAX_TITLE,
    MAX_URL,
    MAX_USERNAME,
    MIN_LINK_PASSWORD,
    MIN_PASSWORD,
    MIN_QR_SIZE,
    MIN_USERNAME,
)
from slugline.common.clock import utcnow
from slugline.common.rules import MAX_RULES, Conditions
from slugline.common.visibility import Visibility

SortField = Literal["created_at", "updated_at", "title", "slug", "clicks"]
Direction = Literal["asc", "desc"]
KeyScope = Literal["full", "public"]
LinkStatus = Literal["active", "expired", "limit_reached", "archived"]
_DESTINATION = re.compile(patterns.DESTINATION)
_PAGE_URL = re.compile(patterns.PAGE_URL)
_SPACE = re.compile(r"\s")  # str.isspace's set, as `_SPACE_OR_CONTROL` says
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f]")  # `\s` is str.isspace's set: one C pass (an import checks millions)


def check_destination(url: str, name: str = "destination_url") -> str:
    """`url` as a destination (`name`: the field it came in, for the messages)."""
    try:
        return _check_url(url)
    except ValueError as exc:
        raise ValueError(str(exc).replace("destination_url", name)) from None


def _check_url(url: str) -> str:
    if len(url) > MAX_URL:  # before stripping: the documented maxLength counts what was sent
        raise ValueError(f"destination_url must be at most {MAX_URL} characters")
    url = url.strip()
    if _SPACE_OR_CONTROL.search(url):
        raise ValueError("destination_url must not contain whitespace or control characters")
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises for a port that is not a number in range
    except ValueError as exc:
        raise ValueError(f"destination_url is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("destination_url must be an absolute http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("destination_url must not contain credentials")
    if not _DESTINATION.fullmatch(url):  # what the schema promises, so a URL that passes it is never refused
        raise ValueError(
            "destination_url must be an http(s) URL with an ASCII host name or IPv4 address (punycode for "
            "international names), an optional port, then the path"
        )
    return url


def plain_destination(url: str) -> bool:
    """Whether `url` is a destination `check_destination` takes as it is, from the pattern alone: no surrounding
    space to strip, and the pattern already rules out what the other checks refuse (whitespace and control
    characters, another scheme, credentials, a missing host, a port out of range). False says nothing: the full
    check decides (an import checks millions of URLs, most of them plain)."""
    return len(url) <= MAX_URL and _DESTINATION.fullmatch(url) is not None


def check_slug(slug: str) -> str:
    problem = _core.slug_error(slug)
    if problem:
        raise ValueError(problem)
    return slug


def check_hashtags(tags: list[str]) -> list[str]:
    if len(tags) > MAX_TAGS:
        raise ValueError(f"hashtags may hold at most {MAX_TAGS} tags")
    seen: dict[str, None] = {}
    for raw in tags:
        tag = raw.strip().lstrip("#")  # measured before lowercasing, which can lengthen a few characters
        if not 1 <= len(tag) <= MAX_TAG:
            raise ValueError(f"hashtags must each be 1-{MAX_TAG} characters (after '#' is stripped)")
        if _SPACE.search(tag):
            raise ValueError(f"hashtag '{tag}' must not contain whitespace")
        seen.setdefault(tag.lower())
    return list(seen)


Destination = Annotated[
    str,
    Field(
        min_length=1,
        description=f"Where the short link redirects: an absolute http(s) URL with a host, at most "
        f"{MAX_URL} characters",
        json_schema_extra={
            "maxLength": MAX_URL,
            "pattern": f"^[{patterns.SPACE}]*{patterns.DESTINATION[1:-1]}[{patterns.SPACE}]*$",
        },
    ),
    AfterValidator(check_destination),
]


def _url_schema(description: str) -> Any:
    return Field(
        min_length=1,
        description=description,
        json_schema_extra={
            "maxLength": MAX_URL,
            "pattern": f"^[{patterns.SPACE}]*{patterns.DESTINATION[1:-1]}[{patterns.SPACE}]*$",
        },
    )


def check_expiry(moment: datetime) -> datetime:
    """A moment without a zone is taken as UTC; stored and shown in UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


ExpiredUrl = Annotated[
    str,
    _url_schema(
        "Where the link sends visitors once it has expired or reached max_clicks (302); without it they get 410 "
        f"Gone. An absolute http(s) URL with a host, at most {MAX_URL} characters"
    ),
    AfterValidator(lambda url: check_destination(url, "expired_url")),
]
ImageUrl = Annotated[
    str,
    _url_schema(f"The card's image: an absolute http(s) URL, at most {MAX_URL} characters"),
    AfterValidator(lambda url: check_destination(url, "preview.image_url")),
]


def _moment_text(value: Any) -> Any:
    """A moment is sent as ISO 8601 text, as the schema says: a number (which pydantic would read as seconds since
    1970) is refused."""
    if not isinstance(value, (str, datetime)):
        raise ValueError("must be an ISO 8601 date-time, e.g. 2030-01-31T18:00:00Z")
    return value


ExpiresAt = Annotated[
    datetime,
    BeforeValidator(_moment_text),
    Field(
        description="When the link stops redirecting (ISO 8601; UTC if no offset is given); null clears it",
    ),
    AfterValidator(check_expiry),
]


def _whole(value: Any) -> Any:
    """A JSON number with no fraction (2000.0) is a whole number, as JSON Schema's `integer` says; true is not."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


MaxClicks = Annotated[
    int,
    Field(
        strict=True,
        ge=1,
        le=MAX_CLICKS_LIMIT,
        description="How many visitors the link lets through (bots do not count); later ones get the expired "
        "answer; null clears the limit",
    ),
    BeforeValidator(_whole),
]
Archived = Annotated[
    bool,
    Field(
        strict=True,
        description="true: the link stops redirecting (404, as if it did not exist) and is left out of lists unless "
        "asked for, but keeps its analytics; false unarchives it",
    ),
]


class Preview(BaseModel):
    """The social card link-preview crawlers (Slack, Facebook, X, LinkedIn, ...) are shown for the short URL."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = Field(default=None, min_length=1, max_length=MAX_PREVIEW_TITLE, description="The card's title")
    description: str | None = Field(
        default=None, max_length=MAX_PREVIEW_DESCRIPTION, description="The card's text under the title"
    )
    image_url: ImageUrl | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str) and "\x00" in value:
            raise ValueError(f"preview.{info.field_name} must not contain NUL characters")
        return value

    def is_empty(self) -> bool:
        return self.title is None and self.description is None and self.image_url is None


Slug = Annotated[
    str,
    Field(
        description=f"The path of the short URL: 1-{MAX_SLUG} of A-Z a-z 0-9 _ -, case-sensitive, not a reserved "
        "word (api, mcp, health, ...); on create, omit it to get a random 7-character slug",
        json_schema_extra={"pattern": patterns.SLUG, "not": {"pattern": patterns.RESERVED_SLUG}},
    ),
    AfterValidator(check_slug),
]
Hashtags = Annotated[
    list[str],
    Field(
        description=f"Up to {MAX_TAGS} tags of 1-{MAX_TAG} characters; a leading '#' is stripped, tags are "
        "lowercased and de-duplicated",
        json_schema_extra={"maxItems": MAX_TAGS, "items": {"type": "string", "pattern": patterns.HASHTAG}},
    ),
    AfterValidator(check_hashtags),
]
Title = Annotated[str, Field(max_length=MAX_TITLE, description=f"Title, at most {MAX_TITLE} characters")]
Description = Annotated[
    str, Field(max_length=MAX_DESCRIPTION, description=f"Description, at most {MAX_DESCRIPTION} characters")
]
Note = Annotated[
    str,
    Field(
        max_length=MAX_NOTE,
        description=f"Private note for the account, at most {MAX_NOTE} characters; never shown to visitors",
    ),
]
VisibilityField = Annotated[
    Visibility,
    Field(
        description="public: listed and redirects; unlisted: redirects but is not advertised; private: only the "
        "account sees it and the short URL answers 404; password: visitors must enter the password"
    ),
]
LinkPassword = Annotated[
    str,
    Field(
        min_length=MIN_LINK_PASSWORD,
        max_length=MAX_LINK_PASSWORD,
        description=f"Password visitors must enter ({MIN_LINK_PASSWORD}-{MAX_LINK_PASSWORD} characters); required "
        "when visibility is 'password'; write-only, never returned",
    ),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, use_enum_values=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul(cls, value: Any, info: ValidationInfo) -> Any:
        """NUL cannot be stored (PostgreSQL refuses it in text), so it is refused on the way in."""
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, str) and "\x00" in item for item in items):
            raise ValueError(f"{info.field_name} must not contain NUL characters")
        return value


class RedirectRule(BaseModel):
    """One redirect rule: where a visitor goes when every condition of `if` holds."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    when: Conditions = Field(alias="if", description="The conditions, all of which must hold ({} always holds)")
    to: Destination = Field(description="Where a visitor this rule holds for is sent (checked as destination_url is)")

    @model_serializer(mode="plain")
    def _stored(self) -> dict[str, Any]:
        """The rule as stored and answered: `if` with only the conditions given."""
        return {"if": self.when.model_dump(exclude_none=True), "to": self.to}


MAX_VARIANTS = 10  # variants a link may have (`_core.Variants` refuses more), at least 2
MAX_WEIGHT = 1000  # a variant's weight is 1 to this


class Variant(BaseModel):
    """One weighted variant of a link's destination (an A/B split): its share is its weight over the sum of all."""

    model_config = ConfigDict(extra="forbid")

    to: Destination = Field(
        description="Where a visitor drawn for this variant is sent (checked as destination_url is)"
    )
    weight: int = Field(ge=1, le=MAX_WEIGHT, description=f"The variant's weight, 1 to {MAX_WEIGHT}", strict=True)


VARIANTS_EXAMPLE = [{"to": "https://example.com/a", "weight": 50}, {"to": "https://example.com/b", "weight": 50}]


RULES_EXAMPLE = [
    {"if": {"country": ["FR"], "device": ["mobile"]}, "to": "https://example.com/fr/mobile"},
    {"if": {"language": ["de"]}, "to": "https://example.com/de"},
]


class LinkUpdate(_Strict):
    """Any subset of the link's fields; `null` clears title, description, note and hashtags."""

    destination_url: Destination | None = None
    slug: Slug | None = None
    title: Title | None = None
    description: Description | None = None
    note: Note | None = None
    hashtags: Hashtags | None = None
    visibility: VisibilityField | None = None
    password: LinkPassword | None = None
    expires_at: ExpiresAt | None = None
    max_clicks: MaxClicks | None = None
    expired_url: ExpiredUrl | None = None
    archived: Archived | None = None
    preview: Preview | None = Field(
        default=None,
        description="The card link-preview crawlers get instead of the redirect (Open Graph and Twitter Card tags); "
        "without it they are redirected like everyone else; null, or a card without title, description and "
        "image_url, clears it",
    )

    rules: list[RedirectRule] | None = Field(
        default=None,
        max_length=MAX_RULES,
        description=f"Redirect rules, at most {MAX_RULES}, tried in order: the first whose conditions all hold sends "
        "the visitor to its `to`, else destination_url. A password link asks for its password first. [] or null "
        "clears them",
        examples=[RULES_EXAMPLE],
    )

    variants: list[Variant] | None = Field(
        default=None,
        min_length=2,
        max_length=MAX_VARIANTS,
        description=f"Weighted variants of the destination (an A/B split), 2 to {MAX_VARIANTS}: a visitor no rule "
        "sends elsewhere goes to one of them instead of destination_url, drawn by weight and kept for the day (a keyed "
        "hash of the visitor under the day's salt; nothing is stored). Each click records its variant. [] or null "
        "clears them",
        examples=[VARIANTS_EXAMPLE],
    )

    @field_validator("variants", mode="before")
    @classmethod
    def _no_variants(cls, variants: Any) -> Any:
        """[] clears the variants, as null does."""
        return None if variants == [] else variants

    @field_validator("rules", mode="after")
    @classmethod
    def _no_empty_rules(cls, rules: list[RedirectRule] | None) -> list[RedirectRule] | None:
        """No rules are stored and answered as null."""
        return rules or None

    @field_validator("preview", mode="after")
    @classmethod
    def _no_empty_card(cls, preview: Preview | None) -> Preview | None:
        """A card with nothing on it is no card: stored and answered as null, so crawlers are redirected."""
        return None if preview is not None and preview.is_empty() else preview


class LinkCreate(LinkUpdate):
    destination_url: Destination
    visibility: VisibilityField = Visibility.PUBLIC
    auto_meta: bool = Field(
        default=False,
        strict=True,  # JSON true or false, not "0" or 1: what the schema says is what is accepted
        description="true: fetch the destination page's title and description "
        "(explicit fields win; a failed fetch never fails the create: the answer's meta_error says what failed)",
    )


# Fields of an update that cannot be cleared with null.
NOT_NULLABLE = ("destination_url", "slug", "visibility", "password", "archived")


def non_null_fields(data: dict[str, Any]) -> list[str]:
    """Fields of an update body that were sent as null but cannot be cleared."""
    return [name for name in NOT_NULLABLE if name in data and data[name] is None]


class PageParams(_Strict):
    page: int = Field(
        default=1, ge=1, le=MAX_PAGE, description="Page number, from 1; a page past the end returns an empty data list"
    )
    per: int = Field(default=20, ge=1, le=MAX_PER, description=f"Items per page, 1-{MAX_PER}")


class ListParams(PageParams):
    q: str | None = Field(
        default=None,
        max_length=MAX_QUERY,
        description=(
            "Search: every whitespace-separated term must match (case- and accent-insensitive) somewhere in slug, "
            "title, destination_url, description, note or hashtags; a term '#tag' matches hashtags only"
        ),
    )
    sort: SortField = Field(default="created_at", description="Field to sort by")
    dir: Direction = Field(default="desc", description="Sort direction")
    status: LinkStatus | None = Field(
        default=None,
        description="Only links in this state: active, expired (past expires_at), limit_reached (max_clicks used "
        "up) or archived",
    )
    archived: bool | None = Field(
        default=None,
        description="true: only archived links; false (the default without status): archived links are left out",
    )

    def lifecycle(self) -> bool:
        """Whether the list is filtered by its links' state beyond leaving out archived ones."""
        return self.status is not None or self.archived is not None


class Credentials(_Strict):
    username: str = Field(
        min_length=MIN_USERNAME,
        max_length=MAX_USERNAME,
        pattern=r"^[A-Za-z0-9_-]+$",
        description=f"{MIN_USERNAME}-{MAX_USERNAME} of a-z 0-9 _ -, stored lowercase",
    )
    password: str = Field(
        min_length=MIN_PASSWORD, max_length=MAX_PASSWORD, description=f"At least {MIN_PASSWORD} characters"
    )


class Login(_Strict):
    username: str = Field(max_length=MAX_PASSWORD)
    password: str = Field(max_length=MAX_PASSWORD)


class PasswordChange(_Strict):
    current_password: str = Field(max_length=MAX_PASSWORD, description="The account's password now")
    new_password: str = Field(
        min_length=MIN_PASSWORD, max_length=MAX_PASSWORD, description=f"At least {MIN_PASSWORD} characters"
    )


class PasswordReset(_Strict):
    """An operator's new password for an account (`slugline accounts reset-password`): no current password."""

    new_password: str = Field(
        min_length=MIN_PASSWORD, max_length=MAX_PASSWORD, description=f"At least {MIN_PASSWORD} characters"
    )


class KeyRequest(_Strict):
    scope: KeyScope = Field(description="full: every link; public: only public and unlisted links")


class SearchParams(_Strict):
    q: str = Field(
        min_length=1,
        max_length=MAX_QUERY,
        description="Search terms; prefix matching, one typo allowed in terms of 5 or more characters",
    )
    limit: int = Field(default=20, ge=1, le=MAX_SEARCH_LIMIT, description=f"Hits to return, 1-{MAX_SEARCH_LIMIT}")


class LinkName(_Strict):
    """One of the caller's links, named one way: by id, by slug or by short URL (whose last path segment is the
    slug)."""

    id: str | None = Field(
        default=None, max_length=MAX_SLUG, description="The link's id (lnk_...), as list_links or create_link return it"
    )
    slug: str | None = Field(default=None, max_length=MAX_SLUG, description="The link's slug (case-sensitive)")
    short_url: str | None = Field(
        default=None,
        max_length=MAX_URL,
        description="The link's short URL, such as https://host/slug: its last path segment is the slug",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> LinkName:
        given = [name for name in ("id", "slug", "short_url") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of id, slug or short_url")
        if self.short_url is not None:
            parts = urlsplit(self.short_url)
            if parts.scheme.lower() not in ("http", "https") or not parts.netloc or not parts.path.strip("/"):
                raise ValueError("short_url must be an http(s) URL whose path ends with the slug")
        return self

    def name(self) -> tuple[str, str]:
        """("id", the id) or ("slug", the slug, given or read off the short URL)."""
        if self.id is not None:
            return "id", self.id
        if self.slug is not None:
            return "slug", self.slug
        return "slug", urlsplit(self.short_url or "").path.rstrip("/").rsplit("/", 1)[-1]


def check_page_url(url: str) -> str:
    if not _PAGE_URL.fullmatch(url):
        raise ValueError(
            "url must be an http(s) URL with an ASCII host name (labels of 1-63 characters) or IPv4 address, then a "
            "printable path"
        )
    return url


class AnalyzeParams(_Strict):
    url: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_URL,
            description="The public http(s) URL to look at",
            json_schema_extra={"pattern": patterns.PAGE_URL},
        ),
        AfterValidator(check_page_url),
    ]


Interval = Literal["hour", "day", "week", "month"]
Device = Literal["desktop", "mobile", "tablet", "other"]
DEFAULT_DAYS = 30
MAX_HOURLY_DAYS = 7  # an hourly series longer than a week is more bars than a chart can show


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


class ClickFilters(_Strict):
    """Which clicks count: every filter given must hold (AND); values match case-insensitively."""

    source: str | None = Field(
        default=None,
        max_length=MAX_SOURCE,
        description=(
            "Only clicks from this source: 'direct', 'qr', a utm_source value or a referrer host such as "
            "'news.ycombinator.com'"
        ),
    )
    device: Annotated[Device | None, BeforeValidator(_lower)] = Field(
        default=None, description="Only clicks from this kind of device"
    )
    browser: str | None = Field(default=None, max_length=MAX_BROWSER, description="Only clicks from this browser")
    os: str | None = Field(default=None, max_length=MAX_OS, description="Only clicks from this operating system")
    referrer: str | None = Field(
        default=None, max_length=MAX_REFERRER, description="Only clicks whose referrer host is this one"
    )
    country: str | None = Field(
        default=None,
        pattern=r"^\s*[A-Za-z]{2}\s*$",
        description="Only clicks from this country (ISO 3166-1 alpha-2, e.g. FR)",
        examples=["FR"],
    )
    city: str | None = Field(
        default=None, max_length=MAX_PLACE, description="Only clicks from this city, as the GeoIP database names it"
    )
    variant: int | None = Field(
        default=None,
        ge=0,
        lt=MAX_VARIANTS,
        description="Only clicks sent to this variant of a link's A/B split (its index in the link's `variants`, "
        "from 0). The account's analytics refuse it (their roll-ups keep no variants); the click exports take it",
    )

    def filters(self) -> dict[str, str]:
        """The filters given, lowercased and stripped, empty ones left out; a variant as its index in decimal."""
        given = {name: getattr(self, name) for name in FILTERS}
        shown = {name: str(value).strip().lower() for name, value in given.items() if value is not None}
        return {name: value for name, value in shown.items() if value}


FILTERS = ("source", "device", "browser", "os", "referrer", "country", "city", "variant")


class PeriodParams(ClickFilters):
    """A period of whole UTC days: the last `days` days, or `from`-`to` (both included), at most a year."""

    days: int | None = Field(
        default=None,
        ge=1,
        le=MAX_DAYS,
        description=f"How many days back to count, 1-{MAX_DAYS}, ending today (UTC); {DEFAULT_DAYS} without from",
    )
    from_: date | None = Field(
        default=None, alias="from", description="First day counted (ISO date, UTC); instead of `days`"
    )
    to: date | None = Field(default=None, description="Last day counted (ISO date, UTC); default today")

    @model_validator(mode="after")
    def _one_period(self) -> PeriodParams:
        if self.days is not None and (self.from_ is not None or self.to is not None):
            raise ValueError("give either days or from/to, not both")
        if self.to is not None and self.from_ is None:
            raise ValueError("to needs from")
        if self.from_ is not None:
            last = self.to or utcnow().date()
            if self.from_ > last:
                raise ValueError("from must not be after to")
            if (last - self.from_).days + 1 > MAX_DAYS:
                raise ValueError(f"a period is at most {MAX_DAYS} days")
        return self

    def period(self) -> tuple[date, date]:
        """(first, last) day counted, both included."""
        if self.from_ is not None:
            return self.from_, self.to or utcnow().date()
        last = utcnow().date()
        return last - timedelta(days=(self.days or DEFAULT_DAYS) - 1), last


class AnalyticsParams(PeriodParams):
    interval: Interval = Field(
        default="day", description=f"Bucket of the series; 'hour' for periods of up to {MAX_HOURLY_DAYS} days"
    )

    @model_validator(mode="after")
    def _hourly_is_short(self) -> AnalyticsParams:
        first, last = self.period()
        if self.interval == "hour" and (last - first).days + 1 > MAX_HOURLY_DAYS:
            raise ValueError(f"interval hour needs a period of at most {MAX_HOURLY_DAYS} days")
        return self


class ExportParams(PeriodParams):
    format: Literal["csv", "ndjson"] = Field(
        default="csv", description="CSV with a header row, or one JSON object a line"
    )


class QrParams(_Strict):
    format: Literal["png", "svg"] = Field(default="png", description="Image format")
    size: int = Field(default=256, ge=MIN_QR_SIZE, le=MAX_QR_SIZE, description="Width and height in pixels")
    margin: int = Field(default=4, ge=0, le=MAX_QR_MARGIN, description="Quiet zone around the code, in modules")


def properties(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON-schema properties with every `$ref` inlined and pydantic's generated titles dropped."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]])
                target.pop("title", None)
                return inline({**target, **{k: v for k, v in node.items() if k != "$ref"}})
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    props: dict[str, Any] = inline(schema.get("properties", {}))
    for prop in props.values():
        prop.pop("title", None)
        for branch in prop.get("anyOf", ()):  # `X | None` keeps X's help inside its branch: hoist it
            if "description" in branch:
                prop.setdefault("description", branch.pop("description"))
    return props


def update_properties() -> dict[str, Any]:
    """LinkUpdate's fields without defaults (a field left out stays as it is); null only where it clears."""
    props = properties(LinkUpdate)
    for name, prop in props.items():
        prop.pop("default", None)
        if name in NOT_NULLABLE and "anyOf" in prop:
            [kept] = [branch for branch in prop.pop("anyOf") if branch.get("type") != "null"]
            prop.update(kept)
    return props


def object_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model as one self-contained JSON-schema object (no `$defs`), unknown fields refused."""
    schema: dict[str, Any] = {"type": "object", "properties": properties(model), "additionalProperties": False}
    required = model.model_json_schema().get("required")
    if required:
        schema["required"] = required
    return schema
