"""Turning untrusted input into a validated model, or a 422 that names the field and the rule."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from slugline.common.errors import Invalid, describe_validation

M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: Any) -> M:
    if not isinstance(data, dict):
        raise Invalid("the request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise Invalid(describe_validation(exc.errors(include_url=False))) from None


def without_nulls(data: Any) -> Any:
    """Optional arguments sent as null (query parameters left out, MCP clients that send every key) are not given.

    Not for updates, where null means "clear this field"."""
    return {key: value for key, value in data.items() if value is not None} if isinstance(data, dict) else data
