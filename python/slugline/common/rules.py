"""The input shape of a link's redirect rules: `[{"if": {country?, device?, os?, browser?, language?}, "to": URL}]`.

Each condition is a list of values, and holds when the visitor's value is one of them; every condition of a rule
must hold; the first rule that holds picks the destination, else the link's `destination_url`. The values a rule
may name are the ones the Rust core's classification gives (`_core.DEVICES`, `_core.BROWSERS`, `_core.SYSTEMS`),
so a misspelt one is refused rather than never matching. Evaluated on the redirect path by `_core.RedirectRules`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from slugline import _core

MAX_RULES = 20
MAX_VALUES = 50  # values in one condition (the core takes up to 300)
_COUNTRY = re.compile(r"[A-Za-z]{2}")
_LANGUAGE = re.compile(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*")


def _named(value: str, known: frozenset[str], field: str) -> str:
    """`value` as the classification spells it (matched ignoring case)."""
    lowered = value.strip().lower()
    for name in known:
        if name.lower() == lowered:
            return name
    raise ValueError(f"{field} must be one of: {', '.join(sorted(known))}")


def _values(description: str) -> Any:
    return Field(default=None, min_length=1, max_length=MAX_VALUES, description=description)


class Conditions(BaseModel):
    """What must hold for a rule: each given condition is a list of accepted values."""

    model_config = ConfigDict(extra="forbid")

    country: list[Annotated[str, Field(max_length=2)]] | None = _values(
        "Countries (ISO 3166-1 alpha-2, e.g. FR) the visitor may be in: from a trusted CDN's header or the GeoIP "
        "database; a visitor whose country is unknown matches no country rule"
    )
    device: list[str] | None = _values(f"Devices: {', '.join(sorted(_core.DEVICES))}")
    os: list[str] | None = _values(f"Operating systems: {', '.join(sorted(_core.SYSTEMS))}")
    browser: list[str] | None = _values(f"Browsers: {', '.join(sorted(_core.BROWSERS))}")
    language: list[Annotated[str, Field(max_length=35)]] | None = _values(
        "Languages (BCP 47, e.g. fr or fr-CA) matched against the visitor's most preferred one (Accept-Language); "
        "fr also takes fr-CA"
    )

    @field_validator("country", mode="after")
    @classmethod
    def _countries(cls, values: list[str] | None) -> list[str] | None:
        if values is not None and not all(_COUNTRY.fullmatch(code) for code in values):
            raise ValueError("country takes two-letter ISO 3166-1 codes, like FR")
        return None if values is None else [code.upper() for code in values]

    @field_validator("language", mode="after")
    @classmethod
    def _languages(cls, values: list[str] | None) -> list[str] | None:
        if values is not None and not all(_LANGUAGE.fullmatch(tag) for tag in values):
            raise ValueError("language takes language tags, like fr or fr-CA")
        return values

    @field_validator("device", "os", "browser", mode="after")
    @classmethod
    def _known(cls, values: list[str] | None, info: ValidationInfo) -> list[str] | None:
        field = info.field_name or ""
        known = {"device": _core.DEVICES, "os": _core.SYSTEMS, "browser": _core.BROWSERS}[field]
        return None if values is None else [_named(value, known, field) for value in values]


def rules_text(rules: list[dict[str, Any]] | None, joiner: str = "\n") -> str:
    """Stored rules as text, one a line: `country=FR,BE device=mobile -> https://...` (the dashboard's form reads it
    back; the CLI shows it)."""
    lines = []
    for rule in rules or ():
        conditions = " ".join(f"{name}={','.join(values)}" for name, values in rule["if"].items())
        lines.append(f"{conditions} -> {rule['to']}".lstrip())
    return joiner.join(lines)
