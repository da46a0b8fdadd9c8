"""The owner deletes the account from the dashboard's settings, with its password: it is closed at once (signed out,
keys void, the name no longer signs in), and the worker's click upkeep takes its links and clicks away."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select
from starlette.testclient import TestClient

from slugline.accounts import deletion
from slugline.accounts import service as accounts
from slugline.clicks import retention
from slugline.clicks.buffer import ClickRecorder
from slugline.common.models import Account, Link
from slugline.runtime import Runtime
from tests.dashboard.pages import PASSWORD, api_key, csrf_of, new_link
from tests.support.helpers import CHROME


def _count(rt: Runtime, model: type[Account] | type[Link]) -> int:
    with rt.db.session() as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def test_the_owner_deletes_the_account_and_the_upkeep_takes_the_rest(
    owner: TestClient, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(3):
        new_link(owner, destination_url=f"https://example.com/{n}", slug=f"gone-{n}")
    key = api_key(owner)
    assert owner.get("/gone-0", headers={"User-Agent": CHROME}, follow_redirects=False).status_code == 302
    settings_page = owner.get("/app/settings").text
    assert '<button type="submit" class="danger">Delete account</button>' in settings_page
    token = csrf_of(owner, "/app/settings")

    wrong = owner.post("/app/settings/delete", data={"csrf_token": token, "password": "not it"})
    assert wrong.status_code == 422 and 'id="e-password">password is not this account' in wrong.text
    assert owner.post("/app/settings/delete", data={"password": PASSWORD}).status_code == 403, "CSRF is checked"
    assert owner.get("/api/v1/links", headers=key).status_code == 200, "nothing was deleted"

    done = owner.post("/app/settings/delete", data={"csrf_token": token, "password": PASSWORD}, follow_redirects=False)
    assert (done.status_code, done.headers["location"]) == (303, "/app/login?deleted=1")
    assert "Your account was deleted" in owner.get("/app/login?deleted=1").text
    assert owner.get("/app/settings", follow_redirects=False).status_code in (302, 303), "signed out"
    assert owner.get("/api/v1/links", headers=key).status_code == 401
    login = owner.post("/api/v1/auth/login", json={"username": "ada", "password": PASSWORD})
    assert login.status_code == 401
    assert [a["plan"] for a in accounts.list_accounts(runtime)] == [deletion.CLOSED]
    assert _count(runtime, Link) == 3, "the links wait for the upkeep"

    monkeypatch.setattr(retention, "PASS_SECONDS", 0.0)  # the first pass due at once
    recorder = ClickRecorder(runtime)
    recorder._every = 0.05

    async def until_gone() -> None:
        task = asyncio.create_task(recorder.run())
        try:
            for _ in range(200):  # up to 10 s
                await asyncio.sleep(0.05)
                if await asyncio.to_thread(_count, runtime, Account) == 0:
                    break
        finally:
            recorder.stop()
            await task

    asyncio.run(until_gone())
    assert (_count(runtime, Account), _count(runtime, Link)) == (0, 0)
    assert owner.get("/gone-0", follow_redirects=False).status_code == 404
