"""An import's rows one by one (`slugline.links.importer`): each checked as a create would check it, and the report
the import answers, which counts every row and lists the first `MAX_LISTED` conflicts and errors."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from slugline import _core
from slugline.common.bounds import MAX_DESCRIPTION, MAX_NOTE, MAX_TITLE
from slugline.common.caller import Caller
from slugline.common.errors import describe_validation
from slugline.common.inputs import LinkCreate, check_hashtags, plain_destination
from slugline.common.visibility import HIDDEN_LEVELS, Visibility
from slugline.links import files

MAX_LISTED = 100  # conflicts and errors listed in the report; the counts go on past it
# Validated as a create's, and stored as the create would store them: the destination stripped, hashtags tidied
# (lowercased, without '#', once each), rules and variants as the model makes them (the Rust core compiles them on
# the redirect path, so a hand-edited file cannot store rules it would refuse).
CHECKED = ("slug", "destination_url", "title", "description", "note", "hashtags", "rules", "variants")
Numbered = list[tuple[int, dict[str, Any] | files.BadRow]]  # rows with their number in the file, from 1


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


def checked(caller: Caller, batch: Numbered, report: Report) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows that are links a create would take (and a known visibility, a password link with its hash, a level
    the caller's key may make: a public-only key imports no hidden link)."""
    for number, row in batch:
        if isinstance(row, files.BadRow):
            report.note(number, "error", str(row))
            continue
        try:
            quick = _plain(row)
            made = None if quick is not None else _validated(row)
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
        elif quick is not None:  # no rules or variants (or null ones)
            yield number, {**row, **quick, "visibility": visibility.value, **{k: None for k in _ROUTES if k in row}}
        elif made is not None:
            routes = {
                "rules": [rule.model_dump() for rule in made.rules] if made.rules else None,
                "variants": [variant.model_dump() for variant in made.variants] if made.variants else None,
            }
            stored = {k: getattr(made, k) for k in _NORMALISED if row.get(k) is not None}
            routed = {k: v for k, v in routes.items() if k in row}
            yield number, {**row, **stored, "visibility": visibility.value, **routed}


def _validated(row: dict[str, Any]) -> LinkCreate:
    return LinkCreate.model_validate({name: row[name] for name in CHECKED if row.get(name) is not None})


_ROUTES = ("rules", "variants")
_NORMALISED = ("destination_url", "hashtags")  # what a create stores differs from what it was sent (stripped, tidied)
_TEXTS = (("title", MAX_TITLE), ("description", MAX_DESCRIPTION), ("note", MAX_NOTE))


def _plain(row: dict[str, Any]) -> dict[str, Any] | None:
    """The values `LinkCreate` would make of the row's checked fields (its hashtags tidied), when it is a row the
    model takes, found without building it (a third of an import's CPU): plain text within its bounds, no NUL, a
    slug the core takes, a destination the pattern alone accepts (nothing to strip), hashtags `check_hashtags` takes,
    no rules or variants. None only means the row goes through `LinkCreate`, which accepts or refuses it (with its
    message) as a create would: so every row this takes, the model would take too, with the same values
    (`tests/links/test_import.py` holds both to it)."""
    if row.get("rules") is not None or row.get("variants") is not None:
        return None
    slug, url = row.get("slug"), row.get("destination_url")
    if type(slug) is not str or type(url) is not str or "\x00" in slug or _core.slug_error(slug):
        return None
    if not plain_destination(url):  # the pattern refuses NUL and the empty URL
        return None
    for name, most in _TEXTS:
        text = row.get(name)
        if text is not None and (type(text) is not str or len(text) > most or "\x00" in text):
            return None
    tags = row.get("hashtags")
    if tags is None:
        return _NOTHING
    if type(tags) is not list or any(type(tag) is not str or "\x00" in tag for tag in tags):
        return None
    try:
        return {"hashtags": check_hashtags(tags)}
    except ValueError:
        return None


_NOTHING: dict[str, Any] = {}
