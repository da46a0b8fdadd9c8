"""The operator's commands on accounts, keys, links and webhooks: `slugline accounts|keys|links|webhooks ...`.

Each command calls the same service function as the REST API, MCP and the dashboard (as the account's owner with
full access, see `accounts.operator`), prints a short human answer or, with `--json`, the API's JSON, and exits 0
when done, 1 when the service refused (the message on standard error, as `error: ...`), 2 on a usage error."""

from __future__ import annotations

import argparse
import contextlib
import getpass
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson

from slugline import admin_webhooks
from slugline.common.rules import rules_text
from slugline.settings import PLAN_RANK, get_settings

if TYPE_CHECKING:
    from slugline.runtime import Runtime

Command = Callable[["Runtime", argparse.Namespace], Any]


def run_with(rt: Runtime, work: Callable[[Runtime], object]) -> int:
    """Runs one command's `work` on `rt` and closes it: 0 when done, 1 when the service refused (the reason on
    standard error as `error: ...`). Every command that calls a service function goes through here."""
    from slugline.common.errors import ServiceError

    try:
        work(rt)
    except ServiceError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    finally:
        rt.close()
    return 0


def _run(command: Command, args: argparse.Namespace) -> int:
    """Run `command` with a runtime (an async one on an event loop) and print its answer (`_print`); a refusal is
    `error: ...` and exit code 1 (`run_with`)."""
    import anyio

    from slugline.runtime import Runtime

    def work(rt: Runtime) -> None:
        _print(anyio.run(command, rt, args) if inspect.iscoroutinefunction(command) else command(rt, args), args)

    return run_with(Runtime.create(get_settings()), work)


def _print(answer: Any, args: argparse.Namespace) -> None:
    """The answer as JSON with `--json`, else as the command shows it. Printed before the runtime closes: a listing
    is read as it prints."""
    if not args.json:
        args.show(answer)
        return
    out = sys.stdout.buffer
    if isinstance(answer, dict):
        out.write(orjson.dumps(answer, option=orjson.OPT_INDENT_2) + b"\n")
    else:  # a listing: a JSON array, one element a line, written as it is read
        out.write(b"[")
        for n, item in enumerate(answer):
            out.write((b",\n" if n else b"\n") + orjson.dumps(item))
        out.write(b"\n]\n")


def _table(rows: Iterable[dict[str, Any]], columns: list[str]) -> None:
    """Rows as aligned columns under a header, printed as they are read, in chunks of 100 aligned on their own."""
    chunk: list[list[str]] = [[c.upper() for c in columns]]

    def flush() -> None:
        widths = [max(len(row[i]) for row in chunk) for i in range(len(columns))]
        for row in chunk:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        chunk.clear()

    for row in rows:
        chunk.append([_cell(row.get(column)) for column in columns])
        if len(chunk) == 100:
            flush()
    if chunk:
        flush()


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list) and value and isinstance(value[0], dict) and "to" in value[0]:  # a link's rules
        return rules_text(value, "; ")
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def _fields(answer: dict[str, Any], names: Iterable[str] | None = None) -> None:
    for name in names or answer:
        print(f"{name}: {_cell(answer.get(name))}")


def _new_password(name: str) -> str:
    return os.environ.get("SLUGLINE_NEW_PASSWORD") or getpass.getpass(f"new password for {name}: ")


# Accounts


def accounts_create(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import service as accounts

    made = accounts.register(rt, {"username": args.name, "password": _new_password(args.name)}, plan=args.plan)
    return made["account"]


def accounts_list(rt: Runtime, _: argparse.Namespace) -> Any:
    from slugline.accounts import service as accounts

    return accounts.list_accounts(rt)


def accounts_show(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import service as accounts

    return accounts.show_account(rt, args.name)


def accounts_set_plan(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import service as accounts

    accounts.set_plan(rt, args.name, args.plan)
    return accounts.show_account(rt, args.name)


def accounts_reset_password(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import service as accounts

    accounts.reset_password(rt, args.name, {"new_password": _new_password(args.name)})
    return {"username": args.name.lower(), "password_reset": True}


def accounts_delete(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import deletion

    return deletion.delete_account(rt, args.name, links=args.batch)


def _delete_confirmed(args: argparse.Namespace) -> int:
    """`accounts delete` runs with `--yes`, or once the name is typed again at a terminal; else it exits 2."""
    if not args.yes:
        if not sys.stdin.isatty():
            print("error: deleting an account cannot be undone: add --yes to confirm", file=sys.stderr)
            return 2
        typed = input(f"delete {args.name!r} with all its links, clicks and keys? type its name to confirm: ")
        if typed.strip().lower() != args.name.lower():
            print("error: the name typed was not the account's: nothing deleted", file=sys.stderr)
            return 2
    return _run(accounts_delete, args)


def _show_deleted(done: dict[str, Any]) -> None:
    print(f"deleted account {done['username']} with {done['links']} link(s) and {done['clicks']} click(s)")


# Keys


def keys_list(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import keys
    from slugline.accounts import service as accounts

    return keys.list_keys(rt, accounts.operator(rt, args.name))["keys"]


def keys_revoke(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import keys
    from slugline.accounts import service as accounts
    from slugline.common.errors import NotFound

    caller = accounts.operator(rt, args.name)
    scopes = [args.scope] if args.scope else [key["scope"] for key in keys.list_keys(rt, caller)["keys"]]
    if not scopes:
        raise NotFound(f"account '{args.name.lower()}' has no API key")
    for scope in scopes:
        keys.delete_key(rt, caller, scope)
    return {"username": args.name.lower(), "revoked": scopes}


# Links


async def links_list(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import service as accounts
    from slugline.links import service as links

    query = {"q": args.q, "page": args.page, "per": args.per, "sort": args.sort, "dir": args.dir}
    return await links.list_links(rt, accounts.operator(rt, args.account), {k: v for k, v in query.items() if v})


async def links_create(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.accounts import service as accounts
    from slugline.links import service as links

    body: dict[str, Any] = {"destination_url": args.url, "auto_meta": args.auto_meta}
    for name in ("slug", "title", "description", "note", "visibility", "password"):
        if getattr(args, name) is not None:
            body[name] = getattr(args, name)
    if args.tag:
        body["hashtags"] = args.tag
    return await links.create_link(rt, accounts.operator(rt, args.account), body)


def _link_id(rt: Runtime, args: argparse.Namespace) -> tuple[Any, str]:
    from slugline.accounts import service as accounts
    from slugline.links import service as links

    caller = accounts.operator(rt, args.account)
    return caller, links.link_named(rt, caller, args.link)


async def links_show(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.links import service as links

    return await links.get_link(rt, *_link_id(rt, args))


async def links_delete(rt: Runtime, args: argparse.Namespace) -> Any:
    from slugline.links import service as links

    return await links.delete_link(rt, *_link_id(rt, args))


async def links_export(rt: Runtime, args: argparse.Namespace) -> Any:
    """Every link of the account to `--output` (or standard output), as `GET /links/export` streams it."""
    from slugline.accounts import service as accounts
    from slugline.links import export

    query = {"format": args.format, "q": args.q}
    written = 0
    async with await export.export_links(rt, accounts.operator(rt, args.account), query) as made:
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(open(args.output, "wb")) if args.output else sys.stdout.buffer  # noqa: ASYNC230
            async for chunk in made:
                out.write(chunk)
                written += len(chunk)
            out.flush()
    return {"output": args.output or "-", "format": args.format, "bytes": written}


def links_import(rt: Runtime, args: argparse.Namespace) -> Any:
    """The links of a file `links export` wrote, into the account (see `slugline.links.importer`)."""
    from slugline.accounts import service as accounts
    from slugline.links import importer

    caller = accounts.operator(rt, args.account)
    fmt = args.format or importer.guess_format(args.file)
    with open(args.file, encoding="utf-8-sig", newline="") as lines:  # newline="": the csv module reads line ends
        return importer.import_links(rt, caller, lines, fmt, dry_run=args.dry_run, overwrite=args.overwrite)


def links_purge(rt: Runtime, args: argparse.Namespace) -> Any:
    """Every link of every account that expired before `--expired-before`, with its clicks, in batches."""
    from datetime import UTC, datetime

    from slugline.links import purge

    before = datetime.fromisoformat(args.expired_before)
    return purge.purge_expired(rt, before if before.tzinfo else before.replace(tzinfo=UTC), batch=args.batch)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


def _expiry_date(text: str) -> str:
    from datetime import datetime

    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date or time (UTC): {text!r}") from None
    return text


def _show_import(report: dict[str, Any]) -> None:
    for problem in report["problems"]:
        print(f"row {problem['row']}: {problem['kind']}: {problem['message']}")
    counts = ", ".join(
        f"{report[name]} {name}" for name in ("created", "skipped", "overwritten", "conflicts", "errors")
    )
    print(("dry run, nothing written: " if report["dry_run"] else "") + counts)


def _show_export(answer: dict[str, Any]) -> None:
    if answer["output"] != "-":  # the file itself went to standard output: nothing else goes there
        print(f"wrote {answer['bytes']} bytes of {answer['format']} to {answer['output']}")


LINK_COLUMNS = ["id", "slug", "visibility", "clicks", "short_url", "destination_url"]


def _show_link(link: dict[str, Any]) -> None:
    """A link's fields in its JSON's order: the link's shown columns, with `short_url` after its slug, then its
    lifecycle (`links.service.SHOWN_NAMES` and `links.lifecycle.SHOWN_FIELDS`). A deletion's answer as it is."""
    from slugline.links import lifecycle, service

    if "slug" not in link:
        _fields(link)
        return
    plain = service.SHOWN_NAMES[: service.PLAIN]
    _fields(link, [*plain[:2], "short_url", *plain[2:], *lifecycle.SHOWN_FIELDS])


def _show_page(page: dict[str, Any]) -> None:
    _table(page["data"], LINK_COLUMNS)
    p = page["pagination"]
    print(f"page {p['page']} of {max(p['pages'], 1)}, {p['total']} link{'' if p['total'] == 1 else 's'}")


def _show_account(account: dict[str, Any]) -> None:
    keys = account.get("keys", [])
    _fields(account, ["username", "plan", "created_at", "links", "sessions"])
    for key in keys:
        print(
            f"key: {key['scope']} {key['prefix']}...{key['last4']} made {key['created_at']}, used {key['last_used_at']}"
        )
    if not keys:
        print("key: -")


EXAMPLES = {
    "accounts": """examples:
  SLUGLINE_NEW_PASSWORD='a long password' slugline accounts create ada --plan developer
  slugline accounts list
  slugline accounts show ada --json
  slugline accounts set-plan ada pro
  slugline accounts reset-password ada        (asks for the new password; signs every session out)
  slugline accounts delete ada --yes          (its links, clicks, keys and sessions too; cannot be undone)""",
    "keys": """examples:
  slugline keys list ada
  slugline keys revoke ada --scope public
  slugline keys revoke ada                    (both keys)""",
    "links": """examples:
  slugline links list --account ada --q launch --per 50
  slugline links create --account ada https://example.com/launch --slug launch --tag news --tag 2026
  slugline links show --account ada launch --json
  slugline links delete --account ada launch
  slugline links export --account ada --format ndjson --output ada-links.ndjson
  slugline links import ada-links.ndjson --account ada --dry-run
  slugline links purge --expired-before 2026-01-01""",
    "webhooks": admin_webhooks.EXAMPLES,
}


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `accounts`, `keys` and `links` commands, on `slugline`'s sub-parsers."""
    raw = argparse.RawDescriptionHelpFormatter

    def command(parent: Any, name: str, run: Command, show: Callable[[Any], None], help: str) -> Any:
        made = parent.add_parser(name, help=help, description=help)
        made.add_argument("--json", action="store_true", help="print the answer as JSON (as the API gives it)")
        made.set_defaults(func=lambda args: _run(run, args), show=show)
        return made

    def group(name: str, help: str) -> Any:
        parser = sub.add_parser(name, help=help, description=help, epilog=EXAMPLES[name], formatter_class=raw)
        return parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    accounts = group("accounts", "manage accounts")
    made = command(
        accounts,
        "create",
        accounts_create,
        _fields,
        "create an account (password from SLUGLINE_NEW_PASSWORD or a prompt)",
    )
    made.add_argument("name")
    made.add_argument("--plan", choices=list(PLAN_RANK), default=None, help="plan (default: the configured one)")
    command(
        accounts,
        "list",
        accounts_list,
        lambda rows: _table(rows, ["username", "plan", "links", "keys"]),
        "list every account",
    )
    command(accounts, "show", accounts_show, _show_account, "an account's plan, links, keys and sessions").add_argument(
        "name"
    )
    made = command(accounts, "set-plan", accounts_set_plan, _show_account, "change an account's plan")
    made.add_argument("name")
    made.add_argument("plan", choices=list(PLAN_RANK))
    command(
        accounts,
        "reset-password",
        accounts_reset_password,
        _fields,
        "set a new password (SLUGLINE_NEW_PASSWORD or a prompt); signs every session out, ends OAuth grants",
    ).add_argument("name")
    made = command(
        accounts,
        "delete",
        accounts_delete,
        _show_deleted,
        "delete an account with its links, clicks, keys, sessions and OAuth grants, in batches (cannot be undone)",
    )
    made.add_argument("name")
    made.add_argument("--yes", action="store_true", help="confirm (else the name is asked for at a terminal)")
    made.add_argument("--batch", type=_positive, default=500, help="links deleted per transaction (default 500)")
    made.set_defaults(func=_delete_confirmed)

    keys = group("keys", "an account's API keys")
    command(
        keys,
        "list",
        keys_list,
        lambda rows: _table(rows, ["scope", "prefix", "last4", "created_at", "last_used_at"]),
        "list an account's API keys",
    ).add_argument("name")
    made = command(keys, "revoke", keys_revoke, _fields, "revoke an account's API keys (both, or one --scope)")
    made.add_argument("name")
    made.add_argument("--scope", choices=["full", "public"], help="only this key")

    links = group("links", "an account's links")
    made = command(links, "list", links_list, _show_page, "list an account's links, newest first")
    made.add_argument("--account", required=True, metavar="NAME")
    made.add_argument("--q", help="search: every term must match (as the API's q)")
    made.add_argument("--page", type=int, help="page number (default 1)")
    made.add_argument("--per", type=int, help="links per page (default 20, at most 100)")
    made.add_argument("--sort", choices=["created_at", "updated_at", "clicks", "slug"], help="sort field")
    made.add_argument("--dir", choices=["asc", "desc"], help="sort direction (default desc)")
    made = command(links, "create", links_create, _show_link, "create a link")
    made.add_argument("--account", required=True, metavar="NAME")
    made.add_argument("url", help="the destination URL")
    made.add_argument("--slug", help="the short URL's slug (default: generated)")
    made.add_argument("--title")
    made.add_argument("--description")
    made.add_argument("--note")
    made.add_argument("--tag", action="append", metavar="HASHTAG", help="a hashtag (repeat for more)")
    made.add_argument("--visibility", choices=["public", "unlisted", "private", "password"])
    made.add_argument("--password", help="the visitors' password, with --visibility password")
    made.add_argument("--auto-meta", action="store_true", help="fill title and description from the destination")
    for name, run, help in (
        ("show", links_show, "show one link (by id or slug)"),
        ("delete", links_delete, "delete one link (by id or slug) and its clicks"),
    ):
        made = command(links, name, run, _show_link, help)
        made.add_argument("--account", required=True, metavar="NAME")
        made.add_argument("link", metavar="ID_OR_SLUG")
    made = command(links, "export", links_export, _show_export, "write every link of an account to a file")
    made.add_argument("--account", required=True, metavar="NAME")
    made.add_argument("--format", choices=["csv", "ndjson"], default="csv", help="the file's format (default csv)")
    made.add_argument("--output", metavar="FILE", help="the file to write (default: standard output)")
    made.add_argument("--q", help="only the links matching this search (as the API's q)")
    made = command(links, "import", links_import, _show_import, "read links from a file `links export` wrote")
    made.add_argument("file", metavar="FILE")
    made.add_argument("--account", required=True, metavar="NAME")
    made.add_argument(
        "--format",
        choices=["csv", "ndjson", "shlink", "yourls", "kutt", "bitly"],
        help="ours (csv, ndjson; by default from the file's name, else csv), or another service's export",
    )
    made.add_argument("--dry-run", action="store_true", help="report what would happen, write nothing")
    made.add_argument("--overwrite", action="store_true", help="change this account's links whose slug the file has")
    made = command(
        links,
        "purge",
        links_purge,
        lambda done: print(f"purged {done['purged']} link(s) that expired before {done['expired_before']}"),
        "delete the links of every account that expired before a date, with their clicks",
    )
    made.add_argument(
        "--expired-before", required=True, type=_expiry_date, metavar="DATE", help="an ISO date or time, UTC"
    )
    made.add_argument("--batch", type=_positive, default=500, help="links deleted per transaction (default 500)")
    admin_webhooks.add(group("webhooks", "an account's webhook endpoints"), command, _table, _fields)
