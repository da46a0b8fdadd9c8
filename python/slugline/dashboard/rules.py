"""A link's redirect rules in the dashboard's form: one rule a line, `country=FR,BE device=mobile -> https://...`.

The text becomes the list `rules` takes (`common.rules`), and a link's rules become the text again, so the form
shows what the API holds; the service checks the values and its messages (`rules.0.if.country: ...`) appear next to
the field. A line that is not of that shape is named here, by its number, before anything is sent.
"""

from __future__ import annotations

from typing import Any

from slugline.common.errors import Invalid
from slugline.common.rules import rules_text as text_of

CONDITIONS = ("country", "device", "os", "browser", "language")
__all__ = ["EXAMPLE", "VARIANTS_EXAMPLE", "rules_of", "text_of", "variants_of", "variants_text"]
VARIANTS_EXAMPLE = "70 https://example.com/a"
EXAMPLE = "country=FR,BE device=mobile -> https://example.com/fr"
MAX_TEXT = 64 * 1024  # characters of the field read: 20 rules of long URLs fit many times over


def rules_of(text: str) -> list[dict[str, Any]] | None:
    """The rules the field's text says (blank: none)."""
    rules: list[dict[str, Any]] = []
    lines = [line.strip() for line in text[:MAX_TEXT].splitlines()]
    for number, line in enumerate(lines, 1):
        if not line:
            continue
        conditions, arrow, to = line.partition("->")
        if not arrow or not to.strip():
            raise Invalid(f"rules: line {number} must read like `{EXAMPLE}`")
        when: dict[str, list[str]] = {}
        for part in conditions.split():
            name, equals, values = part.partition("=")
            if not equals or name not in CONDITIONS:
                raise Invalid(f"rules: line {number}: '{part[:40]}' is not one of {', '.join(CONDITIONS)}=values")
            when.setdefault(name, []).extend(value for value in values.split(",") if value)
        rules.append({"if": when, "to": to.strip()})
    return rules or None


def variants_of(text: str) -> list[dict[str, Any]] | None:
    """The variants the field's text says, one a line, `WEIGHT URL` (blank: none). A weight that is not a number is
    sent as typed, for the service to name the rule."""
    variants: list[dict[str, Any]] = []
    for number, line in enumerate((line.strip() for line in text[:MAX_TEXT].splitlines()), 1):
        if not line:
            continue
        weight, _, to = line.partition(" ")
        if not to.strip():
            raise Invalid(f"variants: line {number} must read like `{VARIANTS_EXAMPLE}`")
        variants.append({"to": to.strip(), "weight": int(weight) if weight.isdigit() else weight})
    return variants or None


def variants_text(variants: list[dict[str, Any]] | None) -> str:
    """A link's variants as the field shows them."""
    return "\n".join(f"{variant['weight']} {variant['to']}" for variant in variants or ())
