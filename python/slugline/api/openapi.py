"""Request bodies and some query strings are read by hand (so auth errors come before input errors); this documents
them in the OpenAPI document anyway, from the same models the service layer validates with."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from slugline.schemas import object_schema, properties


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": object_schema(model)}}}}


def query_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Documents query parameters that a handler passes on as a plain dict (so a 404 comes before a 422)."""
    return {
        "parameters": [
            {"name": name, "in": "query", "required": False, "schema": prop} for name, prop in properties(model).items()
        ]
    }
