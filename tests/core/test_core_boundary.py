"""The Python boundary of the Rust core: exception types, panics, argument types, GIL release.
The algorithms themselves are tested in Rust (`cargo test`) and against tests/reference.py."""

from __future__ import annotations

import threading
import time

import pytest

from slugline import _core


def test_core_error_is_a_value_error() -> None:
    assert issubclass(_core.CoreError, ValueError)
    with pytest.raises(ValueError, match="slug length"):
        _core.generate_slug(0)
    with pytest.raises(_core.CoreError, match="got -5"):
        _core.generate_slug(-5)
    with pytest.raises(_core.CoreError, match="links and days"):
        _core.ClickBatch.synthetic(10, 0, 1, 0)
    with pytest.raises(_core.CoreError, match="key kind"):
        _core.generate_key("admin")
    with pytest.raises(_core.CoreError, match="malformed"):
        _core.verify_password("x", "not a hash")
    with pytest.raises(_core.CoreError, match="limit"):
        _core.SearchIndex().search("x", limit=-1)
    with pytest.raises(_core.CoreError, match="timestamp"):
        _core.ClickBatch().add("lnk_1", float("nan"), "ua", None, None, False, b"salt", "127.0.0.1")


def test_a_panic_surfaces_as_core_error_and_the_process_survives() -> None:
    with pytest.raises(_core.CoreError, match="boom"):
        _core._panic("boom")
    assert _core.slug_error("fine") is None


def test_wrong_argument_types_raise_type_error() -> None:
    with pytest.raises(TypeError):
        _core.generate_slug("7")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.hash_key("not bytes", "token")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.normalize(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.SearchIndex().upsert("id", "slug", "https://x.example", None, None, None, "not-a-list", True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.classify_user_agent(b"curl/8")  # type: ignore[arg-type]


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
        index.upsert(f"lnk_{i}", f"s{i}", f"https://example.com/{i}", f"title {i}", None, None, ["tag"], True)
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
        index.upsert(f"lnk_{i}", f"s{i}", "https://example.com/", "more", None, None, ["tag"], True)
    for reader in readers:
        reader.join()
    assert not errors
    assert len(index) == 2500 and "lnk_2499" in index


def test_search_result_shapes() -> None:
    index = _core.SearchIndex()
    index.upsert("lnk_1", "rust", "https://doc.rust-lang.org/", "<b>Rust</b>", None, None, ["lang"], True)
    total, hits = index.search("rust")
    assert total == 1
    (hit_id, score, highlights), = hits
    assert hit_id == "lnk_1" and isinstance(score, float)
    assert highlights["title"] == "&lt;b&gt;<mark>Rust</mark>&lt;/b&gt;"
    assert index.search("   ") == (0, [])


def test_click_batch_shapes() -> None:
    batch = _core.ClickBatch()
    batch.add("lnk_1", 86400.5, "curl/8.0", "https://www.example.org/x", None, False, b"salt", "192.0.2.1")
    assert len(batch) == 1
    (row,) = batch.rows()
    assert row[:7] == ("lnk_1", 86400.5, "bot", "curl", "Other", "example.org", "example.org")
    assert len(row[7]) == 32 and "192.0.2.1" not in row
    assert batch.rollup() == [("lnk_1", 1, "bot", "example.org", 1)]
    assert batch.link_totals() == []
    synthetic = _core.ClickBatch.synthetic(1000, 10, 3, 1)
    assert len(synthetic) == 1000 and sum(r[4] for r in synthetic.rollup()) == 1000
