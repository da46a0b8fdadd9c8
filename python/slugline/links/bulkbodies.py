"""The bodies of the bulk calls (`slugline.links.bulk`), and the words of their answers: per item (`index`, `status`,
then the link or `error`), or the first failure naming its item when the call is `atomic`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator
from sqlalchemy.orm import Session

from slugline.common.errors import ServiceError
from slugline.common.models import LinkRecord

MAX_ITEMS = 1_000
ATOMIC = (
    "true: all items are applied or none (the first failure is the answer, with its status); false: each item "
    "answers on its own"
)


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid")

    atomic: StrictBool = Field(default=False, description=ATOMIC)

    @field_validator("ids", mode="before", check_fields=False)
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        """No id holds NUL (PostgreSQL cannot store it), and the document says every text refuses it."""
        if isinstance(value, list) and any(isinstance(item, str) and "\x00" in item for item in value):
            raise ValueError("ids must not contain NUL characters")
        return value


class BulkCreate(_Envelope):
    links: list[dict[str, Any]] = Field(
        min_length=1, max_length=MAX_ITEMS, description=f"1-{MAX_ITEMS} links, each a POST /links body"
    )


class BulkUpdate(_Envelope):
    ids: list[str] = Field(min_length=1, max_length=MAX_ITEMS, description=f"1-{MAX_ITEMS} link ids")
    change: dict[str, Any] = Field(
        description="The fields to set on every link, as a PUT /links/{id} body (not slug, which is each link's own)"
    )


class BulkDelete(_Envelope):
    ids: list[str] = Field(min_length=1, max_length=MAX_ITEMS, description=f"1-{MAX_ITEMS} link ids")


Item = dict[str, Any]
Saved = tuple[int, LinkRecord | None, str, str | None]  # (version, the link or None when deleted, id, old slug)


def answer(results: list[Item]) -> dict[str, Any]:
    ok = sum(1 for item in results if item["status"] < 400)
    return {"results": results, "succeeded": ok, "failed": len(results) - ok}


def failed(index: int, exc: ServiceError) -> Item:
    return {"index": index, "status": exc.status, "error": exc.message}


def refuse(index: int, exc: ServiceError) -> ServiceError:
    """The atomic call's answer: the first failing item's error, naming it."""
    return (
        type(exc)(f"item {index}: {exc.message}", exc.headers) if type(exc).__init__ is ServiceError.__init__ else exc
    )


def each(
    session: Session, body: BulkUpdate | BulkDelete, action: Callable[[Session, int, str], tuple[Item, Saved]]
) -> tuple[list[Item], list[Saved]]:
    """`action` on every id in turn: its answer, or the item's failure (the whole call's refusal when `atomic`)."""
    results: list[Item] = []
    saved: list[Saved] = []
    for index, link_id in enumerate(body.ids):
        try:
            result, done = action(session, index, link_id)
        except ServiceError as exc:
            if body.atomic:
                raise refuse(index, exc) from None
            results.append(failed(index, exc))
            continue
        results.append(result)
        saved.append(done)
    return results, saved
