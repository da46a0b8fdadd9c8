"""Service-layer edges that REST cannot reach by itself but MCP clients and races can."""

from __future__ import annotations

import concurrent.futures

import pytest
from sqlalchemy import func, select

from slugline.accounts import callers, keys
from slugline.accounts import service as accounts
from slugline.common.caller import Caller
from slugline.common.errors import Conflict, Invalid
from slugline.common.models import ApiKey
from slugline.links import service as links
from slugline.runtime import Runtime


@pytest.fixture
def caller(runtime: Runtime) -> Caller:
    token = accounts.register(runtime, {"username": "edgy", "password": "long enough"}, plan="developer")["token"]
    return callers.authenticate(runtime, f"Bearer {token}", "http://sl.test")


def test_nulls_mean_not_given_for_list_and_create(runtime: Runtime, caller: Caller) -> None:
    made = links.create_on_thread(
        runtime,
        caller,
        {
            "destination_url": "https://example.com/",
            "title": None,
            "visibility": None,
            "auto_meta": None,
            "hashtags": None,
        },
    )
    assert made["visibility"] == "public" and made["hashtags"] == []
    listed = links.list_on_thread(runtime, caller, {"q": None, "page": None, "per": None, "sort": None, "dir": None})
    assert listed["pagination"] == {"page": 1, "per": 20, "total": 1, "pages": 1}


def test_password_on_a_non_password_link_is_refused_on_create(runtime: Runtime, caller: Caller) -> None:
    with pytest.raises(Invalid, match="password can only be set"):
        links.create_on_thread(runtime, caller, {"destination_url": "https://example.com/", "password": "hunter22"})


def test_concurrent_key_generation_leaves_exactly_one_key(runtime: Runtime, caller: Caller) -> None:
    def generate(_: int) -> str:
        try:
            return str(keys.create_key(runtime, caller, {"scope": "full"})["key"])
        except Conflict:
            return "conflict"

    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(generate, range(12)))
    assert any(r.startswith("svc_live_") for r in results)
    with runtime.db.session() as session:
        count = session.scalar(select(func.count()).select_from(ApiKey).where(ApiKey.account_id == caller.account_id))
    assert count == 1
