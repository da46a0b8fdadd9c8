"""`slugline clicks export`: the REST export's bytes from the command line, to standard output or a file, with the
account's full access; refusals as `error: ...` and exit 1, leaving an existing file alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from slugline import cli
from slugline.common.inputs import FILTERS
from slugline.runtime import Runtime
from slugline.settings import Settings
from tests.analytics.test_export import EXPORT, flush, get, link_export, visit
from tests.support.helpers import CHROME, SQLITE_ONLY, Account, click_recorder, create


@pytest.fixture
def clicked(client: TestClient, alice: Account) -> dict[str, str]:
    """Two links with clicks, one of them private (a public-only key would not see it; the command sees it)."""
    ids = {"open": create(client, alice, slug="cli-open").json()["id"]}
    visit(client, "cli-open", utm_source="=news")
    visit(client, "cli-open", referrer="https://news.example.com/")
    ids["private"] = create(client, alice, slug="cli-private", visibility="private").json()["id"]
    flush(client)
    return ids


def run(settings: Settings, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    return cli.main(["clicks", "export", *args])


def test_the_export_is_the_apis_byte_for_byte(
    client: TestClient,
    alice: Account,
    clicked: dict[str, str],
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
    tmp_path: Path,
) -> None:
    assert run(settings, monkeypatch, "--account", "Alice", "--days", "7") == 0
    exported = capsysbinary.readouterr().out
    assert exported == get(client, alice, days=7).content and exported.count(b"\r\n") == 3  # header and two rows
    path = tmp_path / "one.ndjson"
    for link in (clicked["open"], "cli-open"):  # by id or by slug
        args = ("--link", link, "--format", "ndjson", "--source", "News.Example.com", "--output", str(path))
        assert run(settings, monkeypatch, "--account", "alice", *args) == 0
        api = get(client, alice, link_export(clicked["open"]), format="ndjson", source="news.example.com")
        assert path.read_bytes() == api.content and api.content.count(b"\n") == 1
    assert capsysbinary.readouterr().out == b""


def test_every_filter_of_the_api_is_an_option_with_the_same_bytes(
    client: TestClient,
    alice: Account,
    runtime: Runtime,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """Clicks from places and on variants: the command takes each filter the REST export takes, and writes the bytes
    the API sends for it, on one link and on the account."""
    variants = [{"to": "https://example.com/a", "weight": 50}, {"to": "https://example.com/b", "weight": 50}]
    link_id = create(client, alice, slug="cli-split", variants=variants).json()["id"]
    recorder = click_recorder(client)
    for n, (country, variant) in enumerate((("FR", 0), ("FR", 1), ("DE", 1), (None, None))):
        recorder.queue.record(link_id, CHROME.encode(), b"", None, False, f"198.18.0.{n}", None, country, variant)
    flush(client)
    with runtime.db.engine.begin() as conn:  # a city comes from a GeoIP database, which the tests do without
        conn.exec_driver_sql("UPDATE clicks SET city = 'Paris' WHERE country = 'FR'")
    assert set(FILTERS) >= {"country", "city", "variant"}
    cases: list[tuple[dict[str, str], int]] = [
        ({"country": "fr"}, 2),
        ({"city": "PARIS", "variant": "1"}, 1),
        ({"variant": "1", "country": "de"}, 1),
        ({"variant": "0"}, 1),
    ]
    for filters, rows in cases:
        options = [part for name, value in filters.items() for part in (f"--{name}", value)]
        for path, link in ((link_export(link_id), ["--link", "cli-split"]), (EXPORT, [])):
            for fmt in ("csv", "ndjson"):
                assert run(settings, monkeypatch, "--account", "alice", *link, "--format", fmt, *options) == 0
                exported = capsysbinary.readouterr().out
                api = get(client, alice, path, format=fmt, **filters)
                assert exported == api.content, (filters, path, fmt)
                assert api.content.count(b"\n") == rows + (fmt == "csv"), (filters, api.text)


def test_refusals_name_the_problem_and_leave_the_file_alone(
    clicked: dict[str, str],
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    path = tmp_path / "kept.csv"
    path.write_text("earlier export")
    for args, message in (
        (["--account", "nobody"], "error: no account named 'nobody'"),
        (["--account", "alice", "--link", "no-such-slug"], "error: link not found"),
        (["--account", "alice", "--days", "400"], "error: days: input should be less than or equal to 365"),
        (["--account", "alice", "--days", "3", "--from", "2026-01-01"], "error: give either days or from/to"),
        (["--account", "alice", "--device", "robot"], "error: device: input should be"),
        (["--account", "alice", "--country", "France"], "error: country: string should match pattern"),
        (["--account", "alice", "--variant", "-1"], "error: variant: input should be greater than or equal to 0"),
    ):
        assert run(settings, monkeypatch, *args, "--output", str(path)) == 1
        assert capsys.readouterr().err.startswith(message), args
    assert path.read_text() == "earlier export"


@SQLITE_ONLY
def test_the_installed_command_writes_the_export(
    client: TestClient, alice: Account, clicked: dict[str, str], settings: Settings, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "SLUGLINE_DATABASE_URL": settings.database_url,
        "SLUGLINE_SECRET_KEY": settings.secret_key or "",
    }
    path = tmp_path / "all.csv"
    args = ["clicks", "export", "--account", "alice", "--output", str(path)]
    done = subprocess.run(
        [sys.executable, "-m", "slugline", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == client.get(EXPORT, headers=alice.auth()).content


def test_the_export_help_names_the_values_a_filter_takes(capsys: pytest.CaptureFixture[str]) -> None:
    """`--device` takes what the REST filter takes; its help lists them, from the same model's Literal."""
    with pytest.raises(SystemExit):
        cli.main(["clicks", "export", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--device DEVICE Only clicks from this kind of device: desktop, mobile, tablet or other" in out
    assert "--browser BROWSER Only clicks from this browser --os" in out  # a free-text filter: no list
