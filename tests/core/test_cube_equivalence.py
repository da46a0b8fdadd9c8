"""The roll-up cubes answer what the clicks say (tests/support/reference.py `analyse`): clicks merged in random
batches, the way the click writer merges them into stored rows, then asked with random filters, per account view
and per link; two of the links have variants (an A/B split), which their own cubes keep and the views do not."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest

from slugline import _core
from tests.support import reference

LINKS = {"lnk_aaaaaaaaaaa": True, "lnk_bbbbbbbbbbb": True, "lnk_hhhhhhhhhhh": False}  # id: public
SPLIT = {"lnk_aaaaaaaaaaa": 3, "lnk_hhhhhhhhhhh": 2}  # links with variants: how many
BROWSERS = [("desktop", "Chrome", "Windows"), ("mobile", "Safari", "iOS"), ("tablet", "Chrome", "Android")]
SOURCES = [("direct", None), ("google.com", "google.com"), ("newsletter", "mail.example"), ("qr", None)]
START = 20_000 * 86_400  # a day since the epoch


def _clicks(rng: random.Random, n: int) -> list[reference.StoredClick]:
    out = []
    for _ in range(n):
        person = rng.randrange(40)
        device, browser, os = ("bot", "Googlebot", "Other") if person == 0 else BROWSERS[person % 3]
        source, referrer = rng.choice(SOURCES)
        at = START + rng.randrange(5 * 86_400) + rng.random()
        visitor = hashlib.sha256(f"{person}".encode()).hexdigest()[:32]
        out.append((rng.choice(list(LINKS)), at, device, browser, os, source, referrer, visitor))
    return out


def _variants(clicks: list[reference.StoredClick]) -> list[int | None]:
    """Each click's variant as the redirects draw it: from the visitor, the day and the link (one a day for each)."""
    return [
        int(hashlib.sha256(f"{c[7]} {int(c[1] // 86_400)} {c[0]}".encode()).hexdigest(), 16) % SPLIT[c[0]]
        if c[0] in SPLIT
        else None
        for c in clicks
    ]


def _stored(
    clicks: list[reference.StoredClick], variants: list[int | None], rng: random.Random
) -> dict[tuple[Any, ...], Any]:
    stored: dict[tuple[Any, ...], Any] = {}
    owners = {link: (1, public) for link, public in LINKS.items()}
    at = 0
    while at < len(clicks):
        size = rng.randrange(1, 60)
        details = [(None, None, v) for v in variants[at : at + size]]
        batch = _core.BatchCubes.from_clicks(clicks[at : at + size], owners, details=details)
        for row in batch.merged([stored[key] for key in batch.keys() if key in stored]):  # noqa: SIM118
            stored[row[:4]] = row
        at += size
    return stored


def _ask(stored: dict[tuple[Any, ...], Any], scope: str, filters: dict[str, str]) -> dict[str, Any]:
    rows = [(1, key[3], row[4], row[5], row[6]) for key, row in stored.items() if key[1] == scope and key[2] == 0]
    return _core.analyse(rows, filters, True)


@pytest.mark.parametrize("seed", range(8))
def test_cubes_merged_in_batches_answer_what_the_clicks_say(seed: int) -> None:
    rng = random.Random(seed)
    clicks = _clicks(rng, 400)
    variants = _variants(clicks)
    stored = _stored(clicks, variants, rng)
    choices = {
        "device": ["desktop", "mobile", "Tablet"],
        "browser": ["chrome", "SAFARI", "Opera"],
        "os": ["ios", "windows"],
        "source": ["google.com", "direct", "newsletter"],
        "referrer": ["google.com", "mail.example"],
        "variant": ["0", "1", "2", "7"],
    }
    for _ in range(12):
        names = rng.sample(sorted(choices), rng.randrange(0, 3))
        filters = {name: rng.choice(choices[name]).lower() for name in names}
        for scope, kept in (("", clicks), ("p", [c for c in clicks if LINKS[c[0]]]), ("lnk_aaaaaaaaaaa", None)):
            if kept is None:  # a link's own cubes, which keep its clicks' variants
                chosen = [(c, v) for c, v in zip(clicks, variants, strict=True) if c[0] == scope]
                expected = reference.analyse([c for c, _ in chosen], filters, [v for _, v in chosen])
            else:
                expected = reference.analyse(kept, filters, [None] * len(kept))
            assert _ask(stored, scope, filters) == expected, (scope, filters)
