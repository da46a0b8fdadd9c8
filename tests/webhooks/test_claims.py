"""Many workers claiming from one outbox (each its own engine, as processes have): every due message is claimed by
exactly one of them (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: the writer lock), click messages one per endpoint
and interval, and an account at its cap is left out of a claim."""

from __future__ import annotations

import threading
import time
from collections import Counter

from sqlalchemy import insert, select

from slugline.accounts import service as accounts
from slugline.common.caller import Caller
from slugline.common.clock import utcnow
from slugline.common.models import Account
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.webhooks import endpoints, outbox
from slugline.webhooks.outbox import MESSAGES


def _endpoint(rt: Runtime, name: str) -> tuple[int, str]:
    accounts.register(rt, {"username": name, "password": "correct horse"}, plan="pro")
    with rt.db.session() as session:
        account_id = session.scalar(select(Account.id).where(Account.username == name))
    assert account_id is not None
    caller = Caller(account_id, name, "pro", "full", utcnow(), "https://sl.test")
    hook = endpoints.create_endpoint(rt, caller, {"url": "https://hooks.example.com/in"})
    return account_id, hook["id"]


def _messages(rt: Runtime, account_id: int, endpoint_id: str, n: int, kind: str = "link.created") -> None:
    now = time.time()
    rows = [
        {
            "id": f"msg_{kind[5:8]}{i:08d}",
            "endpoint_id": endpoint_id,
            "account_id": account_id,
            "type": kind,
            "data": "[]",
            "created_at": now,
            "due_at": now - 1,
            "attempts": 0,
            "delivered_at": None,
        }
        for i in range(n)
    ]
    with rt.db.engine.begin() as conn:
        conn.execute(insert(MESSAGES), rows)


def test_each_message_is_claimed_by_one_worker(runtime: Runtime, settings: Settings) -> None:
    account_id, endpoint_id = _endpoint(runtime, "claimer")
    _messages(runtime, account_id, endpoint_id, 300)
    workers = [Runtime.create(settings) for _ in range(4)]
    claimed: Counter[str] = Counter()
    lock = threading.Lock()

    def work(rt: Runtime) -> None:
        while True:
            got = outbox.claim(rt.db, rt.settings, time.time(), 16, ())
            if not got:
                return
            with lock:
                claimed.update(m.id for m in got)

    threads = [threading.Thread(target=work, args=(rt,)) for rt in workers]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        for rt in workers:
            rt.close()
    assert len(claimed) == 300 and set(claimed.values()) == {1}
    assert not outbox.anything_due(runtime.db, time.time())


def test_clicks_are_paced_and_a_busy_account_waits(runtime: Runtime) -> None:
    account_id, endpoint_id = _endpoint(runtime, "paced")
    other_id, other_endpoint = _endpoint(runtime, "other")
    _messages(runtime, account_id, endpoint_id, 5, "link.clicked")
    _messages(runtime, other_id, other_endpoint, 2)
    now = time.time()
    first = outbox.claim(runtime.db, runtime.settings, now, 32, ())
    assert Counter(m.type for m in first) == {"link.clicked": 1, "link.created": 2}
    # The turn is held while the delivery is under way, however long it takes (up to the lease)...
    assert outbox.claim(runtime.db, runtime.settings, now + 5, 32, ()) == []
    [click] = [m for m in first if m.type == "link.clicked"]
    outbox.finish(runtime.db, runtime.settings, click, now + 5, 200, None, 5000)
    # ... and comes back a second after the endpoint answered.
    assert outbox.claim(runtime.db, runtime.settings, now + 5.5, 32, ()) == []
    later = outbox.claim(runtime.db, runtime.settings, now + 6.01, 32, {other_id})
    assert [m.type for m in later] == ["link.clicked"]
    outbox.finish(runtime.db, runtime.settings, later[0], now + 6.1, 200, None, 90)
    assert outbox.claim(runtime.db, runtime.settings, now + 7.2, 32, {account_id}) == []  # busy: left out


def test_a_click_turn_left_by_a_dead_worker_comes_back_after_the_lease(runtime: Runtime) -> None:
    account_id, endpoint_id = _endpoint(runtime, "orphaned")
    _messages(runtime, account_id, endpoint_id, 2, "link.clicked")
    now = time.time()
    assert len(outbox.claim(runtime.db, runtime.settings, now, 32, ())) == 1  # then never finished
    lease = outbox.lease_seconds(runtime.settings)
    assert outbox.claim(runtime.db, runtime.settings, now + lease - 0.1, 32, ()) == []
    assert len(outbox.claim(runtime.db, runtime.settings, now + lease + 0.1, 32, ())) == 1


def test_a_claim_takes_no_more_of_an_account_than_its_cap(runtime: Runtime) -> None:
    account_id, endpoint_id = _endpoint(runtime, "capped")
    _messages(runtime, account_id, endpoint_id, 10)
    cap = runtime.settings.webhooks_concurrency
    now = time.time()
    assert len(outbox.claim(runtime.db, runtime.settings, now, 32, {})) == cap
    assert len(outbox.claim(runtime.db, runtime.settings, now, 32, {account_id: cap - 1})) == 1
    assert outbox.claim(runtime.db, runtime.settings, now, 32, {account_id: cap}) == []
    assert outbox.anything_due(runtime.db, now)  # the rest wait in the outbox, unclaimed


def test_a_delivered_message_leaves_with_the_last_attempt_that_names_it(runtime: Runtime) -> None:
    account_id, endpoint_id = _endpoint(runtime, "trimmed")
    _messages(runtime, account_id, endpoint_id, outbox.KEPT_ATTEMPTS + 3)
    now = time.time()
    while claimed := outbox.claim(runtime.db, runtime.settings, now, 32, ()):
        for msg in claimed:
            outbox.finish(runtime.db, runtime.settings, msg, now, 200, None, 1)
    with runtime.db.engine.connect() as conn:
        kept = set(conn.execute(select(outbox.MESSAGES.c.id)).scalars())
        shown = set(conn.execute(select(outbox.ATTEMPTS.c.message_id)).scalars())
    assert len(shown) == outbox.KEPT_ATTEMPTS and kept == shown


def test_a_failure_holds_back_the_endpoints_other_due_messages_with_it(runtime: Runtime) -> None:
    account_id, endpoint_id = _endpoint(runtime, "failing")
    _messages(runtime, account_id, endpoint_id, 5)
    now = time.time()
    [msg] = outbox.claim(runtime.db, runtime.settings, now, 1, ())
    outbox.finish(runtime.db, runtime.settings, msg, now, 503, "the endpoint answered 503", 3)
    assert not outbox.anything_due(runtime.db, now + 1)  # all wait for the retry, 5 s on
    assert len(outbox.claim(runtime.db, runtime.settings, now + 6, 32, ())) == runtime.settings.webhooks_concurrency
