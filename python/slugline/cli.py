"""`slugline`: serve, migrate, back up and restore, export and prune clicks; the commands on accounts, keys and links
are in `admin`."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal, get_args, get_origin

from pydantic import ValidationError

from slugline import __version__, admin
from slugline.common.inputs import FILTERS, ClickFilters
from slugline.settings import get_settings

if TYPE_CHECKING:
    from slugline.common.caller import Caller
    from slugline.runtime import Runtime
    from slugline.settings import Settings


def _runtime() -> Runtime:
    from slugline.runtime import Runtime

    return Runtime.create(get_settings())


def cmd_migrate(_: argparse.Namespace) -> int:
    print(_migrate())
    return 0


def _migrate() -> str:
    from slugline.storage import migrate
    from slugline.storage.db import Database

    db = Database(get_settings())  # no secret needed to change the schema
    before, after = migrate.upgrade(db.engine)
    db.dispose()
    at = ", ".join(after)
    if not before:
        return f"created the database schema at revision {at}"
    if before != after:
        return f"upgraded the database schema from revision {', '.join(before)} to {at}"
    return f"database is up to date (revision {at})"


def cmd_serve(args: argparse.Namespace) -> int:
    from slugline.web.logs import announce

    settings = get_settings()
    if settings.sqlite_path() is not None:  # the embedded default migrates itself; other stores use `migrate`
        announce(settings, "slugline.migrate", _migrate())
    settings.secret()  # made once here, before the workers start, so they all read the same key
    bind = settings.metrics_address()
    with _metrics_dir(settings) as shared:
        if bind is not None and shared is not None:
            from slugline.metrics.exposition import serve_bind

            serve_bind(*bind, shared)
        _granian(args, settings)
    return 0


def _metrics_dir(settings: Settings) -> AbstractContextManager[str | None]:
    """With metrics on, the workers' shared metric files go to a fresh private directory, removed at the end."""
    if not settings.metrics_on():
        return nullcontext()
    from slugline.metrics.directory import private_dir  # sets the directory before prometheus-client is imported

    return private_dir()


def _granian(args: argparse.Namespace, settings: Settings) -> None:
    from granian import Granian
    from granian.constants import Interfaces, Loops

    from slugline.web.logs import granian_options

    # uvloop's event loop carries ~25% more redirects per second than asyncio's on the same worker.
    loop = Loops.uvloop if importlib.util.find_spec("uvloop") else Loops.asyncio
    Granian(
        "slugline.asgi:app",
        address=args.host,
        port=args.port,
        workers=args.workers,
        loop=loop,
        interface=Interfaces.ASGI,
        log_access=args.access_log,
        workers_kill_timeout=30,
        respawn_failed_workers=True,  # a worker that dies (OOM, kill -9) is replaced; the others keep answering
        **granian_options(settings),  # its own lines in SLUGLINE_LOG_FORMAT too
    ).serve()


def _filter_help(name: str) -> str:
    """A filter's help from the model, with its values where the model names them (as the OpenAPI enum does)."""
    field = ClickFilters.model_fields[name]
    values = [str(v) for arg in get_args(field.annotation) if get_origin(arg) is Literal for v in get_args(arg)]
    described = (field.description or "").rstrip(".")
    return f"{described}: {', '.join(values[:-1])} or {values[-1]}" if len(values) > 1 else described


def cmd_clicks_export(args: argparse.Namespace) -> int:
    import anyio

    from slugline.accounts import service as accounts
    from slugline.links import service as links

    def destination() -> AbstractContextManager[IO[bytes]]:
        return open(args.output, "wb") if args.output is not None else nullcontext(sys.stdout.buffer)

    period = {"days": args.days, "from": args.from_, "to": args.to, "format": args.format}
    data = period | {name: getattr(args, name) for name in FILTERS}

    def export(rt: Runtime) -> None:
        caller = accounts.operator(rt, args.account)
        link_id = links.link_named(rt, caller, args.link) if args.link is not None else None
        anyio.run(_write_export, rt, caller, data, link_id, destination)

    return admin.run_with(_runtime(), export)


async def _write_export(
    rt: Runtime,
    caller: Caller,
    data: dict[str, str | None],
    link_id: str | None,
    destination: Callable[[], AbstractContextManager[IO[bytes]]],
) -> None:
    """The same export as the REST API's, written as it comes. The destination is opened once the export has started
    (parameters checked, query slot taken, first chunk read), so a refusal leaves an existing file alone."""
    from slugline.analytics import export

    async with await export.export_clicks(rt, caller, data, link_id) as made:
        with destination() as out:
            async for chunk in made:
                out.write(chunk)


def cmd_clicks_prune(_: argparse.Namespace) -> int:
    from sqlalchemy.exc import OperationalError

    from slugline.clicks import retention
    from slugline.storage.db import Database

    days = get_settings().click_log_days
    db = Database(get_settings())  # no secret needed to delete old rows
    try:
        deleted = sum(retention.prune(db, days))
    except OperationalError as exc:  # the database away, or the click log locked past the wait (PostgreSQL)
        print(f"error: {str(exc.orig).splitlines()[0]}", file=sys.stderr)
        return 1
    finally:
        db.dispose()
    if days is None:
        print("SLUGLINE_CLICK_LOG_DAYS is not set: every click is kept")
    else:
        print(f"deleted {deleted} clicks older than {days} days from the click log")
    return 0


def cmd_clicks_pack(_: argparse.Namespace) -> int:
    from sqlalchemy.exc import OperationalError

    from slugline.clicks import packs
    from slugline.storage.db import Database

    db = Database(get_settings())
    started = time.monotonic()
    try:
        made = sum(packs.upkeep(db))
    except OperationalError as exc:  # the database away
        print(f"error: {str(exc.orig).splitlines()[0]}", file=sys.stderr)
        return 1
    finally:
        db.dispose()
    print(f"made {made} month packs of closed days in {time.monotonic() - started:.1f} s")
    return 0


SECRET_WARNING = """
!!! KEEP THE SERVER SECRET WITH THIS BACKUP: {secret}
!!! Without it every API key, session, OAuth token and unlock cookie in the backup is void: users would have to
!!! make new keys and sign in again. Store it as safely as the database (anyone with it can forge sessions).
"""


def cmd_backup(args: argparse.Namespace) -> int:
    from slugline.storage import backup

    settings = get_settings()
    target = Path(args.path)
    database = settings.sqlite_path()
    if database is None:
        dump, back = backup.commands(target)
        print("slugline backup copies SQLite databases; for PostgreSQL use its own tools:", file=sys.stderr)
        print(f"  {dump}\nrestore with:\n  {back}", file=sys.stderr)
        print(SECRET_WARNING.format(secret="SLUGLINE_SECRET_KEY (as set for the servers)"), file=sys.stderr)
        return 1
    try:
        made = backup.backup(database, target, secret_in_file=settings.secret_key is None)
    except backup.BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"backed up {database} to {made.database}")
    secret = f"{made.secret} (beside the backup)" if made.secret else "SLUGLINE_SECRET_KEY (as set for the servers)"
    print(SECRET_WARNING.format(secret=secret), file=sys.stderr)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from slugline.storage import backup

    settings = get_settings()
    database = settings.sqlite_path()
    if database is None:
        _, back = backup.commands(Path(args.path))
        print(f"slugline restore writes SQLite databases; for PostgreSQL run:\n  {back}", file=sys.stderr)
        return 1
    try:
        made = backup.restore(Path(args.path), database, secret_in_file=settings.secret_key is None, force=args.force)
    except backup.BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"restored {args.path} to {made.database}" + (f", its secret to {made.secret}" if made.secret else ""))
    if made.secret is None:
        print("SLUGLINE_SECRET_KEY must be the one the servers had when the backup was made", file=sys.stderr)
    print(_migrate())  # a backup from an older release is brought up to date
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="slugline", description="Self-hostable link management.")
    top.add_argument("--version", action="version", version=f"slugline {__version__}")
    sub = top.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the REST API, MCP endpoint and redirects with Granian")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    serve.add_argument("--access-log", action="store_true", help="log every request")
    serve.set_defaults(func=cmd_serve)

    sub.add_parser("migrate", help="bring the database schema up to date").set_defaults(func=cmd_migrate)

    admin.add_commands(sub)

    made = sub.add_parser("backup", help="copy the SQLite database while it serves, with the server secret beside it")
    made.add_argument("path", metavar="PATH", help="the backup file to write (its secret goes to PATH.secret.key)")
    made.set_defaults(func=cmd_backup)
    made = sub.add_parser("restore", help="put a backup (and its secret) in place of the SQLite database")
    made.add_argument("path", metavar="PATH", help="a file `slugline backup` wrote")
    made.add_argument("--force", action="store_true", help="replace a database (and secret) that is there already")
    made.set_defaults(func=cmd_restore)

    clicks = sub.add_parser("clicks", help="the click log").add_subparsers(dest="action", required=True)
    export = clicks.add_parser("export", help="write an account's (or a link's) clicks as CSV or NDJSON")
    export.add_argument("--account", required=True, metavar="NAME", help="the account's username")
    export.add_argument("--link", metavar="ID_OR_SLUG", help="only this link's clicks: its id or slug")
    export.add_argument("--days", metavar="N", help="the last N days, ending today (UTC); default 30")
    export.add_argument("--from", dest="from_", metavar="DATE", help="first day (YYYY-MM-DD, UTC), instead of --days")
    export.add_argument("--to", metavar="DATE", help="last day (YYYY-MM-DD, UTC); default today")
    export.add_argument("--format", choices=["csv", "ndjson"], help="csv (default, with a header row) or ndjson")
    for name in FILTERS:  # every filter the REST export takes, with its help from the same model
        export.add_argument(f"--{name}", metavar=name.upper(), help=_filter_help(name))
    export.add_argument("--output", metavar="FILE", help="write to FILE instead of standard output")
    export.set_defaults(func=cmd_clicks_export)
    prune = clicks.add_parser("prune", help="delete clicks older than SLUGLINE_CLICK_LOG_DAYS now (servers do it too)")
    prune.set_defaults(func=cmd_clicks_prune)
    pack = clicks.add_parser("pack", help="make the analytics' month packs of closed days now (servers do it too)")
    pack.set_defaults(func=cmd_clicks_pack)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except RuntimeError as exc:  # configuration problems (e.g. no secret key for PostgreSQL): say so, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:  # a setting that is not what it must be: which one, and why
        for problem in exc.errors():
            name = "SLUGLINE_" + "_".join(str(part) for part in problem["loc"]).upper()
            print(f"error: {name}: {problem['msg'].removeprefix('Value error, ')}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
