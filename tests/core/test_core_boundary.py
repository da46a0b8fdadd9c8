"""The Python boundary of the Rust core: exception types, panics, argument types, GIL release.
The algorithms themselves are tested in Rust (`cargo test`) and against tests/support/reference.py."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from slugline import _core
from slugline.redirects.linkcache import Entry
from slugline.redirects.unlock import Unlocker

DESTINATION = "https://example.org/secret"
unchecked: Any = _core  # the same module, for calls that break the stub's contract on purpose


def test_core_error_is_a_value_error() -> None:
    assert issubclass(_core.CoreError, ValueError)
    with pytest.raises(ValueError, match="slug length"):
        _core.generate_slug(0)
    with pytest.raises(_core.CoreError, match="got -5"):
        _core.generate_slug(-5)
    with pytest.raises(_core.CoreError, match="links and days"):
        _core.ClickBatch.synthetic(10, 0, 1, 0)
    with pytest.raises(_core.CoreError, match="key kind"):
        unchecked.generate_key("admin")
    with pytest.raises(_core.CoreError, match="malformed"):
        _core.verify_password("x", "not a hash")
    with pytest.raises(_core.CoreError, match="limit"):
        _core.SearchIndex().search("x", limit=-1)
    with pytest.raises(_core.CoreError, match="timestamp"):
        _core.ClickBatch().add(
            link_id="lnk_1",
            timestamp=float("nan"),
            user_agent="ua",
            referrer=None,
            utm_source=None,
            via_qr=False,
            visitor_salt=b"salt",
            ip="127.0.0.1",
        )


@pytest.mark.parametrize("detach", [False, True])
def test_a_panic_is_a_core_panic_not_bad_input_and_the_process_survives(detach: bool) -> None:
    assert issubclass(_core.CorePanic, RuntimeError) and not issubclass(_core.CorePanic, ValueError)
    with pytest.raises(_core.CorePanic, match="internal error in slugline core: boom"):
        _core._panic("boom", detach)
    assert _core.slug_error("fine") is None


def test_a_panic_while_checking_a_password_is_not_a_wrong_password(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded = _core.hash_password("open sesame")
    entry = Entry("lnk_1", DESTINATION, "password", encoded, DESTINATION.encode())
    assert not asyncio.run(Unlocker.check(entry, "wrong"))
    assert not asyncio.run(Unlocker.check(entry._replace(password_hash="not a hash"), "open sesame"))

    def panicking(password: str, encoded: str) -> bool:
        _core._panic("argon2 failed", detach=True)
        return True

    monkeypatch.setattr(_core, "verify_password", panicking)
    with pytest.raises(_core.CorePanic, match="argon2 failed"):
        asyncio.run(Unlocker.check(entry, "open sesame"))


def test_wrong_argument_types_raise_type_error() -> None:
    with pytest.raises(TypeError):
        unchecked.generate_slug("7")
    with pytest.raises(TypeError):
        unchecked.hash_key("not bytes", "token")
    with pytest.raises(TypeError):
        unchecked.normalize(None)
    with pytest.raises(TypeError):
        unchecked.SearchIndex().upsert(
            id="id",
            slug="slug",
            destination_url="https://x.example",
            title=None,
            description=None,
            note=None,
            hashtags="not-a-list",
            public=True,
        )
    with pytest.raises(TypeError):
        unchecked.classify_user_agent(b"curl/8")


@pytest.mark.parametrize("garbage", [None, 42, b"svc_live_", ["svc_live_"], "", "svc_live_" + "x" * 38, "\ud800"])
def test_key_kind_never_raises(garbage: object) -> None:
    assert _core.key_kind(garbage) is None


def test_key_roundtrip_through_python() -> None:
    key = _core.generate_key("public")
    assert _core.key_kind(key) == "public"
    stored = _core.hash_key(b"secret", key)
    assert _core.verify_key(b"secret", key, stored)
    assert not _core.verify_key(b"secret", key, "not hex")


def test_hash_password_releases_the_gil() -> None:
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.0005)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        before = ticks
        encoded = _core.hash_password("correct horse battery staple")
        during = ticks - before
    finally:
        done.set()
        counter.join()
    assert _core.verify_password("correct horse battery staple", encoded)
    # argon2id with 19 MiB takes tens of milliseconds; a thread starved of the GIL would not tick at all.
    assert during >= 3, during


def test_search_index_is_shared_safely_between_threads() -> None:
    index = _core.SearchIndex()
    for i in range(2000):
        index.upsert(
            id=f"lnk_{i}",
            slug=f"s{i}",
            destination_url=f"https://example.com/{i}",
            title=f"title {i}",
            description=None,
            note=None,
            hashtags=["tag"],
            public=True,
        )
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(50):
                assert len(index.filter("#tag")) >= 2000
                index.search("title", limit=5)
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    for i in range(2000, 2500):
        index.upsert(
            id=f"lnk_{i}",
            slug=f"s{i}",
            destination_url="https://example.com/",
            title="more",
            description=None,
            note=None,
            hashtags=["tag"],
            public=True,
        )
    for reader in readers:
        reader.join()
    assert not errors
    assert len(index) == 2500 and "lnk_2499" in index


def test_search_result_shapes() -> None:
    index = _core.SearchIndex()
    index.upsert(
        id="lnk_1",
        slug="rust",
        destination_url="https://doc.rust-lang.org/",
        title="<b>Rust</b>",
        description=None,
        note=None,
        hashtags=["lang"],
        public=True,
    )
    total, hits = index.search("rust")
    assert total == 1
    ((hit_id, score, highlights),) = hits
    assert hit_id == "lnk_1" and isinstance(score, float)
    assert highlights["title"] == "&lt;b&gt;<mark>Rust</mark>&lt;/b&gt;"
    assert index.search("   ") == (0, [])


def test_click_batch_shapes() -> None:
    batch = _core.ClickBatch()
    batch.add(
        link_id="lnk_1",
        timestamp=86400.5,
        user_agent="curl/8.0",
        referrer="https://www.example.org/x",
        utm_source=None,
        via_qr=False,
        visitor_salt=b"salt",
        ip="192.0.2.1",
    )
    assert len(batch) == 1
    (row,) = batch.rows()
    assert row[:7] == ("lnk_1", 86400.5, "bot", "curl", "Other", "example.org", "example.org")
    assert len(row[7]) == 32 and "192.0.2.1" not in row
    assert batch.rollup() == [("lnk_1", 1, "bot", "example.org", 1)]
    assert batch.link_totals() == []
    synthetic = _core.ClickBatch.synthetic(1000, 10, 3, 1)
    assert len(synthetic) == 1000 and sum(r[4] for r in synthetic.rollup()) == 1000


def test_eight_field_methods_take_keywords_only() -> None:
    with pytest.raises(TypeError):
        unchecked.SearchIndex().upsert("id", "slug", "https://x.example", None, None, None, [], True)
    with pytest.raises(TypeError):
        unchecked.ClickBatch().add("lnk_1", 1.0, "ua", None, None, False, b"salt", "127.0.0.1")


def test_click_rows_come_one_parameter_list_at_a_time_without_the_links_left_out() -> None:
    queue = _core.ClickQueue(budget=1 << 20, batch=1000, max_user_agent=512, max_referrer=1024, max_source=255)
    for i in range(23):
        variant = 2 if i % 3 == 1 else None  # lnk_1's visitors went to its third variant
        queue.record(f"lnk_{i % 3}", b"curl/8", b"", None, False, "203.0.113.7", 1_000_000.0 + i, variant=variant)
    clicks = queue.take(100)
    encoded = clicks.encode({day: b"salt" for day in clicks.days()}, 255)
    chunks = encoded.values(None, 4)
    first = next(chunks)  # built when asked for: an iterator, not a list made all at once
    assert len(first) == 4 * 12 and first[0] == "lnk_0"
    assert first[8:12] == [None, None, None, None]  # country, region, city: no database, no proxy's country; variant
    rest = list(chunks)
    assert [len(chunk) // 12 for chunk in rest] == [4, 4, 4, 4, 3]
    assert next(chunks, None) is None
    kept = [chunk for chunk in encoded.values({"lnk_1"}, 5)]
    assert [len(chunk) // 12 for chunk in kept] == [5, 3]
    assert {chunk[i] for chunk in kept for i in range(0, len(chunk), 12)} == {"lnk_1"}
    assert {chunk[i + 11] for chunk in kept for i in range(0, len(chunk), 12)} == {2}
    assert all(line.endswith(b"\t2") == line.startswith(b"lnk_1") for line in encoded.copy_text().splitlines())
    assert list(encoded.values({"lnk_9"}, 5)) == []


def test_preview_crawlers_are_read_from_the_header_bytes() -> None:
    assert _core.is_preview_crawler(b"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)")
    assert _core.is_preview_crawler(b"\xffTWITTERBOT/1.0\xfe"), "bytes that are not UTF-8 are read as they are"
    assert not _core.is_preview_crawler(b"Mozilla/5.0 (compatible; Googlebot/2.1)"), "search engines follow"
    assert not _core.is_preview_crawler(None) and not _core.is_preview_crawler(b"")
