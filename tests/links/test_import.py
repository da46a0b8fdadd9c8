"""`slugline links import`: what `GET /links/export` wrote comes back identically into an empty account; a second
run changes nothing; a slug with another destination is a conflict, changed only with `overwrite`."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select, text, update
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.common.caller import Caller
from slugline.common.models import Account as AccountRow
from slugline.common.models import Link, LinkChange, WebhookMessage
from slugline.links import importer, importrows
from slugline.runtime import Runtime
from slugline.search import feed
from tests.support.helpers import CHROME, LINKS, SQLITE_ONLY, Account, create

EXPORT = f"{LINKS}/export"


def variety(client: TestClient, who: Account) -> None:
    create(client, who, slug="plain")
    create(client, who, slug="formula", title="=HYPERLINK(x)", description="'quoted", note='a, b\n"c"\r\nd')
    create(client, who, slug="tagged", hashtags=["news", "été"], title="-minus", visibility="unlisted")
    create(client, who, slug="hidden", visibility="private", destination_url="https://example.com/p?q=1&r=2")
    create(client, who, slug="locked", visibility="password", password="sesame-42", title="")
    card = {"title": "=Card", "description": 'Seen, "quoted"', "image_url": "https://example.com/i.png"}
    ends: dict[str, Any] = {
        "expires_at": "2031-01-01T00:00:00Z",
        "max_clicks": 5,
        "expired_url": "https://example.com/gone",
    }
    made = create(client, who, slug="card", preview=card, **ends)
    assert made.status_code == 201, made.text
    rules = [
        {"if": {"country": ["FR", "BE"], "device": ["mobile"]}, "to": "https://example.com/fr?a=1,2"},
        {"if": {}, "to": "https://example.com/=all"},
    ]
    variants = [{"to": "https://example.com/a", "weight": 70}, {"to": "https://example.com/b,c", "weight": 30}]
    routed = create(client, who, slug="routed", rules=rules, variants=variants)
    assert routed.status_code == 201, routed.text
    shelved = create(client, who, slug="shelved").json()["id"]
    assert client.put(f"{LINKS}/{shelved}", json={"archived": True}, headers=who.auth()).status_code == 200


def export(client: TestClient, who: Account, fmt: str) -> bytes:
    got = client.get(EXPORT, params={"format": fmt}, headers=who.auth())
    assert got.status_code == 200, got.text
    return got.content


def run_import(rt: Runtime, name: str, data: bytes, fmt: str, **options: Any) -> dict[str, Any]:
    lines = io.StringIO(data.decode(), newline="")
    return importer.import_links(rt, accounts.operator(rt, name), lines, fmt, **options)


def empty(client: TestClient, who: Account) -> None:
    ids = [
        link["id"]
        for link in client.get(LINKS, params={"per": 100, "archived": "true"}, headers=who.auth()).json()["data"]
    ]
    ids += [link["id"] for link in client.get(LINKS, params={"per": 100}, headers=who.auth()).json()["data"]]
    assert client.request("DELETE", f"{LINKS}/bulk", json={"ids": ids}, headers=who.auth()).status_code == 200


@pytest.mark.parametrize("fmt", ["csv", "ndjson"])
def test_export_then_import_into_an_empty_account_is_identical(
    client: TestClient, runtime: Runtime, make_account: Any, fmt: str
) -> None:
    alice, bob = make_account("alice"), make_account("bob")
    variety(client, alice)
    with runtime.db.engine.begin() as conn:  # clicks counts travel with the links
        conn.execute(update(Link).where(Link.slug == "plain").values(clicks=41))
    written = export(client, alice, fmt)
    empty(client, alice)  # the slugs and ids are free again: bob's import can keep them

    report = run_import(runtime, "bob", written, fmt)
    assert (report["created"], report["skipped"], report["conflicts"], report["errors"]) == (8, 0, 0, 0), report
    assert export(client, bob, fmt) == written
    again = run_import(runtime, "bob", written, fmt)  # before a visit below moves a clicks count
    assert (again["created"], again["skipped"], again["conflicts"]) == (0, 8, 0) and export(client, bob, fmt) == written
    routed = client.get(LINKS, params={"q": "routed"}, headers=bob.auth()).json()["data"][0]
    assert routed["rules"][0]["if"]["country"] == ["FR", "BE"] and routed["variants"][1]["weight"] == 30
    to = client.get("/routed", headers={"user-agent": CHROME}, follow_redirects=False).headers["location"]
    assert to in ("https://example.com/=all",), "the imported rules are evaluated"
    assert client.get(LINKS, params={"q": "#news"}, headers=bob.auth()).json()["pagination"]["total"] == 1
    assert client.get("/plain", headers={"user-agent": CHROME}, follow_redirects=False).status_code == 302
    unlocked = client.post("/locked", data={"password": "sesame-42"}, follow_redirects=False)
    assert unlocked.status_code in (302, 303), unlocked.text  # the password's hash came along


def test_a_slug_with_another_destination_is_a_conflict_unless_overwritten(
    client: TestClient, runtime: Runtime, alice: Account
) -> None:
    create(client, alice, slug="moved", destination_url="https://old.example.com/")
    rows = [
        {"slug": "moved", "destination_url": "https://new.example.com/", "title": "New"},
        {"slug": "fresh", "destination_url": "https://example.com/fresh"},
        {"slug": "fresh", "destination_url": "https://example.com/other"},
        {"slug": "bad slug", "destination_url": "https://example.com/"},
        {"slug": "nourl"},
    ]
    data = b"".join(orjson.dumps(row) + b"\n" for row in rows) + b"not json\n"
    dry = run_import(runtime, "alice", data[: data.index(b"not json")], "ndjson", dry_run=True)
    assert (dry["created"], dry["conflicts"], dry["errors"], dry["dry_run"]) == (1, 2, 2, True)
    assert client.get(LINKS, headers=alice.auth()).json()["pagination"]["total"] == 1

    report = run_import(runtime, "alice", data, "ndjson")
    assert (report["created"], report["conflicts"], report["errors"]) == (1, 2, 3)
    kinds = [(p["row"], p["kind"]) for p in report["problems"]]
    assert kinds == [(4, "error"), (5, "error"), (6, "error"), (1, "conflict"), (3, "conflict")]
    assert report["problems"][2]["message"].startswith("line 6: not JSON")
    moved = client.get(LINKS, params={"q": "moved"}, headers=alice.auth()).json()["data"][0]
    assert moved["destination_url"] == "https://old.example.com/"

    report = run_import(runtime, "alice", data[: data.index(b"not json")], "ndjson", overwrite=True)
    assert (report["overwritten"], report["skipped"], report["conflicts"]) == (2, 1, 0)  # the file wins, row by row
    moved = client.get(LINKS, params={"q": "moved"}, headers=alice.auth()).json()["data"][0]
    assert moved["destination_url"] == "https://new.example.com/" and moved["title"] == "New"


def test_another_accounts_slug_is_never_overwritten(client: TestClient, runtime: Runtime, make_account: Any) -> None:
    alice, bob = make_account("alice"), make_account("bob")
    create(client, alice, slug="mine", destination_url="https://alice.example.com/")
    data = orjson.dumps({"slug": "mine", "destination_url": "https://alice.example.com/"}) + b"\n"
    report = run_import(runtime, "bob", data, "ndjson", overwrite=True)
    assert (report["created"], report["skipped"], report["overwritten"], report["conflicts"]) == (0, 0, 0, 1)
    assert client.get(LINKS, headers=bob.auth()).json()["pagination"]["total"] == 0


@SQLITE_ONLY
def test_batches_follow_one_another(
    client: TestClient, runtime: Runtime, alice: Account, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(importer, "BATCH", 3)  # the default batch
    rows = [{"slug": f"b{n}", "destination_url": f"https://example.com/{n}"} for n in range(10)]
    data = b"".join(orjson.dumps(row) + b"\n" for row in rows + rows[:2])
    report = run_import(runtime, "alice", data, "ndjson")
    assert (report["created"], report["skipped"]) == (10, 2)
    assert client.get(LINKS, params={"q": "example"}, headers=alice.auth()).json()["pagination"]["total"] == 10


def test_a_big_import_keeps_the_feed_exact_and_the_index_current(
    client: TestClient, runtime: Runtime, alice: Account
) -> None:
    """Batched writes: every link still takes its own version; the feed keeps the last `KEEP` rows, in a row; the
    SQLite triggers of a single create are there afterwards; an index built before the import answers for it."""
    assert client.get(LINKS, params={"q": "example"}, headers=alice.auth()).json()["pagination"]["total"] == 0
    count = feed.KEEP + 500
    rows = [
        {"slug": f"big{n}", "destination_url": f"https://example.com/{n}", "hashtags": ["bulk"]} for n in range(count)
    ]
    data = b"".join(orjson.dumps(row) + b"\n" for row in rows)
    report = importer.import_links(
        runtime, accounts.operator(runtime, "alice"), io.StringIO(data.decode()), "ndjson", batch=700
    )
    assert report["created"] == count, report
    with runtime.db.engine.connect() as conn:
        version = conn.scalar(select(AccountRow.links_version).where(AccountRow.username == "alice"))
        versions = conn.scalars(select(LinkChange.version).order_by(LinkChange.version)).all()
        if conn.dialect.name == "sqlite":
            triggers = set(conn.scalars(text("SELECT name FROM sqlite_master WHERE type = 'trigger'")))
            assert {"links_created", "link_changes_bump"} <= triggers
    assert version == count and versions == list(range(count - feed.KEEP + 1, count + 1))
    answer = client.get(LINKS, params={"q": "#bulk", "per": 1}, headers=alice.auth()).json()
    assert answer["pagination"]["total"] == count
    made = create(client, alice, slug="after", hashtags=["bulk"])  # a single create follows on from the import
    assert made.status_code == 201, made.text
    assert client.get(LINKS, params={"q": "#bulk"}, headers=alice.auth()).json()["pagination"]["total"] == count + 1


def test_a_slug_taken_meanwhile_retries_the_batch(
    client: TestClient, runtime: Runtime, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent writer's slug (the lookup missed it) refuses the batch's statement: nothing of the batch stays,
    and the batch is decided again."""
    create(client, alice, slug="raced", destination_url="https://example.com/raced")
    looked_up = importer._existing
    calls: list[int] = []

    def blind_once(session: Any, slugs: list[str], ids: list[Any]) -> Any:
        calls.append(1)
        return {} if len(calls) == 1 else looked_up(session, slugs, ids)

    monkeypatch.setattr(importer, "_existing", blind_once)
    rows = [{"slug": "first", "destination_url": "https://example.com/1"}]
    rows += [{"slug": "raced", "destination_url": "https://example.com/raced"}]
    report = run_import(runtime, "alice", b"".join(orjson.dumps(row) + b"\n" for row in rows), "ndjson")
    assert (report["created"], report["skipped"], len(calls)) == (1, 1, 2), report
    assert sorted(link["slug"] for link in client.get(LINKS, headers=alice.auth()).json()["data"]) == ["first", "raced"]
    assert create(client, alice, slug="later").status_code == 201


def test_a_dry_run_finds_a_slug_repeated_in_a_later_batch(client: TestClient, runtime: Runtime, alice: Account) -> None:
    rows = [{"slug": f"d{n}", "destination_url": f"https://example.com/{n}"} for n in range(5)]
    rows += [rows[0], {"slug": "d1", "destination_url": "https://example.com/elsewhere"}]
    data = b"".join(orjson.dumps(row) + b"\n" for row in rows)
    lines = io.StringIO(data.decode())
    report = importer.import_links(runtime, accounts.operator(runtime, "alice"), lines, "ndjson", dry_run=True, batch=2)
    assert (report["created"], report["skipped"], report["conflicts"]) == (5, 1, 1), report
    assert report["problems"][0]["message"] == "slug 'd1' is already taken (for a link earlier in the file)"
    assert client.get(LINKS, headers=alice.auth()).json()["pagination"]["total"] == 0


def test_an_import_tells_the_accounts_webhooks_of_each_new_link(
    client: TestClient, runtime: Runtime, alice: Account
) -> None:
    """The batch sets aside the change feed's triggers, but not the webhook outbox's while an endpoint of the account
    wants link.created: then it writes a message per link."""
    hook = {"url": "https://hooks.example.com/in", "events": ["link.created"]}
    assert client.post("/api/v1/webhooks", json=hook, headers=alice.auth()).status_code == 201
    rows = [{"slug": f"w{n}", "destination_url": f"https://example.com/{n}"} for n in range(5)]
    report = run_import(runtime, "alice", b"".join(orjson.dumps(row) + b"\n" for row in rows), "ndjson")
    assert report["created"] == 5, report
    with runtime.db.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(WebhookMessage)) == 5


def test_an_import_into_an_account_no_endpoint_listens_to_writes_no_message_and_leaves_the_trigger(
    client: TestClient, runtime: Runtime, make_account: Any
) -> None:
    """Without an endpoint of the account wanting link.created the import keeps the webhook trigger from running for
    its rows (SQLite: dropped in the batch's transaction; PostgreSQL: migration 0020's setting): another account's
    endpoint gets nothing of it, and afterwards the trigger is back for every create, the importing account's too."""
    alice, bob = make_account("alice"), make_account("bob")
    for who, events in ((alice, ["link.deleted"]), (bob, ["link.created"])):
        hook = {"url": "https://hooks.example.com/in", "events": events}
        assert client.post("/api/v1/webhooks", json=hook, headers=who.auth()).status_code == 201
    rows = [{"slug": f"q{n}", "destination_url": f"https://example.com/{n}"} for n in range(5)]
    report = run_import(runtime, "alice", b"".join(orjson.dumps(row) + b"\n" for row in rows), "ndjson", batch=2)
    assert report["created"] == 5, report

    def messages() -> list[tuple[int, str]]:
        with runtime.db.engine.connect() as conn:
            found = conn.execute(select(WebhookMessage.account_id, WebhookMessage.type).order_by(WebhookMessage.id))
            return sorted((account, kind) for account, kind in found)

    assert messages() == []
    assert create(client, bob, slug="bobs").status_code == 201
    hook = {"url": "https://hooks.example.com/alice", "events": ["link.created"]}
    assert client.post("/api/v1/webhooks", json=hook, headers=alice.auth()).status_code == 201
    assert create(client, alice, slug="alices").status_code == 201
    ids = [accounts.operator(runtime, who.username).account_id for who in (alice, bob)]
    assert messages() == sorted((account, "link.created") for account in ids)


ROWS_TO_CHECK: list[dict[str, Any]] = [
    {"slug": "ok", "destination_url": "https://example.com/a?b=c#d", "title": "T", "hashtags": ["a", "#B", "a"]},
    {"slug": "ok", "destination_url": "HTTP://EXAMPLE.com:8080", "note": "n", "description": "d"},
    {"slug": "ok", "destination_url": "http://h:/", "hashtags": []},
    {"slug": "ok", "destination_url": "http://h:65535/x@y"},
    {"slug": "ok", "destination_url": "http://h:65536/"},
    {"slug": "ok", "destination_url": "http://h:00080/"},
    {"slug": "ok", "destination_url": " https://example.com/ "},
    {"slug": "ok", "destination_url": "https://example.com/\u00a0x"},
    {"slug": "ok", "destination_url": "https://exa mple.com/"},
    {"slug": "ok", "destination_url": "https://u:p@example.com/"},
    {"slug": "ok", "destination_url": "https://[::1]/"},
    {"slug": "ok", "destination_url": "https://bücher.example/"},
    {"slug": "ok", "destination_url": "ftp://example.com/"},
    {"slug": "ok", "destination_url": "https://"},
    {"slug": "ok", "destination_url": ""},
    {"slug": "ok", "destination_url": "https://example.com/\x00"},
    {"slug": "ok", "destination_url": "https://example.com/" + "a" * 2028},
    {"slug": "ok", "destination_url": "https://example.com/" + "a" * 2029},
    {"slug": "ok", "destination_url": 5},
    {"slug": "ok"},
    {"destination_url": "https://example.com/"},
    {"slug": "api", "destination_url": "https://example.com/"},
    {"slug": "a b", "destination_url": "https://example.com/"},
    {"slug": "a\x00", "destination_url": "https://example.com/"},
    {"slug": "a" * 65, "destination_url": "https://example.com/"},
    {"slug": 7, "destination_url": "https://example.com/"},
    {"slug": "ok", "destination_url": "https://example.com/", "title": "t" * 255, "note": "n" * 4096},
    {"slug": "ok", "destination_url": "https://example.com/", "title": "t" * 256},
    {"slug": "ok", "destination_url": "https://example.com/", "description": "d" * 1025},
    {"slug": "ok", "destination_url": "https://example.com/", "note": "n" * 4097},
    {"slug": "ok", "destination_url": "https://example.com/", "title": "a\x00"},
    {"slug": "ok", "destination_url": "https://example.com/", "title": 5},
    {"slug": "ok", "destination_url": "https://example.com/", "hashtags": "news"},
    {"slug": "ok", "destination_url": "https://example.com/", "hashtags": ["x" * 64, "#" + "y" * 64]},
    {"slug": "ok", "destination_url": "https://example.com/", "hashtags": ["x" * 65]},
    {"slug": "ok", "destination_url": "https://example.com/", "hashtags": ["#"]},
    {"slug": "ok", "destination_url": "https://example.com/", "hashtags": [" a"]},
    {"slug": "ok", "destination_url": "https://example.com/", "hashtags": ["a\u2003b"]},
    {"slug": "ok", "destination_url": "https://example.com/", "hashtags": ["a\x00"]},
    {"slug": "ok", "destination_url": "https://example.com/", "hashtags": [1]},
    {"slug": "ok", "destination_url": "https://example.com/", "hashtags": [f"t{n}" for n in range(31)]},
    {"slug": "ok", "destination_url": "https://example.com/", "rules": [], "variants": None},
    {"slug": "ok", "destination_url": "https://example.com/", "rules": None, "variants": None},
    {"slug": "ok", "destination_url": "https://example.com/", "visibility": "unlisted"},
    {"slug": "ok", "destination_url": "https://example.com/", "visibility": "secret"},
]


def test_a_row_checked_without_the_model_is_one_the_model_takes_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """The import's quick check of a plain row (`importrows._plain`) takes only rows `LinkCreate` takes, and answers
    as checking every row with the model does: the same rows out, with the same values, the same problems."""
    caller = Caller(account_id=1, username="alice", plan="developer", scope="full", created_at=datetime.now(UTC))

    def check() -> tuple[list[Any], dict[str, Any]]:
        report = importrows.Report(dry_run=False)
        out = list(importrows.checked(caller, list(enumerate(ROWS_TO_CHECK, 1)), report))
        return out, report.answer()

    quick = check()
    plain = [importrows._plain(row) is not None for row in ROWS_TO_CHECK]
    assert 10 < plain.count(False) < len(plain) - 5, plain  # both ways are taken
    monkeypatch.setattr(importrows, "_plain", lambda row: None)
    assert quick == check()


@pytest.mark.parametrize("routed", [False, True], ids=["plain", "with-rules"])
def test_an_imported_link_is_stored_as_a_create_stores_it(
    client: TestClient, runtime: Runtime, alice: Account, routed: bool
) -> None:
    """Hashtags lowercased, without '#' and de-duplicated, the destination without surrounding spaces: what a create
    of the same fields stores, whichever way the row was checked (a row with rules goes through the model)."""
    row: dict[str, Any] = {"slug": "norm", "destination_url": " https://example.com/x ", "hashtags": "News #news #Été"}
    if routed:
        row["rules"] = '[{"if": {"device": ["mobile"]}, "to": "https://example.com/m"}]'
    out = io.StringIO()
    csv.writer(out).writerows([list(row), list(row.values())])
    report = run_import(runtime, "alice", out.getvalue().encode(), "csv")
    assert report["created"] == 1, report
    tags = ["News", "#news", "#Été"]
    made = create(client, alice, slug="made", destination_url=row["destination_url"], hashtags=tags)
    assert made.status_code == 201, made.text
    imported = client.get(LINKS, params={"q": "norm"}, headers=alice.auth()).json()["data"][0]
    assert (imported["hashtags"], imported["destination_url"]) == (["news", "été"], "https://example.com/x")
    assert (made.json()["hashtags"], made.json()["destination_url"]) == (imported["hashtags"], "https://example.com/x")
