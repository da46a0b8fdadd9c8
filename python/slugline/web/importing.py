"""An import sent over HTTP (`POST /api/v1/links/import`, the dashboard's upload page): the form's file is streamed
to a temporary file (`multipart`, at most `SLUGLINE_IMPORT_MAX_MB`), then read by the same service function as
`slugline links import` (`importer.import_links`) on a worker thread, and its report is the answer.

An import holds a thread for as long as it runs, so a worker runs at most `MAX_RUNNING` at once and one per account
(another gets 429 with Retry-After); the file is deleted when it is done, whatever happened.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread

from slugline.common.caller import Caller
from slugline.common.errors import Invalid, RateLimited
from slugline.links import importer, importrows
from slugline.runtime import Runtime
from slugline.web import multipart

FILE_FIELD = "file"
MAX_RUNNING = 2
_running: set[int] = set()  # accounts with an import under way in this worker


FIELDS = (FILE_FIELD, "format", "dry_run", "overwrite")  # what the form may hold (the document says so too)


def import_format(fields: dict[str, str], filename: str) -> str:
    """The form's `format`, else the file name's (`.ndjson`/`.jsonl`, `.json` for Kutt, `.sql` for YOURLS), else CSV."""
    fmt = fields["format"] if "format" in fields else importer.guess_format(filename)
    if fmt not in importer.FORMATS:
        raise Invalid(f"format must be one of {', '.join(importer.FORMATS)}, not '{fmt[:40]}'")
    return fmt


def flag(fields: dict[str, str], name: str) -> bool:
    value = fields.get(name, "false")
    if value not in ("true", "false"):
        raise Invalid(f"{name} must be true or false")
    return value == "true"


async def import_upload(
    rt: Runtime,
    caller: Caller,
    content_type: str,
    chunks: AsyncIterator[bytes],
    check: Callable[[dict[str, str]], None] | None = None,
) -> dict[str, Any]:
    """The report of importing the form's file into the caller's account (`check`: a look at the form's fields
    before anything is imported, which may take its own out of them: the dashboard's CSRF token)."""
    settings = rt.settings
    with tempfile.TemporaryDirectory(prefix="slugline-import-") as folder:
        upload = await multipart.receive(
            content_type, chunks, FILE_FIELD, folder, settings.import_max_mb << 20, settings.body_timeout_seconds
        )
        if check is not None:
            check(upload.fields)
        if upload.path is None:
            raise Invalid(f"the form must hold the file to import, as its '{FILE_FIELD}' field")
        unknown = sorted(set(upload.fields) - set(FIELDS))
        if unknown:
            raise Invalid(f"the form has a field the import does not know: '{unknown[0][:40]}'")
        fmt = import_format(upload.fields, upload.filename)
        dry_run, overwrite = flag(upload.fields, "dry_run"), flag(upload.fields, "overwrite")
        if not upload.text:  # a file, but not one of links: the report says so, and nothing is read
            report = importrows.Report(dry_run)
            report.note(0, "error", f"the file is not UTF-8 text (byte {upload.bad_byte}): nothing was imported")
            return report.answer()
        with _turn(caller.account_id):
            return await anyio.to_thread.run_sync(_run, rt, caller, upload.path, fmt, dry_run, overwrite)


def _run(rt: Runtime, caller: Caller, path: Path, fmt: str, dry_run: bool, overwrite: bool) -> dict[str, Any]:
    with open(path, encoding="utf-8-sig", newline="") as lines:
        return importer.import_links(rt, caller, lines, fmt, dry_run=dry_run, overwrite=overwrite)


@contextlib.contextmanager
def _turn(account_id: int) -> Iterator[None]:
    """This worker's turn for the account's import (its thread is taken only once this is granted)."""
    if account_id in _running or len(_running) >= MAX_RUNNING:
        raise RateLimited("an import is already running (one per account, a few per server)", 5)
    _running.add(account_id)
    try:
        yield
    finally:
        _running.discard(account_id)
