"""`slugline links import --format shlink|yourls|kutt|bitly`: small real-shaped exports of each service, read into
an account with their slugs, destinations, titles, tags, clicks counts and times; a second run changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.links import importer
from slugline.runtime import Runtime
from tests.support.helpers import LINKS, Account

SAMPLES = Path(__file__).parent / "samples"


def run(rt: Runtime, fmt: str, name: str) -> dict[str, Any]:
    with (SAMPLES / name).open(encoding="utf-8-sig", newline="") as lines:
        return importer.import_links(rt, accounts.operator(rt, "alice"), lines, fmt)


def stored(client: TestClient, who: Account) -> dict[str, dict[str, Any]]:
    got = client.get(f"{LINKS}/export", params={"format": "ndjson"}, headers=who.auth())
    return {row["slug"]: row for row in map(orjson.loads, got.content.splitlines())}


@pytest.mark.parametrize(
    "fmt, name, expected",
    [
        (
            "shlink",
            "shlink.csv",
            {
                "guide": ("https://example.com/docs", "Docs", ["news", "release-notes"], 12, "2023-04-01T10:00:00"),
                "weekly": ("https://example.com/blog", None, [], 0, "2023-04-02T09:30:00"),
            },
        ),
        (
            "yourls",
            "yourls.csv",
            {
                "yo1": ("https://example.org/one", "One, with a comma", [], 5, "2019-05-06T07:08:09"),
                "yo2": ("http://example.org/two", "Two", [], 0, "2019-05-07T00:00:00"),
            },
        ),
        (
            "kutt",
            "kutt.json",
            {
                "kt1": ("https://example.net/first", None, [], 9, "2022-01-02T03:04:05"),
                "kt2": ("https://example.net/second", None, [], 0, "2022-02-02T00:00:00"),
            },
        ),
        (
            "bitly",
            "bitly.csv",
            {
                "launch-day": (
                    "https://example.com/launch",
                    "Launch",
                    ["campaign", "spring"],
                    42,
                    "2021-03-04T05:06:07",
                ),
                "3XyZ123": ("https://example.com/plain", None, [], 1, "2021-03-05T00:00:00"),
            },
        ),
    ],
)
def test_a_peers_export_is_read_into_the_account(
    client: TestClient, runtime: Runtime, alice: Account, fmt: str, name: str, expected: dict[str, Any]
) -> None:
    report = run(runtime, fmt, name)
    bad = 1 if fmt == "shlink" else 0  # its third row's short code has a space: not a slug here
    assert (report["created"], report["errors"], report["conflicts"]) == (2, bad, 0), report
    links = stored(client, alice)
    got = {
        slug: (row["destination_url"], row["title"], row["hashtags"], row["clicks"], row["created_at"][:19])
        for slug, row in links.items()
    }
    assert got == expected
    assert run(runtime, fmt, name)["skipped"] == 2  # a second run changes nothing
    if fmt == "kutt":
        assert links["kt1"]["description"] == "First" and links["kt2"]["expires_at"].startswith("2031-01-01")


def test_a_file_that_is_not_the_format_is_reported(client: TestClient, runtime: Runtime, alice: Account) -> None:
    report = run(runtime, "kutt", "shlink.csv")
    assert report["errors"] == 1 and report["problems"][0]["message"].startswith("not JSON")
    report = run(runtime, "yourls", "shlink.csv")
    assert (report["created"], report["errors"]) == (0, 3) and "keyword" in report["problems"][0]["message"]


@pytest.mark.parametrize(
    "name, expected, bad",
    [
        (
            "yourls-mysqldump.sql",
            {
                "sq1": (
                    "https://example.org/one?a=1&b=(2)",
                    'It\'s one; with (parens), "quotes"',
                    5,
                    "2019-05-06T07:08:09",
                ),
                "sq2": ("http://example.org/two", None, 0, "2019-05-07T00:00:00"),
            },
            1,  # 'bad key' is no slug
        ),
        (
            "yourls-phpmyadmin.sql",
            {
                "pma1": ("https://example.com/first", "First, 'quoted' title", 12, "2024-02-29T23:59:59"),
                "pma2": ("https://example.com/second", "Two\nlines", 0, "2024-03-01T08:00:00"),
            },
            0,
        ),
    ],
)
def test_a_yourls_sql_dump_is_read_from_its_url_tables_inserts(
    client: TestClient, runtime: Runtime, alice: Account, name: str, expected: dict[str, Any], bad: int
) -> None:
    """mysqldump's extended inserts and phpMyAdmin's column-listed ones; the log and options tables are passed over."""
    report = run(runtime, "yourls", name)
    assert (report["created"], report["errors"]) == (2, bad), report
    got = {
        slug: (row["destination_url"], row["title"], row["clicks"], row["created_at"][:19])
        for slug, row in stored(client, alice).items()
    }
    assert got == expected
    assert run(runtime, "yourls", name)["skipped"] == 2


def test_a_dump_split_anywhere_reads_the_same() -> None:
    """Statements and strings cut across lines at every place read the same rows (the dump is read as it comes)."""
    from slugline.links import yourlsdump

    text = (SAMPLES / "yourls-mysqldump.sql").read_text()
    whole = list(yourlsdump.read([text]))
    assert [row["keyword"] for row in whole if isinstance(row, dict)] == ["sq1", "sq2", "bad key"]
    start = text.index("INSERT INTO `yourls_url`")
    for cut in range(start, start + 200, 7):
        assert list(yourlsdump.read([text[:cut], text[cut:]])) == whole, cut
