"""Request bodies and some query strings are read by hand (so auth errors come before input errors); this documents
them in the OpenAPI document anyway, from the same models the service layer validates with."""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from slugline.api.operations import DEGRADED, ERRORS, OPERATIONS, UNLISTED, Operation
from slugline.common.inputs import LinkCreate, LinkUpdate, object_schema, properties, update_properties
from slugline.common.outputs import Error
from slugline.common.visibility import Visibility

PASSWORD_WITH_VISIBILITY = [
    {"not": {"required": ["password"]}},
    {"not": {"required": ["visibility"]}},
    {"properties": {"visibility": {"const": Visibility.PASSWORD.value}}},
]


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = object_schema(model)
    if model is LinkCreate:
        _create_rules(schema)
    elif model is LinkUpdate:
        # An empty update is refused; a password cannot come with another visibility in the same body. (Whether
        # a password may come alone, or visibility 'password' without one, depends on the link: a documented 422.)
        schema.update(properties=update_properties(), minProperties=1, anyOf=PASSWORD_WITH_VISIBILITY)
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def _create_rules(schema: dict[str, Any]) -> None:
    """What a create body adds to the fields' own rules: null means not given (as MCP clients send every argument),
    and a password comes exactly with visibility 'password'. Kept out of the MCP tool schema, whose clients may not
    take a top-level anyOf."""
    props = schema["properties"]
    for name, prop in props.items():
        if name not in schema.get("required", ()) and not any(b.get("type") == "null" for b in prop.get("anyOf", ())):
            help_text = {key: prop.pop(key) for key in ("description", "default") if key in prop}
            props[name] = {"anyOf": [prop, {"type": "null"}], **help_text}
    others = [level.value for level in Visibility if level != Visibility.PASSWORD]
    schema["anyOf"] = [
        {
            "required": ["visibility", "password"],
            "properties": {"visibility": {"const": Visibility.PASSWORD.value}, "password": {"type": "string"}},
        },
        {"properties": {"visibility": {"enum": [*others, None]}, "password": {"type": "null"}}},
    ]


def query_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Documents query parameters that a handler passes on as a plain dict (so a 404 comes before a 422)."""
    return {
        "parameters": [
            {"name": name, "in": "query", "required": False, "schema": prop} for name, prop in properties(model).items()
        ]
    }


NO_NUL = "^[^\\x00]*$"  # every text input refuses NUL (PostgreSQL cannot store it); `_Strict` enforces it
SECURITY = {
    "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "API key (svc_live_, svc_pub_) or, for /me, /api-key and /auth/logout only, a session token "
        "(svc_sess_)",
    }
}
IMAGES = {
    "image/png": {"schema": {"type": "string", "format": "binary"}},
    "image/svg+xml": {"schema": {"type": "string"}},
}


def install(app: FastAPI, prefix: str) -> None:
    """Replace FastAPI's document with one that lists every status each operation answers, with its schema."""

    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            app.openapi_schema = complete(doc, prefix)
        return app.openapi_schema

    app.openapi = document  # type: ignore[method-assign]


def complete(doc: dict[str, Any], prefix: str) -> dict[str, Any]:
    models: dict[str, Any] = {"Error": Error.model_json_schema()}
    for path, methods in doc.get("paths", {}).items():
        for method, op in methods.items():
            spec = OPERATIONS.get((method, path.removeprefix(prefix)), UNLISTED)
            op["responses"] = _responses(spec, op["responses"], models)
            if spec.auth != "none":
                op["security"] = [{"bearerAuth": []}] + ([{}] if spec.auth == "optional" else [])
            for param in op.get("parameters", ()):
                _refuse_nul(param["schema"])
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            _refuse_nul(body.get("schema", {}))
    components = doc.setdefault("components", {})
    components["schemas"] = models
    components["securitySchemes"] = SECURITY
    return doc


def _responses(spec: Operation, generated: dict[str, Any], models: dict[str, Any]) -> dict[str, Any]:
    if spec.answer is not None:
        ok: dict[str, Any] = spec.answer
    elif spec.ok is None:
        content = IMAGES if spec is not UNLISTED else {"application/json": {"schema": {"type": "object"}}}
        ok = {"description": "Success", "content": content}
    else:
        ok = {
            "description": spec.ok.__doc__ or "Success",
            "content": {"application/json": {"schema": _ref(spec.ok, models)}},
        }
    out = {str(spec.status): ok}
    if spec.degraded is not None:
        out[str(spec.degraded)] = {**ok, "description": DEGRADED}
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for status in sorted(spec.errors):
        out[str(status)] = {"description": ERRORS[status], "content": error}
    return out


def _ref(model: type[BaseModel], models: dict[str, Any]) -> dict[str, Any]:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}", mode="serialization")
    models.update(schema.pop("$defs", {}))
    models[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _refuse_nul(schema: dict[str, Any]) -> None:
    """Add the no-NUL pattern to every free text schema (one with a pattern, enum or format says more already)."""
    if schema.get("type") == "string" and not {"pattern", "enum", "const", "format"} & schema.keys():
        schema["pattern"] = NO_NUL
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, ()):
            _refuse_nul(branch)
    for sub in schema.get("properties", {}).values():
        _refuse_nul(sub)
    if isinstance(schema.get("items"), dict):
        _refuse_nul(schema["items"])


def allowed_methods(app: FastAPI, path: str) -> str | None:
    """The documented methods of the operation path that `path` falls under (for a 405's `Allow`), or None."""
    for template, methods in app.openapi()["paths"].items():
        if re.fullmatch(re.sub(r"\\{[^/]+\\}", "[^/]+", re.escape(template)), path):
            return ", ".join(sorted(method.upper() for method in methods))
    return None
