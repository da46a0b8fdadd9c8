"""A connection stays usable after an answer that came before the request body was read (a 401, 404 or 405 to a
large POST): the client's next request on it is answered, as a pooling SDK expects (issue 35, finding 9)."""

from __future__ import annotations

import random
from collections import Counter

import httpx

from tests.support.faults import LIMITLESS
from tests.support.server import ServerFactory

ROUNDS = 1000
EARLY_ANSWERS = [  # answered without reading the body, by FastAPI's routing, an auth check or the redirect layer
    ("/api/v1/no-such-route", 404),
    ("/no-such-slug", 404),
    ("/api/v1/links", 401),
    ("/api/v1/health", 405),
]


def test_the_next_request_after_an_early_answer_is_answered(start_server: ServerFactory) -> None:
    server = start_server(**LIMITLESS)
    rnd = random.Random(35)
    bodies = [rnd.randbytes(rnd.randint(20_000, 300_000)) for _ in range(50)]  # 20-300 KB, drawn again each round
    failed: Counter[str] = Counter()
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for round_no in range(ROUNDS):
            path, status = EARLY_ANSWERS[round_no % len(EARLY_ANSWERS)]
            body = rnd.choice(bodies)
            try:
                early = http.post(path, content=body, headers={"Content-Type": "application/json"})
                assert early.status_code == status, (path, early.status_code, early.text)
                assert http.get("/api/v1/health").status_code == 200
            except httpx.TransportError as exc:
                failed[f"{path} ({len(body)} bytes): {type(exc).__name__}: {exc}"] += 1
    assert not failed, f"{sum(failed.values())} of {ROUNDS} rounds failed: {dict(failed)}"
