"""The four visibility levels of a link, and which of them a public-only key may see."""

from __future__ import annotations

from enum import StrEnum


class Visibility(StrEnum):
    PUBLIC = "public"  # listed and redirects
    UNLISTED = "unlisted"  # redirects, but is not advertised
    PRIVATE = "private"  # only the account sees it; the short URL answers 404
    PASSWORD = "password"  # visitors must enter the link's password


# What a public-only key sees and touches; everything else is hidden from it (404, left out of lists and figures).
PUBLIC_LEVELS = frozenset({Visibility.PUBLIC, Visibility.UNLISTED})
HIDDEN_LEVELS = frozenset(Visibility) - PUBLIC_LEVELS
