"""A link's clicks per variant (its A/B split) over a period, from the click log: each click row records the index of
the variant its visitor was sent to (migration 0018, `redirects.routing`).

Counted off the click log's index (link_id, clicked_at) with one grouped range scan of the link's clicks in the
period, bots left out, as the other figures leave them out. The cubes do not keep variants, so the period's other
filters (device, country, ...) do not apply here, and clicks older than the click log's retention are not counted.
Variants are listed as the link has them now, each with its clicks (0 if none); clicks recorded for a variant the
link no longer has (it was edited) are left out.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import orjson
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slugline.common.models import Click, Link


def variant_clicks(session: Session, link: Link, first: date, last: date) -> list[dict[str, Any]] | None:
    """Each of the link's variants with its clicks in the period (first to last, UTC days); None: it has none."""
    variants: list[dict[str, Any]] | None = (
        orjson.loads(link.variants) if isinstance(link.variants, str) else link.variants
    )
    if not variants:
        return None
    floor = datetime.combine(first, time.min, tzinfo=UTC)
    until = datetime.combine(last + timedelta(days=1), time.min, tzinfo=UTC)
    counted: dict[int, int] = {
        int(variant or 0): int(n)
        for variant, n in session.execute(
            select(Click.variant, func.count())
            .where(
                Click.link_id == link.id,
                Click.clicked_at >= floor,
                Click.clicked_at < until,
                Click.variant.is_not(None),
                Click.device != "bot",
            )
            .group_by(Click.variant)
        )
    }
    return [
        {"variant": n, "to": variant["to"], "weight": variant["weight"], "clicks": counted.get(n, 0)}
        for n, variant in enumerate(variants)
    ]
