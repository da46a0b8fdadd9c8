"""Request bodies are read by hand (so auth errors come before body errors); this documents them anyway."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def query_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Documents query parameters that a handler passes on as a plain dict (so a 404 comes before a 422)."""
    schema = model.model_json_schema()
    return {"parameters": [{"name": name, "in": "query", "required": False, "schema": prop}
                           for name, prop in schema.get("properties", {}).items()]}
