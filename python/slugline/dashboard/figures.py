"""What the two figure pages (the account's analytics and a link's page) share: the query string read as the
parameters of `analytics.service.get_analytics`, the links that add or remove one filter, and the figures themselves.

Everything is a plain GET: the period, interval and filters live in the query string, so a page can be bookmarked,
reloaded and shared, and works without script. The form sends its period choice (`days`) and its dates together:
dates, when filled, win, because they are left blank on a page of the last N days, so filling them is the only way
they get there; picking a period again on a custom range's page clears them with script (`dashboard-6.js`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args
from urllib.parse import urlencode

from markupsafe import Markup
from starlette.datastructures import QueryParams

from slugline.analytics import service as analytics
from slugline.analytics import shape
from slugline.common.bounds import MAX_DAYS
from slugline.common.errors import Invalid, ServiceError
from slugline.common.inputs import DEFAULT_DAYS, FILTERS, Interval
from slugline.dashboard.charts import clicks_chart, plural
from slugline.dashboard.session import PageError, Visitor
from slugline.dashboard.worldmap import world_map

PERIODS = (7, 30, 90, 365)
INTERVALS: tuple[str, ...] = get_args(Interval)
KEYS = ("days", "from", "to", "interval", *FILTERS)
OTHER = shape.OTHER  # the row of every entry past the top ones: not a value a filter can take


@dataclass(frozen=True)
class Figures:
    """A figure page's analytics parameters, as given (blanks left out); what its controls and links are made of."""

    query: dict[str, str]
    intervals = INTERVALS

    @classmethod
    def read(cls, params: QueryParams) -> Figures:
        query = {key: value for key in KEYS if (value := params.get(key, "").strip())}
        if "from" in query or "to" in query:
            query.pop("days", None)
        return cls(query)

    @property
    def custom(self) -> bool:
        return "from" in self.query or "to" in self.query

    @property
    def days(self) -> str:
        """The period choice to show selected: blank for a custom range."""
        return "" if self.custom else self.query.get("days", str(DEFAULT_DAYS))

    @property
    def interval(self) -> str:
        return self.query.get("interval", "day")

    @property
    def choices(self) -> list[int]:
        """The periods offered: the usual ones, and one given in the address (`?days=14`) among them."""
        given = [int(self.days)] if self.days.isdigit() and 0 < int(self.days) <= MAX_DAYS else []
        return sorted({*PERIODS, *given})

    @property
    def filters(self) -> list[tuple[str, str]]:
        return [(name, self.query[name]) for name in FILTERS if name in self.query]

    @property
    def shown_filters(self) -> list[tuple[str, str, str]]:
        """The filters as the page names them: (name, value, shown value); variants are numbered from 1 on the page,
        from 0 in the query, as in the API."""
        return [
            (name, value, str(int(value) + 1) if name == "variant" and value.isdigit() else value)
            for name, value in self.filters
        ]

    def href(self, path: str = "", changes: Mapping[str, str | None] | None = None) -> str:
        """`path` with this query string, changed: a value sets its key, None removes it."""
        query: dict[str, str | None] = {**self.query, **(changes or {})}
        return f"{path}?{urlencode({k: v for k, v in query.items() if v is not None})}"

    def adding(self, name: str, value: str) -> str | None:
        """The link that filters the page by `name` = `value`; None where that is no filter (the OTHER row, a blank
        value) or already the one applied."""
        if value in ("", OTHER) or self.query.get(name, "").lower() == value.lower():
            return None
        return self.href(changes={name: value})

    def removing(self, name: str) -> str:
        return self.href(changes={name: None})

    def unfiltered(self) -> str:
        return self.href(changes=dict.fromkeys(FILTERS))

    def chart(self, stats: dict[str, Any], subject: str = "") -> Markup:
        """The chart of the answer's series, named by its bucket first ("Clicks per day"), then what it counts."""
        period = "" if self.custom else f", last {plural(stats['days'], 'day')}"
        where = "".join(f", {name} {shown}" for name, _, shown in self.shown_filters)
        label = f"Clicks per {stats['interval']}{subject}{period}{where}"
        return clicks_chart(stats["clicks"], label, stats["interval"], (stats["from"], stats["to"]))

    def world_map(self, stats: dict[str, Any]) -> Markup:
        """The countries breakdown as a map, each country with clicks linking to the page filtered by it, as its row
        in the Countries table does; empty when no click has a country on the map."""
        return world_map(stats["countries"], lambda code: self.adding("country", code))


async def get_figures(who: Visitor, figures: Figures, link_id: str | None = None) -> tuple[dict[str, Any] | None, str]:
    """The analytics of the page's query, or (None, the message) for parameters the service refuses (422), which
    the page shows beside its controls; any other refusal (a rate limit, a link gone) is the error page."""
    try:
        return await analytics.get_analytics(who.rt, who.owner(), figures.query, link_id), ""
    except Invalid as exc:
        return None, exc.message
    except ServiceError as exc:
        raise PageError.of(exc) from None
