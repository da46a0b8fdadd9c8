"""Links read back from a file `GET /links/export` wrote (`slugline links import`), or another service's export
(`slugline.links.peers`: Shlink, YOURLS, Kutt, Bitly), into one account.

Re-running an import changes nothing: a link whose slug is already there with the same destination is skipped; the
same slug with another destination (this account's or another's: slugs are global) is a conflict, reported and never
overwritten, unless `overwrite` asks to change this account's link to the file's fields. A new link keeps the file's
id when it is free (so references to it stay valid on a new server), its clicks count and its times.

The file is read and written in batches of `BATCH` rows, each one transaction: one lookup of the batch's slugs and
ids, then its new links in one statement (`importwrite`), so a million links go in at tens of thousands a second.
The caches and the search index learn of a batch's links once it commits, so memory follows the batch, not the file
(a dry run, which writes nothing, also keeps a pair of hashes per link to find a slug repeated in the file). A row
that is not a valid link is reported with its number and skipped.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from slugline import _core
from slugline.common.caller import Caller
from slugline.common.clock import utcnow
from slugline.common.errors import Conflict, ServiceError, describe_validation
from slugline.common.inputs import LinkCreate
from slugline.common.models import Link, LinkRecord
from slugline.common.visibility import HIDDEN_LEVELS, Visibility
from slugline.links import events, files, importwrite, peers
from slugline.links import service as links
from slugline.runtime import Runtime
from slugline.storage.loopwrite import drive, session_run

FORMATS = ("csv", "ndjson", *peers.FORMATS)
BATCH = 2_000
MAX_LISTED = 100  # conflicts and errors listed in the report; the counts go on past it
CHECKED = ("slug", "destination_url", "title", "description", "note", "hashtags")  # validated as a create's
KEPT = frozenset(f.name for f in dataclasses.fields(LinkRecord)) - {"account_id"}


@dataclass
class Report:
    dry_run: bool
    created: int = 0
    skipped: int = 0
    overwritten: int = 0
    conflicts: int = 0
    errors: int = 0
    problems: list[dict[str, Any]] = field(default_factory=list)  # the first MAX_LISTED conflicts and errors
    seen: dict[int, int] = field(default_factory=dict, repr=False)  # a batch's slugs' and destinations' hashes

    def note(self, row: int, kind: str, message: str) -> None:
        if kind == "conflict":
            self.conflicts += 1
        else:
            self.errors += 1
        if len(self.problems) < MAX_LISTED:
            self.problems.append({"row": row, "kind": kind, "message": message})

    def add(self, part: Report) -> None:
        """A batch's counts and problems (once it is written)."""
        for name in ("created", "skipped", "overwritten", "conflicts", "errors"):
            setattr(self, name, getattr(self, name) + getattr(part, name))
        self.problems += part.problems[: MAX_LISTED - len(self.problems)]

    def answer(self) -> dict[str, Any]:
        return {name: value for name, value in dataclasses.asdict(self).items() if name != "seen"}


def import_links(
    rt: Runtime,
    caller: Caller,
    lines: Iterable[str],
    fmt: str,
    dry_run: bool = False,
    overwrite: bool = False,
    batch: int | None = None,
) -> dict[str, Any]:
    """Blocking: reads `lines` (a file's text, as `files.read` takes it) and writes the account's links, `batch`
    (`BATCH`) rows a transaction."""
    report = Report(dry_run)
    # slug -> destination of every link this import made or kept. A real import needs it within a batch only (the
    # database knows the earlier ones); a dry run writes nothing, so it keeps one (hashed) entry per link of the file.
    seen: dict[int, int] = {}
    rows = enumerate(peers.read(lines, fmt) if fmt in peers.FORMATS else files.read(lines, fmt), 1)
    try:
        while part := list(itertools.islice(rows, batch or BATCH)):
            _batch(rt, caller, list(_checked(caller, part, report)), report, seen if dry_run else {}, overwrite)
    except files.BadRow as exc:
        report.note(0, "error", str(exc))
    return report.answer()


Numbered = list[tuple[int, dict[str, Any] | files.BadRow]]  # rows with their number in the file, from 1
Checked = list[tuple[int, dict[str, Any]]]
Saved = list[tuple[int, LinkRecord, str | None]]  # (version, link, old slug) of each write


def _batch(rt: Runtime, caller: Caller, checked: Checked, report: Report, seen: dict[int, int], over: bool) -> None:
    """One batch in one transaction (tried again once when a concurrent writer took a slug or an id meanwhile:
    nothing of it was written); then the caches and the search index learn of its links, in version order."""
    for attempt in range(2):
        part = Report(report.dry_run)
        try:
            with rt.db.writing() as session:
                saved = _decide(session, caller, checked, part, seen, over)
        except IntegrityError:
            if attempt:
                raise Conflict("a slug or id was taken by another writer meanwhile: run the import again") from None
            continue
        break
    report.add(part)
    seen.update(part.seen)
    for version, link, old_slug in sorted(saved, key=lambda item: item[0]):
        events.link_saved(rt, caller.account_id, version, link, old_slug)


def _decide(
    session: Session, caller: Caller, checked: Checked, report: Report, seen: dict[int, int], overwrite: bool
) -> Saved:
    """What each row comes to (created, skipped, conflict, overwritten), written unless it is a dry run. The rows
    of earlier batches are in `seen` (a dry run's) or in the database; this batch's go to `report.seen`."""
    found = _existing(session, [row["slug"] for _, row in checked], [row.get("id") for _, row in checked])
    dialect = session.get_bind().dialect.name
    saved: Saved = []
    made: list[LinkRecord] = []
    for number, row in checked:
        slug, destination = row["slug"], row["destination_url"]
        earlier = report.seen.get(hash(slug), seen.get(hash(slug)))
        there = found.get(slug) or ((caller.account_id, earlier, None) if earlier is not None else None)
        mine = there is not None and there[0] == caller.account_id
        if there is not None and mine and there[1] in (destination, hash(destination)):
            report.skipped += 1
        elif there is not None and not (overwrite and mine and there[2] is not None):
            shown = there[1] if isinstance(there[1], str) else "a link earlier in the file"
            report.note(number, "conflict", f"slug '{slug}' is already taken (for {shown})")
        elif there is not None:
            try:
                if not report.dry_run:
                    saved.append(_overwrite(session, caller, str(there[2]), row, dialect))
                report.overwritten += 1
            except ServiceError as exc:  # refused before anything was written (a password link without one)
                report.note(number, "error", exc.message)
        else:
            made.append(_record(caller, row, found))
            report.created += 1
        report.seen[hash(slug)] = hash(destination)
    if made and not report.dry_run:
        first = importwrite.write_links(session, caller.account_id, made)
        saved += [(first + n, link, None) for n, link in enumerate(made)]
    return saved


def _checked(caller: Caller, batch: Numbered, report: Report) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows that are links a create would take (and a known visibility, a password link with its hash, a level
    the caller's key may make: a public-only key imports no hidden link)."""
    for number, row in batch:
        if isinstance(row, files.BadRow):
            report.note(number, "error", str(row))
            continue
        try:
            LinkCreate.model_validate({name: row[name] for name in CHECKED if row.get(name) is not None})
            visibility = Visibility(row.get("visibility") or Visibility.PUBLIC)
        except ValidationError as exc:
            report.note(number, "error", describe_validation(exc.errors(include_url=False)))
            continue
        except ValueError:
            report.note(number, "error", f"visibility '{row.get('visibility')}' is not one the service knows")
            continue
        if "slug" not in row:
            report.note(number, "error", "slug is required")
        elif caller.public_only and visibility in HIDDEN_LEVELS:
            report.note(number, "error", "a public-only key cannot import a private or password-protected link")
        elif visibility == Visibility.PASSWORD and not row.get("password_hash"):
            report.note(number, "error", "a password link needs its password_hash")
        else:
            yield number, {**row, "visibility": visibility.value}


def _existing(session: Session, slugs: list[str], ids: list[Any]) -> dict[str, tuple[int, str, str | None]]:
    """slug -> (account, destination, id) of the links holding `slugs`, and id -> (account, "", None) of those
    holding one of `ids` (a new link takes its file's id only when it is free)."""
    found: dict[str, tuple[int, str, str | None]] = {}
    for account, slug, destination, link_id in session.execute(
        select(Link.account_id, Link.slug, Link.destination_url, Link.id).where(Link.slug.in_(slugs))
    ):
        found[slug] = (account, destination, link_id)
    wanted = [i for i in ids if isinstance(i, str) and links.LINK_ID.fullmatch(i)]
    for account, link_id in session.execute(select(Link.account_id, Link.id).where(Link.id.in_(wanted))):
        found[f"id:{link_id}"] = (account, "", None)
    return found


def _record(caller: Caller, row: dict[str, Any], found: dict[str, Any]) -> LinkRecord:
    values = {name: value for name, value in row.items() if name in KEPT and value is not None}
    link_id = values.get("id")
    if not (isinstance(link_id, str) and links.LINK_ID.fullmatch(link_id)) or f"id:{link_id}" in found:
        values["id"] = _core.generate_link_id()
    now = utcnow()
    values.setdefault("created_at", now)
    values.setdefault("updated_at", values["created_at"])
    values.setdefault("clicks", 0)
    values["hashtags"] = list(values.get("hashtags") or [])
    found[f"id:{values['id']}"] = (caller.account_id, "", None)
    return LinkRecord(account_id=caller.account_id, **values)


def _overwrite(
    session: Session, caller: Caller, link_id: str, row: dict[str, Any], dialect: str
) -> tuple[int, LinkRecord, str | None]:
    """This account's link with the file's fields, as an update makes it (a password link keeps its password)."""
    change = {name: row.get(name) for name in (*CHECKED, "visibility") if name != "slug"}
    link, old_slug, version = drive(links.write_change(caller, link_id, change, dialect, session_run(session)))
    return version, link, old_slug
