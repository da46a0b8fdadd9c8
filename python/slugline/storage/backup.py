"""Backups of an SQLite store while it serves (`slugline backup`), and their restore (`slugline restore`).

A backup is SQLite's online backup API in one step: it reads the database in one read transaction, a snapshot that
writers go on beside (the WAL lets them), so the copy is consistent whatever the load, and never restarts as a
stepwise copy does when another connection writes. It is written to a temporary file beside the target, switched to
a plain rollback journal (one self-contained file), then renamed into place. The server secret is the other half:
without it every stored API key, session, OAuth token and unlock cookie is void, so a secret kept in a file beside
the database is copied beside the backup (`secret_path`).

PostgreSQL has its own tools (`pg_dump`, `pg_restore`), which `commands` names.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

SECRET_FILE = "secret.key"  # beside the SQLite database (`Settings.secret`)


class BackupError(Exception):
    """A backup or restore that cannot be made as asked; nothing was changed."""


@dataclass(frozen=True)
class Made:
    database: Path
    secret: Path | None  # the secret file copied beside it, or None when the secret is a setting


def secret_path(backup: Path) -> Path:
    """Where a backup's secret file goes: beside it, named after it."""
    return backup.with_name(backup.name + "." + SECRET_FILE)


def backup(database: Path, target: Path, secret_in_file: bool) -> Made:
    """A consistent copy of the SQLite `database` at `target` (replaced if there), and its secret file beside it when
    `secret_in_file` (else the secret is a setting: the caller says to keep it)."""
    if not database.exists():
        raise BackupError(f"there is no database at {database}")
    if target.resolve() == database.resolve():
        raise BackupError("the backup must not be the database itself")
    target.parent.mkdir(parents=True, exist_ok=True)
    _copy(database, target)
    if not secret_in_file:
        return Made(target, None)
    key = database.parent / SECRET_FILE
    if not key.exists():
        raise BackupError(f"the server secret {key} is missing: without it the backup's keys and sessions are void")
    kept = secret_path(target)
    _private_copy(key, kept)
    return Made(target, kept)


def restore(source: Path, database: Path, secret_in_file: bool, force: bool = False) -> Made:
    """The backup `source` as the SQLite `database`, with its secret file beside it (when `secret_in_file`). Refuses
    a database that holds data, or a secret file that differs, unless `force`: servers must be stopped first."""
    if not source.exists():
        raise BackupError(f"there is no backup at {source}")
    key, kept = database.parent / SECRET_FILE, secret_path(source)
    if secret_in_file and not kept.exists():
        raise BackupError(f"the backup's secret {kept} is missing: without it its keys and sessions are void")
    if not force and _holds_data(database):
        raise BackupError(f"{database} already holds a database: stop the servers and pass --force to replace it")
    if secret_in_file and not force and key.exists() and key.read_bytes() != kept.read_bytes():
        raise BackupError(f"{key} holds another secret: pass --force to replace it with the backup's")
    database.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(database)) as dst:
        src.backup(dst)  # through the target's own connection: its WAL, if any, is written through, not left stale
    if not secret_in_file:
        return Made(database, None)
    _private_copy(kept, key)
    return Made(database, key)


def commands(target: Path) -> tuple[str, str]:
    """The PostgreSQL dump and restore commands for a backup at `target` (the URL from the environment)."""
    dump = f'pg_dump --format=custom --file "{target}" "$SLUGLINE_DATABASE_URL"'
    back = f'pg_restore --no-owner --clean --if-exists --dbname "$SLUGLINE_DATABASE_URL" "{target}"'
    return dump, back


def _copy(database: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        # The source connection only reads (a busy writer is waited for); pages=-1: the whole database in one step,
        # one snapshot; the copy then journals as a plain file does, so it is one self-contained file.
        with closing(sqlite3.connect(database, timeout=30)) as src, closing(sqlite3.connect(tmp)) as dst:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _holds_data(database: Path) -> bool:
    if not database.exists() or database.stat().st_size == 0:
        return False
    with closing(sqlite3.connect(database)) as conn:
        return bool(conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0])


def _private_copy(source: Path, target: Path) -> None:
    """`source` at `target`, readable by its owner alone (it is a secret)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            shutil.copyfileobj(src, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
