"""`slugline accounts|keys|links`: the operator's commands call the API's own service functions, so what they do
shows through the API at once; answers as text or `--json`, refusals as `error: ...` and exit 1, usage errors 2."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from slugline import admin, cli
from slugline.accounts import deletion
from slugline.accounts import service as accounts
from slugline.accounts.identitycache import TRUST_SECONDS
from slugline.runtime import Runtime
from slugline.settings import Settings
from tests.support.helpers import LINKS, SQLITE_ONLY, Account


@pytest.fixture
def slugline(settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """slugline(*args) -> (exit code, standard output, standard error), run in this process on the test's database."""
    monkeypatch.setattr(admin, "get_settings", lambda: settings)
    monkeypatch.setenv("SLUGLINE_NEW_PASSWORD", "a new long password")

    def run(*args: str) -> tuple[int, str, str]:
        try:
            code = cli.main(list(args))
        except SystemExit as exit:  # argparse's usage errors
            code = int(exit.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def _soon(check: Callable[[], bool]) -> bool:
    """Whether `check` holds within the second a worker may trust an identity it resolved before (`TRUST_SECONDS`):
    the command runs beside the server, as an operator's would."""
    end = time.monotonic() + 3 * TRUST_SECONDS
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _json(answer: tuple[int, str, str]) -> Any:
    code, out, err = answer
    assert code == 0, err
    return orjson.loads(out)


def test_accounts(slugline: Any, client: TestClient, alice: Account) -> None:
    code, out, _ = slugline("accounts", "create", "bob", "--plan", "pro")
    assert code == 0 and "username: bob" in out and "plan: pro" in out
    listed = _json(slugline("accounts", "list", "--json"))
    assert [(a["username"], a["plan"], a["keys"]) for a in listed] == [("alice", "developer", 2), ("bob", "pro", 0)]
    code, out, _ = slugline("accounts", "list")
    assert out.splitlines()[0].split() == ["USERNAME", "PLAN", "LINKS", "KEYS"] and len(out.splitlines()) == 3

    assert client.post(LINKS, json={"destination_url": "https://example.com/a"}, headers=alice.auth()).is_success
    shown = _json(slugline("accounts", "show", "Alice", "--json"))
    assert shown["links"] == 1 and shown["sessions"] == 1
    assert [key["scope"] for key in shown["keys"]] == ["full", "public"]

    assert _json(slugline("accounts", "set-plan", "alice", "free", "--json"))["plan"] == "free"
    assert _soon(lambda: client.get(LINKS, headers=alice.auth()).status_code == 403), "the plan gate sees the change"

    # A reset signs every session out; the new password signs in, the old one no longer does.
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {alice.session}"}).is_success
    assert slugline("accounts", "reset-password", "alice")[0] == 0
    assert _soon(
        lambda: client.get("/api/v1/me", headers={"Authorization": f"Bearer {alice.session}"}).status_code == 401
    )
    login = {"username": "alice", "password": "a new long password"}
    assert client.post("/api/v1/auth/login", json=login).is_success
    assert client.post("/api/v1/auth/login", json={**login, "password": alice.password}).status_code == 401


def test_refusals_exit_1_and_usage_errors_2(slugline: Any, alice: Account, monkeypatch: pytest.MonkeyPatch) -> None:
    assert slugline("accounts", "show", "nobody") == (1, "", "error: no account named 'nobody'\n")
    assert slugline("accounts", "create", "alice")[0:2] == (1, "")
    assert slugline("links", "show", "--account", "alice", "missing")[0] == 1
    code, _, err = slugline("links", "create", "--account", "alice", "javascript:alert(1)")
    assert code == 1 and err.startswith("error: destination_url")
    monkeypatch.setenv("SLUGLINE_NEW_PASSWORD", "short")
    code, _, err = slugline("accounts", "reset-password", "alice")
    assert code == 1 and "at least 8 characters" in err
    assert slugline("accounts", "set-plan", "alice", "platinum")[0] == 2
    assert slugline("links", "list")[0] == 2, "--account is required"


def test_a_deleting_accounts_plan_is_refused(slugline: Any, runtime: Runtime, alice: Account) -> None:
    deletion.close_own(runtime, accounts.operator(runtime, "alice"), alice.password)
    refused = "error: account 'alice' is being deleted: its plan can no longer be changed\n"
    assert slugline("accounts", "set-plan", "alice", "pro") == (1, "", refused)
    assert _json(slugline("accounts", "show", "alice", "--json"))["plan"] == deletion.CLOSED


def test_a_deleting_accounts_password_reset_is_refused(
    slugline: Any, client: TestClient, runtime: Runtime, alice: Account
) -> None:
    deletion.close_own(runtime, accounts.operator(runtime, "alice"), alice.password)
    refused = "error: account 'alice' is being deleted: its password can no longer be changed\n"
    assert slugline("accounts", "reset-password", "alice") == (1, "", refused)
    login = {"username": "alice", "password": "a new long password"}  # the fixture's SLUGLINE_NEW_PASSWORD
    assert client.post("/api/v1/auth/login", json=login).status_code == 401


def test_keys(slugline: Any, client: TestClient, alice: Account) -> None:
    listed = _json(slugline("keys", "list", "alice", "--json"))
    assert [(k["scope"], k["last4"]) for k in listed] == [("full", alice.full[-4:]), ("public", alice.public[-4:])]
    assert alice.full not in str(listed), "never the key itself"
    assert _json(slugline("keys", "revoke", "alice", "--scope", "public", "--json"))["revoked"] == ["public"]
    assert _soon(lambda: client.get(LINKS, headers={"Authorization": f"Bearer {alice.public}"}).status_code == 401)
    assert client.get(LINKS, headers=alice.auth()).is_success
    assert _json(slugline("keys", "revoke", "alice", "--json"))["revoked"] == ["full"]
    assert _soon(lambda: client.get(LINKS, headers=alice.auth()).status_code == 401)
    assert slugline("keys", "revoke", "alice") == (1, "", "error: account 'alice' has no API key\n")


def test_links(slugline: Any, client: TestClient, alice: Account) -> None:
    made = _json(
        slugline(
            "links", "create", "--account", "alice", "https://example.com/launch", "--slug", "launch", "--tag", "news",
            "--visibility", "private", "--title", "Launch day", "--json",
        )
    )  # fmt: skip
    assert (made["slug"], made["hashtags"], made["visibility"]) == ("launch", ["news"], "private")
    # Short URLs on SLUGLINE_PUBLIC_URL, which these settings leave unset: http://localhost.
    assert made["short_url"] == "http://localhost/launch"
    api = client.get(f"{LINKS}/{made['id']}", headers=alice.auth()).json()
    assert api == made | {"short_url": "http://sl.test/launch"}
    assert client.get(f"{LINKS}/{made['id']}", headers={"Authorization": f"Bearer {alice.public}"}).status_code == 404
    for i in range(3):
        client.post(LINKS, json={"destination_url": f"https://example.com/{i}", "title": "other"}, headers=alice.auth())

    page = _json(slugline("links", "list", "--account", "alice", "--q", "launch", "--json"))
    assert [link["id"] for link in page["data"]] == [made["id"]] and page["pagination"]["total"] == 1
    page = _json(slugline("links", "list", "--account", "alice", "--per", "2", "--page", "2", "--json"))
    assert page["pagination"]["total"] == 4 and len(page["data"]) == 2
    code, out, _ = slugline("links", "list", "--account", "alice", "--sort", "slug", "--dir", "asc")
    assert code == 0 and out.splitlines()[-1] == "page 1 of 1, 4 links" and "launch" in out

    for name in (made["id"], "launch"):
        assert _json(slugline("links", "show", "--account", "alice", name, "--json")) == made
    code, out, _ = slugline("links", "show", "--account", "alice", "launch")
    assert code == 0 and "title: Launch day" in out and "hashtags: news" in out
    assert [line.split(":")[0] for line in out.splitlines()] == list(made), "every field, in the answer's order"
    assert _json(slugline("links", "delete", "--account", "alice", "launch", "--json")) == {
        "deleted": True,
        "id": made["id"],
    }
    assert client.get(f"{LINKS}/{made['id']}", headers=alice.auth()).status_code == 404
    rules = [{"if": {"country": ["FR"], "device": ["mobile"]}, "to": "https://example.com/fr"}]
    body = {"destination_url": "https://example.com/", "slug": "ruled", "rules": rules}
    assert client.post(LINKS, json=body, headers=alice.auth()).status_code == 201
    code, out, _ = slugline("links", "show", "--account", "alice", "ruled")
    assert code == 0 and "rules: country=FR device=mobile -> https://example.com/fr" in out


@SQLITE_ONLY
def test_the_installed_command(settings: Settings, client: TestClient, alice: Account) -> None:
    env = {
        **os.environ,
        "SLUGLINE_DATABASE_URL": settings.database_url,
        "SLUGLINE_SECRET_KEY": settings.secret_key or "",
    }

    def slugline(*args: str, typed: str | None = None) -> subprocess.CompletedProcess[str]:
        """The command; with `typed`, its standard input a terminal on which that line is typed."""
        command = [sys.executable, "-m", "slugline", *args]
        if typed is None:
            return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        typist, terminal = os.openpty()
        try:
            os.write(typist, typed.encode() + b"\n")
            return subprocess.run(command, env=env, stdin=terminal, capture_output=True, text=True, timeout=120)
        finally:
            os.close(typist)
            os.close(terminal)

    done = slugline("links", "create", "--account", "alice", "https://example.com/cli", "--slug", "from-cli")
    assert done.returncode == 0 and "slug: from-cli" in done.stdout, done.stderr
    assert client.get("/from-cli", follow_redirects=False).headers["location"] == "https://example.com/cli"
    done = slugline("links", "--help")
    assert done.returncode == 0 and "examples:" in done.stdout and "slugline links create --account" in done.stdout
    assert slugline("keys", "list", "nobody").returncode == 1
    assert slugline("keys").returncode == 2

    # Deleting asks for the name at a terminal; elsewhere it needs --yes.
    done = slugline("accounts", "delete", "alice")
    assert done.returncode == 2 and "--yes" in done.stderr
    done = slugline("accounts", "delete", "alice", typed="alicia")
    assert done.returncode == 2 and "type its name to confirm" in done.stdout and "nothing deleted" in done.stderr
    assert slugline("accounts", "show", "alice").returncode == 0
    done = slugline("accounts", "delete", "alice", typed="Alice")
    assert done.returncode == 0 and "deleted account alice with 1 link(s)" in done.stdout, done.stderr
    assert slugline("accounts", "show", "alice").returncode == 1


def test_links_export(slugline: Any, client: TestClient, alice: Account, tmp_path: Any) -> None:
    for slug in ("ex-one", "ex-two"):
        client.post(LINKS, json={"destination_url": "https://example.com/", "slug": slug}, headers=alice.auth())
    target = tmp_path / "links.ndjson"
    code, out, _ = slugline("links", "export", "--account", "alice", "--format", "ndjson", "--output", str(target))
    assert code == 0 and f"to {target}" in out
    assert [orjson.loads(line)["slug"] for line in target.read_bytes().splitlines()] == ["ex-one", "ex-two"]
    code, out, _ = slugline("links", "export", "--account", "alice", "--q", "two")
    assert code == 0 and out.splitlines()[0].startswith("id,slug,short_url,") and len(out.splitlines()) == 2
    assert slugline("links", "export", "--account", "nobody")[0] == 1


def test_links_import(slugline: Any, client: TestClient, alice: Account, tmp_path: Any) -> None:
    client.post(LINKS, json={"destination_url": "https://example.com/", "slug": "im-one"}, headers=alice.auth())
    target = tmp_path / "links.csv"
    assert slugline("links", "export", "--account", "alice", "--output", str(target))[0] == 0
    assert slugline("accounts", "create", "bob", "--plan", "developer")[0] == 0
    code, out, _ = slugline("links", "import", str(target), "--account", "alice", "--dry-run")
    assert (
        code == 0
        and out.strip() == "dry run, nothing written: 0 created, 1 skipped, 0 overwritten, 0 conflicts, 0 errors"
    )
    code, out, _ = slugline("links", "import", str(target), "--account", "bob", "--json")
    assert code == 0 and orjson.loads(out)["conflicts"] == 1  # slugs are global: alice holds it
    assert (
        "row 1: conflict: slug 'im-one' is already taken"
        in slugline("links", "import", str(target), "--account", "bob")[1]
    )


def test_links_purge(slugline: Any, client: TestClient, alice: Account) -> None:
    old = client.post(
        LINKS,
        json={"destination_url": "https://example.com/", "expires_at": "2020-01-01T00:00:00Z"},
        headers=alice.auth(),
    ).json()
    kept = client.post(
        LINKS,
        json={"destination_url": "https://example.com/", "expires_at": "2999-01-01T00:00:00Z"},
        headers=alice.auth(),
    ).json()
    code, _, err = slugline("links", "purge", "--expired-before", "yesterday")
    assert code == 2 and "not an ISO date" in err
    done = _json(slugline("links", "purge", "--expired-before", "2021-01-01", "--json"))
    assert (done["purged"], done["batches"]) == (1, 1)
    assert client.get(f"{LINKS}/{old['id']}", headers=alice.auth()).status_code == 404
    assert client.get(f"{LINKS}/{kept['id']}", headers=alice.auth()).status_code == 200
    code, out, _ = slugline("links", "purge", "--expired-before", "2021-01-01")
    assert code == 0 and out.startswith("purged 0 link(s)")


def test_accounts_delete(slugline: Any, client: TestClient, alice: Account) -> None:
    assert client.post(LINKS, json={"destination_url": "https://example.com/a"}, headers=alice.auth()).is_success
    code, _, err = slugline("accounts", "delete", "alice")  # no --yes, and no terminal to ask at
    assert code == 2 and "--yes" in err
    assert client.get(LINKS, headers=alice.auth()).is_success, "nothing was deleted"
    code, out, _ = slugline("accounts", "delete", "Alice", "--yes", "--batch", "1")
    assert code == 0 and out == "deleted account alice with 1 link(s) and 0 click(s)\n"
    assert _soon(lambda: client.get(LINKS, headers=alice.auth()).status_code == 401)
    code, _, err = slugline("accounts", "delete", "alice", "--yes", "--json")
    assert code == 1 and err == "error: no account named 'alice'\n"
    code, _, err = slugline("accounts", "delete", "alice", "--yes", "--batch", "0")
    assert code == 2 and "positive" in err


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("SLUGLINE_DATABASE_URL=", "error: SLUGLINE_DATABASE_URL: must be sqlite:///path or postgresql://"),
        ("SLUGLINE_DATABASE_URL=slugline.db", "error: SLUGLINE_DATABASE_URL: must be sqlite:///path or postgresql://"),
        ("SLUGLINE_ROOT_URL=example.com", "error: SLUGLINE_ROOT_URL: String should match pattern"),
    ],
)
def test_a_bad_setting_is_named_without_a_traceback(setting: str, message: str) -> None:
    name, _, value = setting.partition("=")
    env = {**os.environ, name: value}
    done = subprocess.run(
        [sys.executable, "-m", "slugline", "clicks", "pack"], env=env, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(message) and "Traceback" not in done.stderr, done.stderr
