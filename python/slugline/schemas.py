"""Input models shared by REST and MCP: every bound from DESIGN.md lives here, once."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from slugline import _core
from slugline.qr import MAX_MARGIN, MAX_SIZE, MIN_SIZE

Visibility = Literal["public", "unlisted", "private", "password"]
SortField = Literal["created_at", "updated_at", "title", "slug", "clicks"]
Direction = Literal["asc", "desc"]
KeyScope = Literal["full", "public"]
HIDDEN_VISIBILITIES = frozenset({"private", "password"})
MAX_URL = 2048
MAX_TAGS = 30


def check_destination(url: str) -> str:
    url = url.strip()
    if len(url) > MAX_URL:
        raise ValueError(f"destination_url must be at most {MAX_URL} characters")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise ValueError("destination_url must not contain whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"destination_url is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("destination_url must be an absolute http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("destination_url must not contain credentials")
    del port
    return url


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
        tag = raw.strip().lstrip("#").lower()
        if not 1 <= len(tag) <= 64:
            raise ValueError("hashtags must each be 1-64 characters (after '#' is stripped)")
        if any(c.isspace() for c in tag):
            raise ValueError(f"hashtag '{tag}' must not contain whitespace")
        seen.setdefault(tag)
    return list(seen)


Destination = Annotated[str, Field(min_length=1), AfterValidator(check_destination)]
Slug = Annotated[str, AfterValidator(check_slug)]
Hashtags = Annotated[list[str], AfterValidator(check_hashtags)]
LinkPassword = Annotated[str, Field(min_length=4, max_length=128)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul(cls, value: Any, info: ValidationInfo) -> Any:
        """NUL cannot be stored (PostgreSQL refuses it in text), so it is refused on the way in."""
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, str) and "\x00" in item for item in items):
            raise ValueError(f"{info.field_name} must not contain NUL characters")
        return value


class LinkUpdate(_Strict):
    """Any subset of the link's fields; `null` clears title, description, note and hashtags."""

    destination_url: Destination | None = None
    slug: Slug | None = None
    title: Annotated[str, Field(max_length=255)] | None = None
    description: Annotated[str, Field(max_length=1024)] | None = None
    note: Annotated[str, Field(max_length=4096)] | None = None
    hashtags: Hashtags | None = None
    visibility: Visibility | None = None
    password: LinkPassword | None = None


class LinkCreate(LinkUpdate):
    destination_url: Destination
    visibility: Visibility = "public"
    auto_meta: bool = False


class PageParams(_Strict):
    page: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    per: Annotated[int, Field(ge=1, le=100)] = 20


class ListParams(PageParams):
    q: Annotated[str, Field(max_length=512)] | None = None
    sort: SortField = "created_at"
    dir: Direction = "desc"


class Credentials(_Strict):
    username: Annotated[str, Field(min_length=3, max_length=32, pattern=r"^[A-Za-z0-9_-]+$")]
    password: Annotated[str, Field(min_length=8, max_length=1024)]


class Login(_Strict):
    username: Annotated[str, Field(max_length=1024)]
    password: Annotated[str, Field(max_length=1024)]


class KeyRequest(_Strict):
    scope: KeyScope


NOT_NULLABLE = ("destination_url", "slug", "visibility", "password")


def non_null_fields(data: dict[str, Any]) -> list[str]:
    """Fields of an update body that were sent as null but cannot be cleared."""
    return [name for name in NOT_NULLABLE if name in data and data[name] is None]


class SearchParams(_Strict):
    q: Annotated[str, Field(min_length=1, max_length=512)]
    limit: Annotated[int, Field(ge=1, le=100)] = 20


class AnalyzeParams(_Strict):
    url: Annotated[str, Field(min_length=1, max_length=MAX_URL)]


class AnalyticsParams(_Strict):
    days: Annotated[int, Field(ge=1, le=365)] = 30
    source: Annotated[str, Field(max_length=255)] | None = None


class QrParams(_Strict):
    format: Literal["png", "svg"] = "png"
    size: Annotated[int, Field(ge=MIN_SIZE, le=MAX_SIZE)] = 256
    margin: Annotated[int, Field(ge=0, le=MAX_MARGIN)] = 4
