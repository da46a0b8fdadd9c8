"""`api.query.query_model` reads a query string as FastAPI reads a `Query()` model: the same values, the same
errors and statuses, for every kind of query string a client can send (checked against FastAPI itself)."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Annotated, Any

import pytest
from fastapi import Depends, FastAPI, Query, Request
from fastapi.testclient import TestClient
from opentelemetry._logs import Logger, LoggerProvider
from pydantic import BaseModel, Field

from slugline.api import query
from slugline.app import install_error_handlers
from slugline.common.inputs import ListParams, SearchParams
from slugline.web.responses import JSON
from tests.support.helpers import http_scope

QUERIES = [
    "",
    "per=5",
    "page=2&per=3",
    "per=0",
    "per=abc",
    "per=",
    "per=5&per=7",
    "page=1000001",
    "foo=1",
    "foo=1&foo=2",
    "q=%00",
    "q=",
    "q=rust&sort=title&dir=asc",
    "sort=nope&dir=up",
    "q=a+b%20c",
    "q=%E2%82%AC%F0%9F%98%80",
    "q=%ff%fe",
    "q=x&q=y",
    "q=x&limit=101",
    "limit=5",
    "q=x&limit=-1&extra=&extra=2",
    "&&=x&q",
]


def _app(**options: Any) -> FastAPI:
    app = FastAPI(**options)
    install_error_handlers(app)

    @app.get("/fastapi/list")
    async def fastapi_list(params: Annotated[ListParams, Query()]) -> JSON:
        return JSON(params.model_dump())

    @app.get("/ours/list")
    async def ours_list(params: Annotated[ListParams, Depends(query.query_model(ListParams))]) -> JSON:
        return JSON(params.model_dump())

    @app.get("/fastapi/search")
    async def fastapi_search(params: Annotated[SearchParams, Query()]) -> JSON:
        return JSON(params.model_dump())

    @app.get("/ours/search")
    async def ours_search(params: Annotated[SearchParams, Depends(query.query_model(SearchParams))]) -> JSON:
        return JSON(params.model_dump())

    return app


@pytest.mark.parametrize("model", ["list", "search"])
def test_every_query_string_gives_what_fastapi_gives(model: str) -> None:
    with TestClient(_app()) as client:
        for raw in QUERIES:
            expected = client.get(f"/fastapi/{model}?{raw}")
            for _ in range(2):  # read, then remembered
                got = client.get(f"/ours/{model}?{raw}")
                assert (got.status_code, got.json()) == (expected.status_code, expected.json()), raw


def test_what_is_remembered_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query, "REMEMBERED", 3)
    seen: list[Any] = []
    real = query.validate

    def counted(model: type[ListParams], raw: bytes) -> ListParams:
        seen.append(raw)
        return real(model, raw)

    monkeypatch.setattr(query, "validate", counted)
    with TestClient(_app()) as client:
        long = "q=" + "x" * (query.MAX_REMEMBERED_BYTES - 1)  # valid, and past what is remembered
        for raw in ["per=1", "per=1", "per=2", "per=3", "per=4", "per=1", long, long]:
            assert client.get(f"/ours/list?{raw}").status_code == 200
    # per=1 read once, then remembered; the fourth query string pushed the oldest (per=1) out; a long one never kept
    assert seen == [b"per=1", b"per=2", b"per=3", b"per=4", b"per=1", long.encode(), long.encode()]


RAW = [
    b"q=%00",
    b"q=\x00",
    b"q=\xff\xfe",
    b"q=caf\xc3\xa9",
    b"q=a;per=5",
    b"per=5;per=6",
    b"q=%zz&per=%35",
    b"q=a b+c%2Bd",
    b"q",
    b"=&&=",
    b"__class__=1&model_config=2",
    b"per=\xd9\xa5",  # an Arabic-Indic digit
    b"q=" + b"x" * 600,
]


def _asgi_get(app: FastAPI, path: str, raw: bytes) -> tuple[int, bytes]:
    """The app called with `raw` as the query string, byte for byte (an HTTP client would re-encode it)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = http_scope("GET", path, raw)
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


@pytest.mark.parametrize("model", ["list", "search"])
def test_raw_query_bytes_give_what_fastapi_gives(model: str) -> None:
    app = _app()
    for raw in RAW:
        expected = _asgi_get(app, f"/fastapi/{model}", raw)
        for _ in range(2):
            assert _asgi_get(app, f"/ours/{model}", raw) == expected, raw


def test_each_request_has_an_instance_of_its_own() -> None:
    parse = query.query_model(ListParams)
    request = Request({"type": "http", "query_string": b"per=5", "headers": []})
    first = asyncio.run(parse(request))
    first.per = 99
    again = asyncio.run(parse(request))
    assert again is not first and again.per == 5 and again.model_fields_set == {"per"}


def test_models_it_would_read_unlike_fastapi_are_refused() -> None:
    class Listed(BaseModel):
        tags: list[str] = []

    class Aliased(BaseModel):
        per: int = Field(default=1, alias="perPage")

    for model in (Listed, Aliased):
        with pytest.raises(TypeError):
            query.query_model(model)


def test_a_refused_query_string_is_recorded_by_fastapis_telemetry() -> None:
    events: list[Any] = []

    class Recording(Logger):
        def emit(self, *args: Any, **kwargs: Any) -> None:
            events.append(kwargs.get("event_name"))

        def enabled(self, *args: Any, **kwargs: Any) -> bool:
            return True

    class Provider(LoggerProvider):
        def get_logger(self, *args: Any, **kwargs: Any) -> Logger:
            return Recording("probe")

    app = _app(telemetry={"logs": True, "logger_provider": Provider()})
    with TestClient(app) as client:
        for route in ("fastapi", "ours"):
            events.clear()
            assert client.get(f"/{route}/list?per=abc").status_code == 422
            assert events == ["fastapi.validation.failed"], route
