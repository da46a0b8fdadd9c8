"""Output schemas of the MCP tools: the REST JSON, described for agents.

The tools return the service layer's dicts unchanged; these models only publish `outputSchema` and check the shape
on the way out. `extra="allow"` keeps any field the REST JSON gains later, so MCP can never drop one silently.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from slugline.visibility import Visibility


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Link(_Open):
    id: str = Field(description="lnk_ + 11 base62 characters; pass it to update_link and delete_link")
    slug: str
    short_url: str = Field(description="The short URL to share")
    destination_url: str
    title: str | None
    description: str | None
    note: str | None = Field(description="Private note, never shown to visitors")
    hashtags: list[str]
    visibility: Visibility
    clicks: int = Field(description="Human clicks so far (bots excluded)")
    created_at: str = Field(description="UTC, ISO 8601")
    updated_at: str = Field(description="UTC, ISO 8601")


class Pagination(_Open):
    page: int
    per: int
    total: int = Field(description="Links matching the query, over all pages")
    pages: int


class LinkPage(_Open):
    data: list[Link]
    pagination: Pagination


class Deleted(_Open):
    deleted: bool
    id: str


class Me(_Open):
    username: str
    plan: str = Field(description="free, developer or pro")
    scope: str = Field(description="full: every link; public: only public and unlisted links")
    created_at: str


class DayClicks(_Open):
    date: str
    clicks: int


class DeviceClicks(_Open):
    device: str
    clicks: int


class SourceClicks(_Open):
    source: str
    clicks: int


class TopLink(_Open):
    id: str
    slug: str
    title: str | None
    clicks: int


class Analytics(_Open):
    days: int
    from_: str = Field(alias="from", description="First day counted (UTC)")
    to: str = Field(description="Last day counted (UTC)")
    source: str | None = Field(description="The source filter, or null for all sources")
    total_clicks: int
    unique_visitors: int
    clicks: list[DayClicks] = Field(description="One entry per day, zero-filled")
    devices: list[DeviceClicks]
    sources: list[SourceClicks]
    top_links: list[TopLink] = Field(description="At most 10, most clicked first")
