"""Query-string models read once per distinct query string.

FastAPI validates a `Query()` model field by field on every request: for `GET /links` that was a fifth of the
request's CPU in process. `query_model(Model)` is a dependency doing the same (each field's last value, repeated
unknown keys as lists, the same errors, located in `query`) through one `model_validate`, and remembers the result
for query strings seen before: agents and dashboards ask for the same few pages again and again. The memory is
bounded: at most `REMEMBERED` query strings of at most `MAX_REMEMBERED_BYTES` each, past which the oldest tenth
goes (`BoundedCache`: a hit is one dict read, without a lock); each request gets an instance of its own. A validation
failure is recorded by FastAPI's telemetry as its own are.
`query_parameters(Model)` is what FastAPI documents for `Annotated[Model, Query()]`, for the route's
`openapi_extra`, so the API's description is unchanged.
"""

from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar, get_origin
from urllib.parse import parse_qsl

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from slugline.common.bounded import BoundedCache
from slugline.compat import validation_failed  # FastAPI's telemetry records the failures it raises itself; these too

M = TypeVar("M", bound=BaseModel)
REMEMBERED = 512
MAX_REMEMBERED_BYTES = 512


def query_model(model: type[M]) -> Callable[[Request], Coroutine[Any, Any, M]]:
    """The dependency for `model`, whose fields must take one value each, named as the fields are (FastAPI reads
    list fields and aliases in ways `validate` does not)."""
    for name, field in model.model_fields.items():
        origin = get_origin(field.annotation)
        if field.alias not in (None, name) or origin in (list, set, tuple, frozenset) or field.annotation is list:
            raise TypeError(f"{model.__name__}.{name}: query_model reads single-valued fields named as they are")
    remembered: BoundedCache[bytes, tuple[dict[str, Any], set[str]]] = BoundedCache(max_entries=REMEMBERED, lru=False)

    async def parse(request: Request) -> M:
        raw: bytes = request.scope["query_string"]
        found = remembered.get(raw)
        if found is None:
            valid = validate(model, raw)
            found = (dict(valid.__dict__), set(valid.model_fields_set))
            if len(raw) <= MAX_REMEMBERED_BYTES:
                remembered.put(raw, found)
        values, given = found
        return model.model_construct(given, **values)  # a fresh instance: no request can change another's

    return parse


def validate(model: type[M], raw: bytes) -> M:
    """The model from a raw query string, as FastAPI reads a `Query()` model (Starlette's decoding)."""
    fields = model.model_fields
    values: dict[str, Any] = {}
    extras: dict[str, list[str]] = {}
    for key, value in parse_qsl(raw.decode("latin-1"), keep_blank_values=True):
        if key in fields:
            values[key] = value
        else:
            extras.setdefault(key, []).append(value)
    for key, repeated in extras.items():
        values[key] = repeated[0] if len(repeated) == 1 else repeated
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        errors = [{**error, "loc": ("query", *error["loc"])} for error in exc.errors(include_url=False)]
        failed = RequestValidationError(errors)
    validation_failed(failed)
    raise failed


def query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """The OpenAPI parameters FastAPI gives `Annotated[model, Query()]`."""
    probe = FastAPI()

    async def endpoint(params: Annotated[model, Query()]) -> None:  # type: ignore[valid-type]
        return None

    probe.get("/")(endpoint)
    parameters: list[dict[str, Any]] = probe.openapi()["paths"]["/"]["get"]["parameters"]
    return parameters
