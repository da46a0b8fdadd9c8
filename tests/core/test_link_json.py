"""`_core.link_json_rows` writes a link's JSON in Rust for the rows the event-loop readers give: its bytes must be
exactly the bytes orjson writes for `links.link_json` of the same row, and any row of another shape is left to
`link_json` (None), never guessed at."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from slugline import _core
from slugline.links import service as links

BASE = "http://sl.test"
# The lifecycle columns that follow the plain ones in a row (links.lifecycle.COLUMNS): a link without any.
NO_LIFECYCLE = (None, None, 0, None, False, None, None, None)
LIFECYCLE_FIELDS = {"expires_at", "max_clicks", "expired_url", "archived", "preview", "rules", "variants", "status"}
# Every escape orjson writes, the characters around them, and non-ASCII of every UTF-8 length.
ALPHABET = [chr(c) for c in range(0x20)] + list('"\\/ az09~\x7f') + ["é", "—", "\u2028", "😀", "\ufeff"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 12)))


def _moment(rng: random.Random, postgres: bool) -> str:
    day, hour = f"20{rng.randrange(10, 99)}-0{rng.randrange(1, 9)}-1{rng.randrange(0, 9)}", rng.randrange(0, 24)
    base = f"{day} {hour:02d}:{rng.randrange(0, 60):02d}:{rng.randrange(0, 60):02d}"
    if not postgres:
        return f"{base}.{rng.randrange(10**6):06d}"
    return base + rng.choice(["", ".5", ".123456"]) + "+00"


def _row(rng: random.Random, postgres: bool) -> tuple[Any, ...]:
    tags = [_text(rng) for _ in range(rng.randrange(0, 4))]
    # SQLite's driver gives the stored JSON text (as SQLAlchemy wrote it, or as another writer did); PostgreSQL's
    # gives the parsed list.
    stored: Any = tags if postgres else rng.choice([json.dumps(tags), orjson.dumps(tags).decode(), "null"])
    maybe = [None, _text(rng)]
    return (
        _text(rng),
        _text(rng),
        _text(rng),
        rng.choice(maybe),
        rng.choice(maybe),
        rng.choice(maybe),
        stored,
        rng.choice(["public", "unlisted", "private", "password"]),
        rng.choice([0, 1, -1, 2**63 - 1, -(2**63), rng.randrange(10**9)]),
        _moment(rng, postgres),
        _moment(rng, postgres),
    )


@pytest.mark.parametrize("postgres", [False, True], ids=["sqlite-rows", "postgresql-rows"])
def test_the_bytes_are_orjsons_bytes_for_link_json(postgres: bool) -> None:
    rng = random.Random(20261125 + postgres)
    rows = [_row(rng, postgres) for _ in range(3000)]
    made = _core.link_json_rows(rows, BASE)
    assert len(made) == len(rows)
    for row, raw in zip(rows, made, strict=True):
        assert raw is not None, row
        # The Rust bytes are the plain columns' JSON; `links_json` appends the lifecycle's fields after them.
        whole = links.link_json((*row, *NO_LIFECYCLE), BASE)
        plain = {name: value for name, value in whole.items() if name not in LIFECYCLE_FIELDS}
        assert raw == orjson.dumps(plain), row


def _ok() -> list[Any]:
    return list(_row(random.Random(1), False))


def _with(index: int, value: Any) -> tuple[Any, ...]:
    row = _ok()
    row[index] = value
    return tuple(row)


class Tuple(tuple[Any, ...]):
    def __iter__(self) -> Any:  # Python's unpacking goes through this; reading the items directly would not
        _, *rest = tuple.__iter__(self)
        return iter(("X", *rest))


class Text(str):
    def __format__(self, spec: str) -> str:  # an f-string goes through this
        return "OTHER"


class Tags(list[str]):
    def __iter__(self) -> Any:
        return iter(["zzz"])


class Number(int):
    pass


OTHER_SHAPES = {
    "a list, not a tuple": _ok(),
    "too few values": tuple(_ok()[:10]),
    "too many values": (*_ok(), None),
    "no id": _with(0, None),
    "a number for a slug": _with(1, 7),
    "a title that is bytes": _with(3, b"t"),
    "a lone surrogate": _with(3, "\ud800"),
    "hashtags not an array": _with(6, '{"a": 1}'),
    "hashtags of numbers": _with(6, "[1]"),
    "hashtags of a lone surrogate": _with(6, '["\\ud800"]'),
    "hashtags invalid JSON": _with(6, "[,"),
    "hashtags a tuple": _with(6, ("a",)),
    "hashtags a list of numbers": _with(6, [1]),
    "a tuple subclass": Tuple(_ok()),
    "a str subclass for a slug": _with(1, Text("s")),
    "a str subclass for a title": _with(3, Text("t")),
    "hashtags a list subclass": _with(6, Tags(["a"])),
    "hashtags of str subclasses": _with(6, [Text("a")]),
    "clicks True": _with(8, True),
    "clicks False": _with(8, False),
    "clicks an int subclass": _with(8, Number(5)),
    "clicks past 64 bits": _with(8, 2**64),
    "clicks a float": _with(8, 1.0),
    "clicks missing": _with(8, None),
    "a datetime": _with(9, datetime(2024, 5, 1, tzinfo=UTC)),
    "a timestamp with T": _with(9, "2024-05-01T12:00:00.000000"),
    "a timestamp at another offset": _with(10, "2024-05-01 12:00:00.5+02"),
    "a timestamp without its fraction": _with(10, "2024-05-01 12:00:00"),
    "a timestamp with non-ASCII": _with(10, "2024-05-01 12:00:00.00000é"),
    "a quote in a timestamp": _with(9, '2024-05-01 12:00:0".000000'),
    "a backslash in a timestamp": _with(9, "2024-05-01 12:00:0\\.000000"),
    "a newline in a timestamp": _with(10, "2024\n05-01 12:00:00+00"),
    "letters in a timestamp": _with(10, "abcd-ef-gh ij:kl:mn.000000"),
}


@pytest.mark.parametrize("row", OTHER_SHAPES.values(), ids=OTHER_SHAPES.keys())
def test_rows_of_other_shapes_are_left_to_link_json(row: Any) -> None:
    assert _core.link_json_rows([_ok(), row, tuple(_ok())], BASE)[1] is None


def test_a_base_url_that_is_not_exactly_a_str_leaves_every_row_to_link_json() -> None:
    assert _core.link_json_rows([tuple(_ok())], Text(BASE)) == [None]
    assert _core.link_json_rows([tuple(_ok())], None) == [None]  # type: ignore[arg-type]


def test_links_json_gives_the_same_bytes_for_every_row() -> None:
    lifecycles = [
        NO_LIFECYCLE,
        ("2030-01-01 00:00:00.000000", 5, 2, "https://example.com/over", False, None, None, None),
    ]
    rows = [
        (*_ok(), *lifecycles[1]),
        (*_with(9, datetime(2024, 5, 1, 12, tzinfo=UTC)), *NO_LIFECYCLE),
        (*_with(10, "2024-05-01T12:00:00+00:00"), *lifecycles[1]),
    ]
    made = links.links_json(rows, BASE)
    assert isinstance(made[0], orjson.Fragment)
    assert made[1] == links.link_json(rows[1], BASE) and made[2] == links.link_json(rows[2], BASE)
    assert orjson.dumps(made) == orjson.dumps([links.link_json(row, BASE) for row in rows])
