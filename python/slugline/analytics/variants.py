"""A link's clicks and unique visitors per variant (its A/B split) over a period, from the roll-up cubes: the variant
is one of their dimensions (`rust_core/cube/`, format version 3), so these figures follow the period and every filter
as the other breakdowns do, outlive the click log's retention, and cost what the period's days cost, not its clicks.

A visitor is sent to one variant all day (`redirects.routing`), so a day's variants partition its visitors as its
devices do: a variant's unique visitors are summed over its days like the link's. Variants are listed as the link has
them now, each with its figures (0 if none); clicks counted for a variant the link no longer has (it was edited) are
left out, and so are clicks counted before the link had variants or before the cubes kept them (migration 0021 fills
in those still in the click log).
"""

from __future__ import annotations

from typing import Any

import orjson

from slugline.common.models import Link


def variant_figures(link: Link, answer: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Each of the link's variants with its clicks and unique visitors in `answer` (`_core.analyse` of the link's
    cubes); None: it has none."""
    variants: list[dict[str, Any]] | None = (
        orjson.loads(link.variants) if isinstance(link.variants, str) else link.variants
    )
    if not variants:
        return None
    clicks = {int(index): int(n) for index, n in answer["breakdowns"]["variant"]}
    visitors: dict[int, float] = answer["variant_visitors"]
    return [
        {
            "variant": n,
            "to": variant["to"],
            "weight": variant["weight"],
            "clicks": clicks.get(n, 0),
            "unique_visitors": round(visitors.get(n, 0.0)),
        }
        for n, variant in enumerate(variants)
    ]
