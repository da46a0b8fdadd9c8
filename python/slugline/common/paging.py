"""The pagination block every paginated answer carries."""

from __future__ import annotations


def pagination(page: int, per: int, total: int) -> dict[str, int]:
    return {"page": page, "per": per, "total": total, "pages": (total + per - 1) // per}
