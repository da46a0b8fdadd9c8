"""The shapes of text the service accepts, as regular expressions that a JSON-schema client can check and the service
itself enforces: what the OpenAPI document and the MCP tool schemas promise is exactly what is accepted.

Written in the subset that Python's `re` and ECMA-262 (JSON Schema's dialect) read alike."""

from __future__ import annotations

from collections.abc import Callable

from slugline import _core
from slugline.common.bounds import MAX_SLUG, MAX_TAG


def _char_class(member: Callable[[str], bool]) -> str:
    """The code points for which `member` holds, as the inside of a `[...]` class (`\\uXXXX` ranges)."""
    points = [c for c in range(0x10000) if member(chr(c))]
    runs: list[tuple[int, int]] = []
    for point in points:
        if runs and runs[-1][1] == point - 1:
            runs[-1] = (runs[-1][0], point)
        else:
            runs.append((point, point))
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in runs)


SPACE = _char_class(str.isspace)  # what `str.strip()` removes and `str.isspace()` refuses: the BMP holds all of it
CONTROL = "\\u0000-\\u001f"
NO_NUL = "^[^\\u0000]*$"  # no text input may hold NUL: PostgreSQL cannot store it

# 0-65535: a port that is not a number in range is not a URL.
_PORT = "(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
# An absolute http(s) URL: an ASCII host name or IPv4 address (internationalised names in punycode), no credentials
# (no `@` before the path), an optional port, then any path, query and fragment without spaces or control characters.
DESTINATION = f"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9._~!$&'()*+,;=%-]+(?::{_PORT}?)?(?:[/?#][^{SPACE}{CONTROL}]*)?$"

SLUG = f"^[A-Za-z0-9_-]{{1,{MAX_SLUG}}}$"
# The words a slug may not be, in any case (JSON Schema has no case-insensitive flag, so each letter is spelled out).
RESERVED_SLUG = (
    "^(?:"
    + "|".join(
        "".join(f"[{c.upper()}{c}]" if c.isalpha() else c for c in word) for word in sorted(_core.RESERVED_SLUGS)
    )
    + ")$"
)

# A tag as sent: spaces around it and leading '#'s are dropped, what is left is 1-MAX_TAG characters without spaces.
HASHTAG = f"^[{SPACE}]*#*[^{SPACE}#\\u0000][^{SPACE}\\u0000]{{0,{MAX_TAG - 1}}}[{SPACE}]*$"

# What /analyze fetches: as DESTINATION, but each host label 1-63 characters (the fetcher encodes the name as IDNA),
# and the path printable ASCII or other printable characters of the Basic Multilingual Plane.
_LABEL = "[A-Za-z0-9_~!$&'()*+,;=%-]{1,63}"
_PRINTABLE = _char_class(lambda c: c.isprintable() and not c.isspace())
PAGE_URL = f"^[Hh][Tt][Tt][Pp][Ss]?://(?:{_LABEL}\\.)*{_LABEL}\\.?(?::{_PORT}?)?(?:[/?#][{_PRINTABLE}]*)?$"
