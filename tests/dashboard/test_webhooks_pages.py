"""The Webhooks pages: an endpoint added with its secret shown once, its status and why it was disabled, its
delivery log with "Send again", turned off and on, deleted; errors next to the field."""

from __future__ import annotations

import re
import time

from starlette.testclient import TestClient

from slugline.runtime import Runtime
from tests.dashboard.pages import api_key, csrf_of

EVENTS = ("link.created", "link.updated", "link.deleted", "link.expired", "link.clicked")


def _hook_id(page: str) -> str:
    found = re.search(r'href="/app/webhooks/(whe_[0-9a-f]+)"', page)
    assert found, page
    return found.group(1)


def test_add_an_endpoint_see_its_log_and_disable_it(owner: TestClient, runtime: Runtime) -> None:
    token = csrf_of(owner, "/app/webhooks")
    form = {"csrf_token": token, "url": "https://hooks.example.com/in", "event:link.created": "1"}
    page = owner.post("/app/webhooks", data=form)
    assert page.status_code == 201 and "shown only this once" in page.text
    assert re.search(r'value="whsec_[A-Za-z0-9+/=]{44}"', page.text)
    hook_id = _hook_id(page.text)
    assert "whsec_" not in owner.get("/app/webhooks").text  # once
    listed = owner.get("/api/v1/webhooks", headers=api_key(owner)).json()["data"]
    assert [(h["id"], h["events"]) for h in listed] == [(hook_id, ["link.created"])]
    detail = owner.get(f"/app/webhooks/{hook_id}")
    assert "No deliveries yet." in detail.text and "Turn off" in detail.text
    off = owner.post(f"/app/webhooks/{hook_id}", data={"csrf_token": token, "action": "off"})
    assert "This endpoint is disabled:" in off.text and "turned off by the account" in off.text
    on = owner.post(f"/app/webhooks/{hook_id}", data={"csrf_token": token, "action": "on"})
    assert "Turn off" in on.text
    # A delivery that fails shows in the log with "Send again" (the address is not allowed: no network needed).
    runtime.settings.webhooks_allow_private = False
    with runtime.db.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE webhook_endpoints SET url = 'http://127.0.0.1:9/in'")
    owner.post("/api/v1/links", json={"destination_url": "https://example.com/"}, headers=api_key(owner))
    end = time.monotonic() + 10
    while "Send again" not in (detail := owner.get(f"/app/webhooks/{hook_id}")).text:
        assert time.monotonic() < end, detail.text
        time.sleep(0.1)
    assert "private or reserved address" in detail.text and "link.created" in detail.text
    message = re.search(r'name="message_id" value="(msg_[0-9a-f]+)"', detail.text)
    assert message
    again = owner.post(f"/app/webhooks/{hook_id}/resend", data={"csrf_token": token, "message_id": message.group(1)})
    assert f"Message {message.group(1)} is queued to be sent again." in again.text
    gone = owner.post(f"/app/webhooks/{hook_id}", data={"csrf_token": token, "action": "delete"})
    assert "No endpoints yet." in gone.text


def test_a_bad_endpoint_is_refused_next_to_its_field(owner: TestClient) -> None:
    token = csrf_of(owner, "/app/webhooks")
    page = owner.post("/app/webhooks", data={"csrf_token": token, "url": "ftp://x", "event:link.clicked": "1"})
    assert page.status_code == 422 and 'id="e-url">url must be an http(s) URL' in page.text
    page = owner.post("/app/webhooks", data={"csrf_token": token, "url": "https://hooks.example.com/"})
    assert page.status_code == 422 and 'id="e-events">events' in page.text
    assert owner.get("/app/webhooks/whe_0000000000000000").status_code == 404


def test_the_url_hint_says_what_is_accepted(owner: TestClient) -> None:
    token = csrf_of(owner, "/app/webhooks")
    assert "An http:// or https:// address the events are POSTed to" in owner.get("/app/webhooks").text
    form = {"csrf_token": token, "url": "http://hooks.example.com/in", "event:link.created": "1"}
    assert owner.post("/app/webhooks", data=form).status_code == 201  # plain http is accepted, as the hint says
