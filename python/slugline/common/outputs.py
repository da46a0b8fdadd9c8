"""Response models: the REST JSON, described once for the OpenAPI document and the MCP tools' output schemas.

Handlers return the service layer's dicts as orjson responses (no validation cost on the hot path); these models only
document them. `extra="allow"` keeps any field the JSON gains later, so MCP can never drop one silently.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from slugline.common.inputs import Interval
from slugline.common.visibility import Visibility

UTC = "UTC, ISO 8601"
Timestamp = Annotated[str, Field(description=UTC, json_schema_extra={"format": "date-time"})]
Day = Annotated[str, Field(json_schema_extra={"format": "date"})]
ShortUrl = Annotated[str, Field(description="The short URL to share", json_schema_extra={"format": "uri"})]
Plan = Literal["free", "developer", "pro"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Error(BaseModel):
    error: str = Field(description="What went wrong, for a human; names the field and the rule")


def _preview_fields(schema: dict[str, Any]) -> None:
    schema["properties"] = {
        "title": {"type": "string", "description": "The card's title"},
        "description": {"type": "string", "description": "The card's text under the title"},
        "image_url": {"type": "string", "description": "The card's image"},
    }


class LinkPreview(_Open):
    """The social card: the fields that were set (documented, not fields, so none is written as null)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_preview_fields)


class RuleConditions(_Open):
    """The conditions given (each a list of accepted values); the others are left out."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra=lambda schema: schema.update(
            properties={
                name: {"type": "array", "items": {"type": "string"}}
                for name in ("country", "device", "os", "browser", "language")
            }
        ),
    )


class RedirectRule(_Open):
    when: RuleConditions = Field(alias="if", description="What must hold (all of it)")
    to: str = Field(description="Where a visitor it holds for is sent")


class Variant(_Open):
    to: str = Field(description="Where a visitor drawn for this variant is sent")
    weight: int = Field(description="Its weight: its share is the weight over the sum of the link's weights")


class Link(_Open):
    id: str = Field(description="lnk_ + 11 base62 characters; pass it to update_link and delete_link")
    slug: str
    short_url: ShortUrl
    destination_url: str = Field(description="Where the short link redirects: an http(s) URL, as it was given")
    title: str | None
    description: str | None
    note: str | None = Field(description="Private note, never shown to visitors")
    hashtags: list[str]
    visibility: Visibility
    clicks: int = Field(description="Human clicks so far (bots excluded)")
    created_at: Timestamp
    updated_at: Timestamp
    expires_at: Timestamp | None = Field(description="When the link stops redirecting (UTC), or null")
    max_clicks: int | None = Field(description="How many visitors the link lets through, or null for no limit")
    expired_url: str | None = Field(description="Where an expired or used-up link sends visitors, or null (410)")
    archived: bool = Field(description="An archived link answers visitors 404 and is left out of lists by default")
    preview: LinkPreview | None = Field(description="The card link-preview crawlers get, or null")
    rules: list[RedirectRule] | None = Field(
        default=None, description="Redirect rules, tried in order (the first that holds picks `to`), or null"
    )
    variants: list[Variant] | None = Field(
        default=None, description="Weighted variants of the destination (an A/B split), or null"
    )
    status: Literal["active", "expired", "limit_reached", "archived"] = Field(
        description="active; expired (past expires_at); limit_reached (max_clicks used up); archived"
    )


META_ERROR = {
    "type": "string",
    "description": "Only when auto_meta was asked for and the page could not be read: what failed (a refused "
    "address, a timeout, a host that does not resolve). Absent otherwise; the link is made all the same.",
}


def _with_meta_error(schema: dict[str, Any]) -> None:
    schema["properties"]["meta_error"] = META_ERROR


class NewLink(Link):
    """The created link, with meta_error when auto_meta could not read the page."""

    # `meta_error` is documented, not a field, so an answer without it stays without it (a field with a default would
    # be written as null into MCP's structured content, and REST and MCP would differ).
    model_config = ConfigDict(extra="allow", populate_by_name=True, json_schema_extra=_with_meta_error)


class Pagination(_Open):
    page: int
    per: int
    total: int = Field(description="Items matching the query, over all pages")
    pages: int


class LinkPage(_Open):
    data: list[Link]
    pagination: Pagination


class Deleted(_Open):
    deleted: bool
    id: str


class Me(_Open):
    username: str
    plan: Plan = Field(description="free, developer or pro")
    scope: Literal["full", "public", "session"] = Field(
        description="full: every link; public: only public and unlisted links; session: a login"
    )
    created_at: Timestamp


class DayClicks(_Open):
    date: str = Field(
        description="Start of the bucket (UTC): YYYY-MM-DD for a day, a week (its Monday) or a month (its 1st); "
        "YYYY-MM-DDTHH:00:00Z for an hour"
    )
    clicks: int


class DeviceClicks(_Open):
    device: str = Field(description="desktop, mobile, tablet, other, or (other) for the rest")
    clicks: int


class BrowserClicks(_Open):
    browser: str
    clicks: int


class OsClicks(_Open):
    os: str
    clicks: int


class SourceClicks(_Open):
    source: str
    clicks: int


class ReferrerClicks(_Open):
    referrer: str = Field(description="The referring page's host")
    clicks: int


class CountryClicks(_Open):
    country: str = Field(description="ISO 3166-1 alpha-2 code")
    clicks: int


class CityClicks(_Open):
    city: str = Field(description="As the GeoIP database names it (English), or (other) for the rest")
    clicks: int


class TopLink(_Open):
    id: str
    slug: str
    title: str | None
    clicks: int


TOP = "The 20 most frequent, most clicked first, then one '(other)' row with the clicks of the rest"


class VariantClicks(_Open):
    variant: int = Field(description="The variant's index in the link's `variants`")
    to: str
    weight: int
    clicks: int = Field(description="Clicks sent to it in the period (bots left out), following every filter")
    unique_visitors: int = Field(
        description="Its distinct visitors per UTC day, summed over the period (a visitor keeps one variant all day), "
        "following every filter"
    )


class Analytics(_Open):
    """Clicks of the period, bots left out; every figure follows the filters."""

    days: int = Field(description="Days in the period, both ends included")
    from_: Day = Field(alias="from", description="First day counted (UTC)")
    to: Day = Field(description="Last day counted (UTC)")
    interval: Interval = Field(description="Bucket of the clicks series")
    source: str | None = Field(description="The source filter as applied (lowercased), or null")
    device: str | None = Field(description="The device filter as applied, or null")
    browser: str | None = Field(description="The browser filter as applied (lowercased), or null")
    os: str | None = Field(description="The operating system filter as applied (lowercased), or null")
    referrer: str | None = Field(description="The referrer filter as applied (lowercased), or null")
    country: str | None = Field(description="The country filter as applied (upper case), or null")
    city: str | None = Field(description="The city filter as applied (lowercased), or null")
    variant: int | None = Field(description="The variant filter as applied (an index), or null")
    total_clicks: int
    unique_visitors: int = Field(
        description="Distinct visitors per UTC day, summed over the period (a visitor counts once a day); exact up to "
        "1,024 visitors a day, an estimate with a standard error of 1.6% above"
    )
    clicks: list[DayClicks] = Field(description="One entry per bucket of the interval, zero-filled, oldest first")
    devices: list[DeviceClicks] = Field(description=TOP)
    browsers: list[BrowserClicks] = Field(description=TOP)
    operating_systems: list[OsClicks] = Field(description=TOP)
    sources: list[SourceClicks] = Field(description=TOP)
    referrers: list[ReferrerClicks] = Field(description=TOP)
    countries: list[CountryClicks] = Field(
        description="Clicks per country, most first (every country; clicks whose country is unknown are left out)"
    )
    cities: list[CityClicks] = Field(description=TOP + " (cities are known from a City GeoIP database only)")
    top_links: list[TopLink] = Field(description="At most 10, most clicked first")
    variants: list[VariantClicks] | None = Field(
        description="A link's analytics: each of its variants (A/B split, as the link has them now) with its clicks "
        "and unique visitors, from the roll-ups like every breakdown (so they follow the period and filters and "
        "outlive the click log's retention); null for a link without variants and for the account's analytics",
    )


class Account(_Open):
    username: str
    plan: Plan
    created_at: Timestamp


class Session(_Open):
    account: Account
    token: str = Field(description="Session token (svc_sess_...): authenticates /me, /api-key and /auth/logout only")
    expires_at: Timestamp


class Key(_Open):
    scope: Literal["full", "public"]
    prefix: str
    last4: str
    created_at: Timestamp
    last_used_at: Timestamp | None


class KeyList(_Open):
    keys: list[Key]


class NewKey(Key):
    key: str = Field(description="The secret: shown this once, never again")


class KeyDeleted(_Open):
    deleted: bool
    scope: Literal["full", "public"]


class LoggedOut(_Open):
    """The session token is revoked: a request that carries it from now on is 401."""

    logged_out: Literal[True]


class ClickBuffer(_Open):
    """This worker's click buffer (each worker has its own; a request reaches one of them)."""

    pending: int = Field(ge=0, description="Clicks recorded and not yet written to the database")
    dropped: int = Field(
        ge=0,
        description="Clicks lost since the worker started: the buffer was at its byte budget, or the database "
        "refused them one by one while it answered (never while it was unreachable)",
    )


class Health(_Open):
    """The service answers: its version, whether its database does, and the answering worker's click buffer."""

    status: Literal["ok", "degraded"]
    version: str
    database: Literal["ok", "unavailable"]
    clicks: ClickBuffer


class Probe(_Open):
    """The liveness or readiness probe's yes (no: 503 with an error naming the cause, readiness only)."""

    status: Literal["ok"]


class Click(_Open):
    clicked_at: Timestamp
    device: Literal["desktop", "mobile", "tablet", "bot", "other"]
    browser: str | None
    os: str | None
    source: str | None
    referrer: str | None
    country: str | None = Field(default=None, description="ISO 3166-1 alpha-2, or null when unknown")
    region: str | None = Field(default=None, description="From a City GeoIP database, or null")
    city: str | None = Field(default=None, description="From a City GeoIP database, or null")
    variant: int | None = Field(
        default=None,
        description="The index (from 0) of the link's variant the click was sent to; null when the link had no "
        "variants or a rule sent it elsewhere",
    )


class ClickPage(_Open):
    data: list[Click]
    pagination: Pagination


class PublicLink(_Open):
    """A public or unlisted link in full; a password link only as slug, short_url, visibility, requires_password."""

    slug: str
    short_url: ShortUrl
    visibility: Visibility
    destination_url: str | None = None
    title: str | None = None
    description: str | None = None
    hashtags: list[str] | None = None
    created_at: Timestamp | None = None
    requires_password: bool | None = None


class Hit(_Open):
    link: Link
    score: float
    highlights: dict[str, str] = Field(description="Field name to its text with <mark>...</mark> around matches")


class SearchResult(_Open):
    query: str
    total: int
    hits: list[Hit]


class PageInfo(_Open):
    url: str
    final_url: str | None
    status: int | None
    content_type: str | None
    title: str | None
    description: str | None
    image: str | None
    favicon: str | None
    site_name: str | None
    redirects: list[str]
    reachable: bool
    fetch_error: str | None = Field(default=None, description="Why the page could not be fetched (reachable: false)")


class Webhook(_Open):
    """A webhook endpoint. `disabled_reason` says why an endpoint was turned off (24 h of failed deliveries)."""

    id: str
    url: str
    description: str | None
    events: list[str]
    enabled: bool
    disabled_reason: str | None
    failing_since: Timestamp | None
    created_at: Timestamp
    updated_at: Timestamp


class NewWebhook(Webhook):
    secret: str = Field(description="The signing secret (whsec_...): shown this once, never again")


class WebhookList(_Open):
    data: list[Webhook]


class WebhookDeleted(_Open):
    deleted: bool
    id: str


class WebhookAttempt(_Open):
    id: int
    message_id: str = Field(description="The webhook-id header: the same on every try of one event")
    type: str
    attempted_at: Timestamp
    status: int | None = Field(description="The endpoint's HTTP status; null when no answer came")
    error: str | None
    duration_ms: int


class WebhookAttemptList(_Open):
    data: list[WebhookAttempt]


class WebhookResent(_Open):
    message_id: str
    queued: bool
