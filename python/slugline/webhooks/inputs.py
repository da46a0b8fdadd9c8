"""What a webhook endpoint's create and update bodies may hold, checked by the service (REST and dashboard alike)."""

from __future__ import annotations

from typing import Annotated, Literal, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, ValidationInfo, field_validator

from slugline.common import patterns
from slugline.common.bounds import MAX_URL
from slugline.common.inputs import check_page_url

EventType = Literal["link.created", "link.updated", "link.deleted", "link.expired", "link.clicked"]
EVENTS: tuple[str, ...] = ("link.created", "link.updated", "link.deleted", "link.expired", "link.clicked")
MAX_DESCRIPTION = 200
# As /analyze's url (the same fetcher's rules): its address is checked at each delivery, as a name may move.
EndpointUrl = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_URL,
        description="Where deliveries are POSTed: an http(s) URL with an ASCII host name or IPv4 address, whose "
        "addresses must be public (checked at each delivery)",
        json_schema_extra={"pattern": patterns.PAGE_URL},
    ),
    AfterValidator(check_page_url),
]


def _no_nul(value: object, info: ValidationInfo) -> object:
    """NUL cannot be stored (PostgreSQL refuses it in text), so it is refused on the way in."""
    if isinstance(value, str) and "\x00" in value:
        raise ValueError(f"{info.field_name} must not contain NUL characters")
    return value


class WebhookCreate(BaseModel):
    """A new endpoint: the URL deliveries are POSTed to and the events it hears (all of them when left out)."""

    model_config = ConfigDict(extra="forbid")

    url: EndpointUrl
    events: list[EventType] = Field(
        default_factory=lambda: cast(list[EventType], list(EVENTS)),
        min_length=1,
        max_length=len(EVENTS),
        description="The events to deliver; link.clicked comes in batches of up to 100 clicks",
    )
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION, description="A note for people")

    _text = field_validator("url", "description", mode="before")(_no_nul)


class WebhookUpdate(BaseModel):
    """The fields to change (null, or left out: unchanged; description null clears it). `enabled: true` turns a
    disabled endpoint back on: what waited is delivered then."""

    model_config = ConfigDict(extra="forbid")

    url: EndpointUrl | None = None
    events: list[EventType] | None = Field(default=None, min_length=1, max_length=len(EVENTS))
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION)
    enabled: StrictBool | None = None

    _text = field_validator("url", "description", mode="before")(_no_nul)
