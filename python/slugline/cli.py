"""`slugline`: serve, migrate, and manage accounts."""

from __future__ import annotations

import argparse
import getpass
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from slugline import __version__
from slugline.settings import PLAN_RANK, get_settings

if TYPE_CHECKING:
    from slugline.runtime import Runtime


def _runtime() -> Runtime:
    from slugline.runtime import Runtime

    return Runtime.create(get_settings())


def cmd_migrate(_: argparse.Namespace) -> int:
    from slugline.storage import migrate
    from slugline.storage.db import Database

    db = Database(get_settings())  # no secret needed to change the schema
    before, after = migrate.upgrade(db.engine)
    db.dispose()
    at = ", ".join(after)
    if not before:
        print(f"created the database schema at revision {at}")
    elif before != after:
        print(f"upgraded the database schema from revision {', '.join(before)} to {at}")
    else:
        print(f"database is up to date (revision {at})")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from granian import Granian
    from granian.constants import Interfaces, Loops

    settings = get_settings()
    if settings.sqlite_path() is not None:  # the embedded default migrates itself; other stores use `migrate`
        cmd_migrate(args)
    settings.secret()  # made once here, before the workers start, so they all read the same key
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
    ).serve()
    return 0


def cmd_accounts_create(args: argparse.Namespace) -> int:
    from slugline.accounts import service as accounts
    from slugline.common.errors import ServiceError

    password = os.environ.get("SLUGLINE_NEW_PASSWORD") or getpass.getpass(f"password for {args.name}: ")
    try:
        made = accounts.register(_runtime(), {"username": args.name, "password": password}, plan=args.plan)
    except ServiceError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(f"created account '{made['account']['username']}' on plan '{made['account']['plan']}'")
    return 0


def cmd_accounts_set_plan(args: argparse.Namespace) -> int:
    from slugline.accounts import service as accounts
    from slugline.common.errors import ServiceError

    try:
        accounts.set_plan(_runtime(), args.name, args.plan)
    except ServiceError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(f"account '{args.name.lower()}' is now on plan '{args.plan}'")
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

    acc = sub.add_parser("accounts", help="manage accounts").add_subparsers(dest="action", required=True)
    create = acc.add_parser("create", help="create an account (password from SLUGLINE_NEW_PASSWORD or a prompt)")
    create.add_argument("name")
    create.add_argument("--plan", choices=list(PLAN_RANK), default=None, help="plan (default: the configured one)")
    create.set_defaults(func=cmd_accounts_create)
    set_plan = acc.add_parser("set-plan", help="change an account's plan")
    set_plan.add_argument("name")
    set_plan.add_argument("plan", choices=list(PLAN_RANK))
    set_plan.set_defaults(func=cmd_accounts_set_plan)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except RuntimeError as exc:  # configuration problems (e.g. no secret key for PostgreSQL): say so, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
