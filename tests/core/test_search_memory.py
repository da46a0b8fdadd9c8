"""The search index stays within 3 bytes per byte of indexed text, random words included, and its two vocabulary
tiers (new words, and the compact sorted words a bulk load is frozen into) answer as one."""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slugline._core import SearchIndex
from tests.core.test_equivalence import _links, _queries
from tests.support import reference

LINKS = 2_000
NOTE_BYTES = 4_096
ENGLISH = (
    "the of and to in is was for that with as on by at from this are be have not or which an were but had it "
    "one all their there been has when more who will would so can if no out up into only time other new some "
    "could these two may first then do any like my now over such our man me even most made after also did many "
    "before must through back years where much your way well down should because each just those people how too "
    "little state good very make world still own see men work long get here between both life being under never"
).split()
ROOT = Path(__file__).resolve().parents[2]


def _random_word(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 12)))


def _note(rng: random.Random, english: bool) -> str:
    words: list[str] = []
    size = -1
    while True:
        word = rng.choice(ENGLISH) if english else _random_word(rng)
        if size + 1 + len(word) > NOTE_BYTES:
            return " ".join(words)
        words.append(word)
        size += 1 + len(word)


def corpus(english: bool, links: int = LINKS, seed: int = 7) -> list[dict[str, Any]]:
    """`links` links with ~4 KB notes of random lowercase words (or of common English words)."""
    rng = random.Random(seed)
    return [
        {
            "id": f"lnk_{i:05d}",
            "slug": f"s{i}",
            "destination_url": f"https://example.com/{i}",
            "title": f"link {i}",
            "description": None,
            "note": _note(rng, english),
            "hashtags": [],
            "public": True,
        }
        for i in range(links)
    ]


def text_bytes(links: list[dict[str, Any]]) -> int:
    """UTF-8 bytes of every indexed field."""
    fields = ("slug", "destination_url", "title", "description", "note")
    return sum(
        sum(len((link[f] or "").encode()) for f in fields) + sum(len(t.encode()) for t in link["hashtags"])
        for link in links
    )


def build(links: list[dict[str, Any]]) -> SearchIndex:
    index = SearchIndex()
    for link in links:
        index.upsert(**link)
    index.shrink_to_fit()
    return index


@pytest.mark.parametrize("english", [False, True], ids=["random-words", "english-words"])
def test_memory_within_three_times_the_text(english: bool) -> None:
    links = corpus(english)
    text = text_bytes(links)
    assert text > LINKS * (NOTE_BYTES - 16)
    index = build(links)
    assert index.memory_bytes() <= 3 * text, (index.memory_bytes(), text)


RSS_SCRIPT = """
import json, os, sys
from tests.core.test_search_memory import build, corpus, text_bytes

def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

warm = build(corpus(english=False, links=20, seed=99))  # the extension's code and first allocations
warm.search("abcdef")
del warm
links = corpus(english=False)
before = resident()
index = build(links)
after = resident()
print(json.dumps({"growth": after - before, "text": text_bytes(links), "memory": index.memory_bytes()}))
"""


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc/self/statm (Linux)")
def test_resident_growth_within_three_times_the_text() -> None:
    """What the process really takes (the allocator's free memory included), measured in a fresh process: a few MB
    of the text's size stay free in the allocator after a bulk load, in pieces it cannot give back."""
    out = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT], cwd=ROOT, capture_output=True, text=True, check=True, timeout=600
    )
    figures = json.loads(out.stdout)
    assert figures["growth"] <= 3 * figures["text"] + (4 << 20), figures


def _rare_words(links: list[dict[str, Any]]) -> dict[str, str]:
    """Words of random notes found in exactly one link (and as no part of another word), by word."""
    seen: dict[str, set[str]] = {}
    for link in links:
        for word in link["note"].split():
            seen.setdefault(word, set()).add(link["id"])
    every = " ".join(seen)
    rare: dict[str, str] = {}
    for word, ids in seen.items():
        if len(ids) == 1 and len(word) >= 8 and every.count(word) == 1:
            rare[word] = next(iter(ids))
            if len(rare) == 60:
                break
    return rare


def _check_rare(index: SearchIndex, rare: dict[str, str], removed: set[str]) -> None:
    for word, owner in list(rare.items())[:40]:
        wanted = [] if owner in removed else [owner]
        typo = word[:3] + word[4] + word[3] + word[5:]  # two letters swapped
        for query in (word, word[:6], typo):
            _, hits = index.search(query, 10)
            found = [hit[0] for hit in hits]
            assert (owner in found) == bool(wanted), (query, word, found)
            assert not set(found) & removed, query
        for part in (word[1:-1], word[2:7]):  # inside the word: the filter finds substrings
            found = index.filter(part)
            assert (owner in found) == bool(wanted), (part, word, found)
            assert not set(found) & removed, part


def test_rare_words_found_in_both_tiers() -> None:
    links = corpus(english=False, links=300, seed=11)
    rare = _rare_words(links)
    assert len(rare) == 60
    index = build(links)  # every word frozen
    _check_rare(index, rare, set())
    # New links (words in the new tier only, and words in both), replaced and removed ones.
    more = corpus(english=False, links=350, seed=12)[300:]
    for link in more:
        link["note"] += " " + " ".join(list(rare)[:5])
        index.upsert(**link)
    removed = {owner for owner in list(rare.values())[10:20]}
    for owner in removed:
        assert index.remove(owner)
    replaced = links[int(list(rare.values())[20][4:])]
    index.upsert(**{**replaced, "note": "nothing else"})
    removed.add(replaced["id"])
    rare_now = {w: o for w, o in rare.items() if w not in list(rare)[:5]}
    _check_rare(index, rare_now, removed)
    for word in list(rare)[:5]:
        total, _ = index.search(word, 10)
        assert total == 50 + (rare[word] not in removed), word
    index.shrink_to_fit()  # both tiers merged again
    _check_rare(index, rare_now, removed)


def _equivalent(core: SearchIndex, ref: reference.SearchIndex, seed: int) -> None:
    for query in _queries(random.Random(seed), 80):
        assert sorted(core.filter(query)) == sorted(ref.filter(query)), query
        for public_only in (False, True):
            core_total, core_hits = core.search(query, 1000, public_only)
            ref_total, ref_hits = ref.search(query, 1000, public_only)
            assert core_total == ref_total, query
            assert [h[0] for h in core_hits] == [h[0] for h in ref_hits], query
            assert [h[1] for h in core_hits] == pytest.approx([h[1] for h in ref_hits]), query


def test_tiers_agree_with_the_reference() -> None:
    rng = random.Random(5)
    links = _links(rng, 400)
    core, ref = SearchIndex(), reference.SearchIndex()
    for link in links[:250]:
        core.upsert(**link)
        ref.upsert(**link)
    _equivalent(core, ref, 1)
    core.shrink_to_fit()
    _equivalent(core, ref, 2)
    for link in links[250:]:
        core.upsert(**link)
        ref.upsert(**link)
    for link in links[::7]:
        assert core.remove(link["id"]) and ref.remove(link["id"])
    for link in links[3::11]:
        changed = {**link, "title": (link["title"] or "") + " release notes"}
        core.upsert(**changed)
        ref.upsert(**changed)
    _equivalent(core, ref, 3)
    core.shrink_to_fit()
    _equivalent(core, ref, 4)
