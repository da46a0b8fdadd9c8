"""Deliveries from a running app to a real receiver that verifies each with `standardwebhooks`: link events with
the link's JSON, clicks in batches, retries with the same id, the delivery log, "send again", and an endpoint
disabled after failing for the give-up time."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.runtime import Runtime
from slugline.webhooks import outbox, worker
from tests.support.geodb import BERLIN_V6, PARIS_V4, UNKNOWN_V4, write_db
from tests.support.helpers import BASE_URL, CHROME, LINKS, Account, ClientFactory
from tests.support.receiver import Receiver
from tests.support.server import wait_for

HOOKS = "/api/v1/webhooks"
PLACE = {"country", "region", "city"}
FAST = {
    "webhooks_allow_private": True,
    "webhooks_poll_seconds": 0.05,
    "webhooks_retry_seconds": 0.1,
    "webhooks_retry_max_seconds": 0.2,
    "webhooks_click_interval_seconds": 0.2,
    "webhooks_timeout_seconds": 2,
    "click_flush_seconds": 0.1,
}
Log = list[dict[str, Any]]  # an endpoint's delivery log, as GET .../attempts lists it


def _account(client: TestClient, rt: Runtime) -> Account:
    """An account on the pro plan, with a full-access key (made through the API)."""
    made = accounts.register(rt, {"username": f"u{time.monotonic_ns()}", "password": "correct horse"}, plan="pro")
    sess = {"Authorization": f"Bearer {made['token']}"}
    full = client.post("/api/v1/api-key", json={"scope": "full"}, headers=sess).json()["key"]
    return Account("u", "correct horse", made["token"], full, "")


def test_link_events_arrive_signed_with_the_links_json(make_client: ClientFactory, receiver: Receiver) -> None:
    client, rt = make_client(**FAST)
    alice = _account(client, rt)
    hook = client.post(HOOKS, json={"url": receiver.url}, headers=alice.auth()).json()
    receiver.secret = hook["secret"]
    variants = [{"to": "https://example.com/a", "weight": 1}, {"to": "https://example.com/b", "weight": 2}]
    body = {"destination_url": "https://example.com/", "slug": "hooked", "variants": variants}
    link = client.post(LINKS, json=body, headers=alice.auth()).json()
    assert link["variants"] == variants  # and the event's link has them too (0018's triggers keep the column)
    client.put(f"{LINKS}/{link['id']}", json={"title": "Now titled"}, headers=alice.auth())
    client.put(f"{LINKS}/{link['id']}", json={"slug": "hooked2", "visibility": "private"}, headers=alice.auth())
    client.delete(f"{LINKS}/{link['id']}", headers=alice.auth())
    receiver.wait_for(lambda events: len(events) == 4)
    by_type = sorted((e["type"], e["data"].get("title"), e["data"]["slug"]) for e in receiver.events.values())
    assert by_type == [
        ("link.created", None, "hooked"),
        ("link.deleted", "Now titled", "hooked2"),
        ("link.updated", "Now titled", "hooked"),
        ("link.updated", "Now titled", "hooked2"),
    ]
    created = receiver.of_type("link.created")[0]["data"]
    assert created == {**link, "created_at": created["created_at"], "updated_at": created["updated_at"]}
    assert created["short_url"] == f"{BASE_URL}/hooked" and created["created_at"] == link["created_at"]
    assert not receiver.refused
    # The log's rows are written after the receiver answered, so they may lag its events. Each delivery that reached
    # it is in the log once: 200, or (a server so loaded that the answer came after the timeout) an error, and then
    # the message sent again with its id until a 200.
    log = _log_when(client, alice, hook["id"], partial(_caught_up, receiver))
    assert len(log) == len(receiver.arrivals), log
    assert sorted(a["message_id"] for a in log if a["status"] == 200) == sorted(receiver.events), log
    assert {a["message_id"] for a in log} == set(receiver.events)


def _log_when(client: TestClient, who: Account, hook_id: str, ready: Callable[[Log], bool]) -> Log:
    """The endpoint's delivery log once it is `ready`: a worker writes an attempt's row after the receiver answered,
    so the log may lag what the receiver had."""

    def log() -> Log:
        found: Log = client.get(f"{HOOKS}/{hook_id}/attempts", headers=who.auth()).json()["data"]
        return found

    def when_ready() -> Log | None:
        found = log()
        return found if ready(found) else None

    return wait_for(when_ready, what=lambda: f"the delivery log; it holds {log()}")


def _caught_up(receiver: Receiver, log: Log) -> bool:
    """A 200 is logged for every message the receiver got, and an attempt for every delivery it had."""
    delivered = {a["message_id"] for a in log if a["status"] == 200}
    return delivered >= set(receiver.events) and len(log) >= len(receiver.arrivals)


def test_clicks_arrive_in_batches_of_at_most_a_hundred(make_client: ClientFactory, receiver: Receiver) -> None:
    """Every click once, in messages of at most 100, and one delivery at a time, each arriving at least the click
    interval (0.2 s) after the receiver answered the last: a bound the server keeps exactly, whatever the load (the
    turn comes back an interval after the answer, `outbox.finish`), so it is asserted gap by gap, with no slack."""
    client, rt = make_client(**FAST)
    alice = _account(client, rt)
    hook = client.post(HOOKS, json={"url": receiver.url, "events": ["link.clicked"]}, headers=alice.auth()).json()
    receiver.secret = hook["secret"]
    client.post(LINKS, json={"destination_url": "https://example.com/", "slug": "clicky"}, headers=alice.auth())
    for _ in range(230):
        assert client.get("/clicky", follow_redirects=False).status_code in (301, 302)
    # How many messages the click batches made depends on how the flushes fell: wait for them, not for a time.
    messages = _clicked_messages(rt, hook["id"], 230)
    receiver.wait_for(lambda events: set(events) >= set(messages), seconds=10 + len(messages))
    batches = receiver.of_type("link.clicked")
    assert len(batches) == len(messages) >= 3
    assert sorted(len(b["data"]["clicks"]) for b in batches) == sorted(messages.values())
    assert max(messages.values()) <= 100 and sum(messages.values()) == 230
    click = batches[0]["data"]["clicks"][0]
    assert set(click) == {"link_id", "clicked_at", "device", "browser", "os", "source", "referrer", "variant"} | PLACE
    assert click["variant"] is None  # the link has no variants
    assert click["clicked_at"].endswith("Z")
    times = sorted(at for _, at in receiver.arrivals)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= FAST["webhooks_click_interval_seconds"], gaps


def _clicked_messages(rt: Runtime, endpoint_id: str, clicks: int) -> dict[str, int]:
    """The endpoint's `link.clicked` messages (id -> clicks), once they carry `clicks` clicks: written with the
    click batches, in their transactions."""
    m = outbox.MESSAGES.c
    query = select(m.id, m.data).where(m.endpoint_id == endpoint_id, m.type == outbox.CLICKED)

    def written() -> dict[str, int]:
        with rt.db.engine.connect() as conn:
            return {msg_id: len(orjson.loads(data)) for msg_id, data in conn.execute(query)}

    def all_written() -> dict[str, int] | None:
        found = written()
        return found if sum(found.values()) >= clicks else None

    return wait_for(all_written, deadline=30, what=lambda: f"{clicks} clicks; {sum(written().values())} written")


def test_clicks_carry_their_place_where_known(make_client: ClientFactory, receiver: Receiver, tmp_path: Path) -> None:
    """The GeoIP database's country, region and city; a trusted proxy's country alone; nothing where unknown."""
    geo = str(write_db(tmp_path / "geo.mmdb"))
    client, rt = make_client(**FAST, trusted_proxies="testclient", geoip_db=geo)
    alice = _account(client, rt)
    hook = client.post(HOOKS, json={"url": receiver.url, "events": ["link.clicked"]}, headers=alice.auth()).json()
    receiver.secret = hook["secret"]
    client.post(LINKS, json={"destination_url": "https://example.com/", "slug": "placed"}, headers=alice.auth())
    visits = [{"x-forwarded-for": PARIS_V4}, {"x-forwarded-for": BERLIN_V6}, {"x-forwarded-for": UNKNOWN_V4}]
    visits.append({"x-forwarded-for": UNKNOWN_V4, "cf-ipcountry": "IT"})
    for seen, headers in enumerate(visits):  # one batch each, in this order
        assert client.get("/placed", headers={"user-agent": CHROME, **headers}, follow_redirects=False).is_redirect
        receiver.wait_for(partial(_has, seen + 1))
    clicks = [b["data"]["clicks"] for b in receiver.of_type("link.clicked")]
    places = [tuple(c[k] for k in ("country", "region", "city")) for [c] in clicks]
    assert places == [
        ("FR", "Île-de-France", "Paris"),
        ("DE", "Land Berlin", "Berlin"),
        (None, None, None),
        ("IT", None, None),
    ]
    assert not receiver.refused


def test_clicks_carry_their_variant(make_client: ClientFactory, receiver: Receiver) -> None:
    """A link with variants: each delivered click names the variant it was sent to, as the click list does."""
    client, rt = make_client(**FAST)
    alice = _account(client, rt)
    hook = client.post(HOOKS, json={"url": receiver.url, "events": ["link.clicked"]}, headers=alice.auth()).json()
    receiver.secret = hook["secret"]
    variants = [{"to": f"https://example.com/{n}", "weight": 10} for n in range(3)]
    body = {"destination_url": "https://example.com/", "slug": "split", "variants": variants}
    link = client.post(LINKS, json=body, headers=alice.auth()).json()
    agents = [f"Mozilla/5.0 (X11; Linux x86_64) Chrome/{n}.0" for n in range(100, 106)]  # visitors, drawn apart
    for seen, agent in enumerate(agents):  # one batch each, in this order
        assert client.get("/split", headers={"user-agent": agent}, follow_redirects=False).is_redirect
        receiver.wait_for(partial(_has, seen + 1))
    delivered = [c["variant"] for b in receiver.of_type("link.clicked") for c in b["data"]["clicks"]]
    listed = client.get(f"{LINKS}/{link['id']}/clicks", headers=alice.auth()).json()["data"]
    assert delivered == [c["variant"] for c in reversed(listed)]
    assert set(delivered) <= {0, 1, 2} and len(delivered) == len(agents)
    assert not receiver.refused


def _has(count: int, events: dict[str, dict[str, Any]]) -> bool:
    return len(events) == count


def test_failures_are_retried_with_the_same_id_then_the_endpoint_is_disabled(
    make_client: ClientFactory, receiver: Receiver
) -> None:
    client, rt = make_client(**FAST)
    alice = _account(client, rt)
    receiver.answer = lambda n: 503 if n < 3 else 200
    hook = client.post(HOOKS, json={"url": receiver.url, "events": ["link.created"]}, headers=alice.auth()).json()
    receiver.secret = hook["secret"]
    client.post(LINKS, json={"destination_url": "https://example.com/"}, headers=alice.auth())
    receiver.wait_for(lambda events: len(events) == 1)
    assert len({msg_id for msg_id, _ in receiver.arrivals}) == 1 and len(receiver.arrivals) == 4
    log = _log_when(client, alice, hook["id"], lambda log: len(log) >= 4)
    assert [a["status"] for a in log] == [200, 503, 503, 503]
    assert log[1]["error"] == "the endpoint answered 503"
    # Send again: the same id arrives once more.
    msg_id = log[0]["message_id"]
    again = client.post(f"{HOOKS}/{hook['id']}/messages/{msg_id}/resend", headers=alice.auth())
    assert again.status_code == 202
    wait_for(lambda: len(receiver.arrivals) >= 5, what=lambda: f"the message sent again; arrived {receiver.arrivals}")
    assert receiver.arrivals[-1][0] == msg_id
    # Failing past the give-up time disables it; the account sees why.
    rt.settings.webhooks_give_up_seconds = 0.3
    receiver.answer = lambda n: 500
    client.post(LINKS, json={"destination_url": "https://example.com/"}, headers=alice.auth())

    def disabled() -> dict[str, Any] | None:
        got: dict[str, Any] = client.get(f"{HOOKS}/{hook['id']}", headers=alice.auth()).json()
        return None if got["enabled"] else got

    got = wait_for(disabled, what="the endpoint to be disabled")
    assert "24 hours" in got["disabled_reason"] and got["failing_since"]
    # Back on, with the receiver well: what waited is delivered.
    receiver.answer = lambda n: 200
    client.patch(f"{HOOKS}/{hook['id']}", json={"enabled": True}, headers=alice.auth())
    receiver.wait_for(lambda events: len(events) == 2)


def test_a_private_address_is_refused_unless_allowed(make_client: ClientFactory, receiver: Receiver) -> None:
    client, rt = make_client(**{**FAST, "webhooks_allow_private": False})
    alice = _account(client, rt)
    hook = client.post(HOOKS, json={"url": receiver.url}, headers=alice.auth()).json()  # checked at delivery
    client.post(LINKS, json={"destination_url": "https://example.com/"}, headers=alice.auth())
    log = _log_when(client, alice, hook["id"], bool)
    assert log[0]["status"] is None and "private or reserved" in log[0]["error"]
    assert not receiver.arrivals


def test_a_link_that_expires_is_told_once(
    make_client: ClientFactory, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "CHORES_SECONDS", 0.1)
    client, rt = make_client(**FAST)
    alice = _account(client, rt)
    hook = client.post(HOOKS, json={"url": receiver.url, "events": ["link.expired"]}, headers=alice.auth()).json()
    receiver.secret = hook["secret"]
    soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    link = client.post(
        LINKS, json={"destination_url": "https://example.com/", "expires_at": soon}, headers=alice.auth()
    ).json()
    client.post(
        LINKS,
        json={"destination_url": "https://example.com/later", "expires_at": "2999-01-01T00:00:00Z"},
        headers=alice.auth(),
    )
    receiver.wait_for(lambda events: len(events) == 1)
    time.sleep(1)  # scans go on: the expiry is not told again
    [event] = receiver.events.values()
    assert event["type"] == "link.expired" and event["data"]["id"] == link["id"]
    assert event["data"]["status"] == "expired" and len(receiver.arrivals) == 1
