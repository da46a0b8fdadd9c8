"""Request bodies and some query strings are read by hand (so auth errors come before input errors); this documents
them in the OpenAPI document anyway, from the same models the service layer validates with."""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel

from slugline.api import examples
from slugline.api.operations import DEGRADED, ERRORS, OPERATIONS, UNLISTED, Operation
from slugline.api.webhook_docs import webhooks
from slugline.common.inputs import LinkCreate, LinkUpdate, object_schema, properties, update_properties
from slugline.common.outputs import Error
from slugline.common.visibility import Visibility
from slugline.webhooks.inputs import WebhookUpdate

PASSWORD_RULE = (
    "A password comes exactly with visibility 'password': a body with visibility 'password' must carry a password, "
    "and a body with a password and another visibility (or none, which means public) is refused with 422."
)
UPDATE_PASSWORD_RULE = (
    "A password cannot come with another visibility in the same body (422). Whether a password may come alone, or "
    "visibility 'password' without one, depends on the link: a link that has no password yet needs one with "
    "visibility 'password', and only a password link takes a new password alone (422 otherwise)."
)


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The request body, as a named component (`complete` moves it under `components/schemas/<model name>`), so a
    generated client gets a class of that name. The rules across fields are stated in words and, where JSON Schema
    can say them, with `if`/`then`/`else`: never as a top-level `anyOf`, which generators turn into a union that loses
    the fields."""
    schema = object_schema(model)
    if model.__doc__:
        schema["description"] = " ".join(model.__doc__.split())
    if model is LinkCreate:
        _create_rules(schema)
    elif model is LinkUpdate:
        # An empty update is refused; a password cannot come with another visibility in the same body.
        schema.update(properties=update_properties(), minProperties=1)
        schema["description"] = f"{schema.get('description', '')} {UPDATE_PASSWORD_RULE}".strip()
        schema["if"] = {"required": ["password", "visibility"]}
        schema["then"] = {"properties": {"visibility": {"const": Visibility.PASSWORD.value}}}
    if model is WebhookUpdate:
        schema["minProperties"] = 1  # an empty update is refused
    schema["title"] = model.__name__
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def _create_rules(schema: dict[str, Any]) -> None:
    """What a create body adds to the fields' own rules: null means not given (as MCP clients send every argument),
    and a password comes exactly with visibility 'password'. Kept out of the MCP tool schema, whose clients may not
    take conditional keywords."""
    props = schema["properties"]
    for name, prop in props.items():
        if name not in schema.get("required", ()) and not any(b.get("type") == "null" for b in prop.get("anyOf", ())):
            help_text = {key: prop.pop(key) for key in ("description", "default") if key in prop}
            props[name] = {"anyOf": [prop, {"type": "null"}], **help_text}
    schema["description"] = f"A new link: destination_url and any of the optional fields. {PASSWORD_RULE}"
    schema["if"] = {
        "required": ["visibility"],
        "properties": {"visibility": {"const": Visibility.PASSWORD.value}},
    }
    schema["then"] = {"required": ["password"], "properties": {"password": {"type": "string"}}}
    schema["else"] = {"properties": {"password": {"type": "null"}}}


def query_schema(model: type[BaseModel], *, required: bool = False) -> dict[str, Any]:
    """Documents query parameters that a handler passes on as a plain dict (so a 404 comes before a 422);
    `required`: the model's required fields are required parameters."""
    needed = set(model.model_json_schema().get("required", ())) if required else set()
    return {
        "parameters": [
            {"name": name, "in": "query", "required": name in needed, "schema": prop}
            for name, prop in properties(model).items()
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


def operation_id(route: APIRoute) -> str:
    """The operation id of a route without one of its own: its function's name in camelCase (`list_links` ->
    `listLinks`), what a generated client names the call."""
    first, *rest = route.name.split("_")
    return first + "".join(word.title() for word in rest)


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
            forms = op.get("requestBody", {}).get("content", {})
            body = forms.get("application/json") or forms.get("multipart/form-data") or {}
            _refuse_nul(body.get("schema", {}))
            _name_body(body, models, op.get("operationId", ""))
            examples.attach(op, spec.status)
    doc["webhooks"] = webhooks(models)
    for schema in models.values():
        _close(schema)
    components = doc.setdefault("components", {})
    components["schemas"] = models
    components["securitySchemes"] = SECURITY
    doc["info"].update(INFO)
    doc["servers"] = [{"url": "/", "description": "The server this document is served by (paths start with /api/v1)"}]
    doc["tags"] = TAGS
    return doc


INFO = {
    "license": {"name": "MIT", "identifier": "MIT"},
    "contact": {"name": "The Slugline authors"},
}
TAGS = [
    {"name": "links", "description": "Create, list, read, update and delete links; their clicks and QR codes"},
    {"name": "analytics", "description": "Click figures of the account or one link, and click exports"},
    {"name": "search", "description": "Ranked search over the caller's links"},
    {"name": "account", "description": "The authenticated account and its API keys"},
    {
        "name": "webhooks",
        "description": "Endpoints that hear of the account's link changes and clicks, signed per Standard Webhooks; "
        "their delivery log",
    },
    {"name": "auth", "description": "Accounts and session tokens"},
    {"name": "public", "description": "What anyone may read: a short link's public face, a web page's preview"},
    {"name": "health", "description": "Liveness and readiness"},
]


def _name_body(body: dict[str, Any], models: dict[str, Any], operation_id: str) -> None:
    """Move a body's schema under components/schemas, leaving a `$ref` in its place: named as `body_schema` named it,
    else after the operation (`createLinks` -> `CreateLinksBody`). Its visibility refers to the one `Visibility` enum
    the answers use, so a client has one type for it."""
    schema = body.get("schema")
    if not schema or "$ref" in schema:
        return
    name = schema.pop("title", None) or f"{operation_id[:1].upper()}{operation_id[1:]}Body"
    models[name] = schema
    body["schema"] = {"$ref": f"#/components/schemas/{name}"}
    prop = schema.get("properties", {}).get("visibility")
    if prop is not None:
        models.setdefault("Visibility", {"type": "string", "enum": LEVELS, "title": "Visibility"})
        for node in [prop, *prop.get("anyOf", ())]:
            if node.get("enum") == LEVELS:
                del node["enum"], node["type"]
                node["$ref"] = "#/components/schemas/Visibility"


LEVELS = [level.value for level in Visibility]


def _close(schema: dict[str, Any]) -> None:
    """An answer holds exactly the fields its model names: an object of named properties admits no others (a map,
    such as a hit's highlights, keeps its own `additionalProperties`)."""
    if "properties" in schema and schema.get("additionalProperties", True) is True:
        schema["additionalProperties"] = False


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
