"""`slugline backup` and `slugline restore` in process: a consistent copy of an SQLite store while it is written,
its secret beside it, and a restore that refuses to overwrite what is there; PostgreSQL gets its tools' commands."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from slugline import cli
from slugline.accounts import service as accounts
from slugline.common.clock import utcnow
from slugline.common.models import Link
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.storage import backup, migrate
from tests.support.helpers import make_settings


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Runtime]:
    """An account on a migrated SQLite store whose secret is the file beside it."""
    rt = Runtime.create(file_settings(tmp_path / "live" / "slugline.db"))
    migrate.upgrade(rt.db.engine)
    accounts.register(rt, {"username": "ada", "password": "correct horse"}, plan="developer")
    rt.settings.secret()  # made once, as a server's first start does
    yield rt
    rt.close()


def file_settings(path: Path) -> Settings:
    return make_settings(f"sqlite:///{path}", secret_key=None)


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], settings: Settings, *args: str) -> Any:
    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def links_in(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {row[0] for row in conn.execute("SELECT slug FROM links")}


def test_a_backup_under_writes_is_a_consistent_snapshot_that_restores(
    store: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    account_id = accounts.operator(store, "ada").account_id
    stop, written = threading.Event(), []

    def write() -> None:  # link after link, each its own transaction, until told to stop
        n = 0
        while not stop.is_set():
            now = utcnow()
            row = {
                "id": f"lnk_{n:011d}",
                "account_id": account_id,
                "slug": f"w{n}",
                "destination_url": "https://e.x/",
                "hashtags": [],
                "visibility": "public",
                "clicks": 0,
                "created_at": now,
                "updated_at": now,
            }
            with store.db.writing() as session:
                session.execute(insert(Link), row)
            written.append(f"w{n}")
            n += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while len(written) < 50:
            stop.wait(0.01)
        before = set(written)
        target = tmp_path / "saved" / "slugline.backup"
        code, _, err = run(monkeypatch, capsys, store.settings, "backup", str(target))
    finally:
        stop.set()
        writer.join()
    assert code == 0, err
    assert "KEEP THE SERVER SECRET" in err and "void" in err and str(backup.secret_path(target)) in err
    saved = links_in(target)
    assert before <= saved <= set(written)  # every link committed before it began; none half-written
    assert not target.with_name(target.name + "-wal").exists()
    assert backup.secret_path(target).read_bytes() == (tmp_path / "live" / "secret.key").read_bytes()
    assert backup.secret_path(target).stat().st_mode & 0o777 == 0o600

    fresh = file_settings(tmp_path / "new" / "slugline.db")
    code, _, err = run(monkeypatch, capsys, fresh, "restore", str(target))
    assert code == 0, err
    assert links_in(tmp_path / "new" / "slugline.db") == saved
    assert fresh.secret() == store.settings.secret()  # the keys and sessions stored in it verify as before


def test_restore_refuses_to_overwrite_a_database_or_a_secret(
    store: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "b.db"
    assert run(monkeypatch, capsys, store.settings, "backup", str(target))[0] == 0
    code, _, err = run(monkeypatch, capsys, store.settings, "restore", str(target))
    assert code == 1 and "already holds a database" in err
    other = file_settings(tmp_path / "other" / "slugline.db")
    other.secret()  # another server's secret is there already
    code, _, err = run(monkeypatch, capsys, other, "restore", str(target))
    assert code == 1 and "holds another secret" in err
    assert run(monkeypatch, capsys, other, "restore", str(target), "--force")[0] == 0
    assert other.secret() == store.settings.secret()
    assert run(monkeypatch, capsys, store.settings, "backup", str(store.settings.sqlite_path()))[0] == 1
    assert run(monkeypatch, capsys, store.settings, "restore", str(tmp_path / "none.db"))[0] == 1


def test_a_secret_setting_is_named_not_copied(
    store: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(store.settings.database_url)
    code, _, err = run(monkeypatch, capsys, settings, "backup", str(tmp_path / "b.db"))
    assert code == 0 and "SLUGLINE_SECRET_KEY" in err and not backup.secret_path(tmp_path / "b.db").exists()


def test_postgresql_is_told_its_own_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings("postgresql://slugline@db.example/slugline")
    code, out, err = run(monkeypatch, capsys, settings, "backup", str(tmp_path / "s.dump"))
    assert code == 1 and out == ""
    assert f'pg_dump --format=custom --file "{tmp_path / "s.dump"}" "$SLUGLINE_DATABASE_URL"' in err
    assert "pg_restore" in err and "KEEP THE SERVER SECRET" in err and "db.example" not in err
    code, _, err = run(monkeypatch, capsys, settings, "restore", str(tmp_path / "s.dump"))
    assert code == 1 and "pg_restore --no-owner" in err
