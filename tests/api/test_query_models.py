"""`api.query.query_model` reads a query string as FastAPI reads a `Query()` model: the same values, the same
errors and statuses, for every kind of query string a client can send (checked against FastAPI itself)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from fastapi import Depends, FastAPI, Query
from fastapi.testclient import TestClient

from slugline.api import query
from slugline.app import install_error_handlers
from slugline.schemas import ListParams, SearchParams
from slugline.web.responses import JSON

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


def _app() -> FastAPI:
    app = FastAPI()
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
    # per=1 read once, then remembered; the fourth query string started the memory over; a long one never kept
    assert seen == [b"per=1", b"per=2", b"per=3", b"per=4", b"per=1", long.encode(), long.encode()]
