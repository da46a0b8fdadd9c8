"""`slugline webhooks`: an operator lists an account's endpoints, reads one's delivery log, and turns it off and on,
through the same service functions as the API (what they do shows through it at once)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from slugline import admin, cli
from slugline.settings import Settings
from tests.support.helpers import Account


@pytest.fixture
def slugline(settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    monkeypatch.setattr(admin, "get_settings", lambda: settings)

    def run(*args: str) -> tuple[int, str, str]:
        try:
            code = cli.main(list(args))
        except SystemExit as exit:
            code = int(exit.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def test_list_disable_enable_and_the_log(slugline: Any, client: TestClient, alice: Account) -> None:
    hook = client.post("/api/v1/webhooks", json={"url": "https://hooks.example.com/in"}, headers=alice.auth()).json()
    code, out, _ = slugline("webhooks", "list", "--account", "alice")
    assert code == 0 and hook["id"] in out and "https://hooks.example.com/in" in out and "True" in out
    code, out, _ = slugline("webhooks", "disable", "--account", "alice", hook["id"], "--json")
    assert code == 0 and orjson.loads(out)["enabled"] is False
    assert client.get(f"/api/v1/webhooks/{hook['id']}", headers=alice.auth()).json()["enabled"] is False
    code, out, _ = slugline("webhooks", "enable", "--account", "alice", hook["id"])
    assert code == 0 and "enabled: True" in out
    code, out, _ = slugline("webhooks", "attempts", "--account", "alice", hook["id"], "--json")
    assert code == 0 and orjson.loads(out) == []
    assert slugline("webhooks", "enable", "--account", "alice", "whe_nope") == (1, "", "error: webhook not found\n")
