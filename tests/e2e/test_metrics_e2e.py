"""Metrics of a real `slugline serve` with two workers: after a scripted session (an account, keys, links,
redirects, unknown slugs, a rate-limited call, a search) one scrape shows every family, with counts summed over both
workers' files, each worker's redirects folded in within a second."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.faults import workers_of
from tests.support.receiver import Receiver
from tests.support.server import Server, ServerFactory, api, free_port, make_account, wait_for

TOKEN = "e2e-metrics-token-" + "t" * 20
REDIRECTS = 40
UNKNOWN = 3
BROWSER = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"}
FAMILIES = (
    "slugline_http_request_duration_seconds",
    "slugline_redirects",
    "slugline_clicks_recorded",
    "slugline_clicks_dropped",
    "slugline_clicks_pending",
    "slugline_click_flush_seconds",
    "slugline_cache_hits",
    "slugline_cache_misses",
    "slugline_cache_evictions",
    "slugline_cache_bytes",
    "slugline_cache_entries",
    "slugline_db_pool_connections_in_use",
    "slugline_db_pool_connections",
    "slugline_rate_limit_refusals",
    "slugline_fetches",
    "slugline_oauth_grants",
    "slugline_webhook_deliveries",
    "slugline_webhook_messages_pending",
    "slugline_webhook_attempt_seconds",
    "slugline_webhook_delivery_lag_seconds",
)

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def parse(text: str) -> tuple[set[str], Samples]:
    families: set[str] = set()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        families.add(family.name)
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return families, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get(name, {}).get(tuple(sorted(labels.items())), 0.0)


def scraper(url: str, headers: dict[str, str] | None = None) -> Callable[[], tuple[set[str], Samples]]:
    def scrape() -> tuple[set[str], Samples]:
        res = httpx.get(url, headers=headers or {})
        assert res.status_code == 200, res.text
        return parse(res.text)

    return scrape


def redirect_many(server: Server, slugs: list[str], count: int) -> None:
    """Each on a new connection, so that both workers take their share."""
    for i in range(count):
        res = httpx.get(f"{server.url}/{slugs[i % len(slugs)]}", headers=BROWSER, follow_redirects=False)
        assert res.status_code == 302, res.text


def settled(
    scrape: Callable[[], tuple[set[str], Samples]], done: Callable[[Samples], bool]
) -> tuple[set[str], Samples]:
    def check() -> tuple[set[str], Samples] | None:
        found = scrape()
        return found if done(found[1]) else None

    return wait_for(check, what="the workers' counts folded into the scrape")


def session(server: Server, http: httpx.Client) -> None:
    """Links, redirects of them, unknown slugs and a search."""
    for i in range(2):
        made = http.post("/links", json={"destination_url": f"https://example.com/{i}", "slug": f"m{i}"})
        assert made.status_code == 201, made.text
    redirect_many(server, ["m0", "m1"], REDIRECTS)
    for i in range(UNKNOWN):
        assert httpx.get(f"{server.url}/no-such-{i}").status_code == 404
    assert http.get("/search", params={"q": "example"}).status_code == 200


def anonymous_fetches(server: Server) -> dict[int, int]:
    """Anonymous /analyze calls until one is refused: each worker keeps its own buckets (no Redis), of one fetch a
    minute here, so the first or second worker to take a second call refuses it."""
    answers: dict[int, int] = {}
    for _ in range(10):
        status = httpx.get(f"{server.url}/api/v1/analyze", params={"url": server.url}).status_code
        answers[status] = answers.get(status, 0) + 1
        if status == 429:
            break
    assert answers.get(429) == 1 and set(answers) <= {200, 429}, answers
    return answers


def test_a_scrape_after_a_session_counts_across_two_workers(start_server: ServerFactory) -> None:
    server = start_server(
        workers=2,
        SLUGLINE_METRICS_TOKEN=TOKEN,
        SLUGLINE_RATE_LIMIT_ANALYZE_ANONYMOUS="1",
        SLUGLINE_WEBHOOKS_ALLOW_PRIVATE="true",
        SLUGLINE_WEBHOOKS_POLL_SECONDS="0.1",
        SLUGLINE_WEBHOOKS_RETRY_SECONDS="0.2",
    )
    assert httpx.get(f"{server.url}/metrics").status_code == 401
    keys = make_account(server, "metrics-e2e", plan="pro")
    with Receiver() as receiver, api(server, keys.full) as http:
        receiver.answer = lambda n: 503 if n == 0 else 200  # the first attempt fails: one retried, then delivered
        hook = http.post("/webhooks", json={"url": receiver.url, "events": ["link.created"]})
        receiver.secret = hook.json()["secret"]
        session(server, http)
        receiver.wait_for(lambda events: len(events) == 2)
    answers = anonymous_fetches(server)

    def done(s: Samples) -> bool:

        redirected = value(s, "slugline_redirects_total", outcome="hit") + value(
            s, "slugline_redirects_total", outcome="miss"
        )
        delivered = value(s, "slugline_webhook_deliveries_total", outcome="delivered")
        pending = value(s, "slugline_webhook_messages_pending")
        return (
            redirected == REDIRECTS
            and value(s, "slugline_clicks_recorded_total") == REDIRECTS
            and (delivered == 2 and pending == 0)
        )

    families, s = settled(scraper(f"{server.url}/metrics", {"Authorization": f"Bearer {TOKEN}"}), done)
    assert set(FAMILIES) <= families
    assert value(s, "slugline_redirects_total", outcome="not_found") == UNKNOWN
    assert value(s, "slugline_redirects_total", outcome="error") == 0
    assert value(s, "slugline_clicks_pending") == 0
    assert value(s, "slugline_clicks_dropped_total") == 0
    assert value(s, "slugline_click_flush_seconds_count") >= 1
    assert value(s, "slugline_rate_limit_refusals_total", rule="anonymous_fetches") == 1
    fetched = sum(v for labels, v in s["slugline_fetches_total"].items())
    assert fetched == answers.get(200, 0)
    assert value(s, "slugline_oauth_grants_total", scope="full") == 0
    count = "slugline_http_request_duration_seconds_count"
    assert value(s, count, method="POST", route="/api/v1/links", status="201") == 2
    assert value(s, count, method="GET", route="/api/v1/search", status="200") == 1
    assert value(s, count, method="GET", route="/api/v1/analyze", status="429") == 1
    redirect_cache = sum(value(s, f"slugline_cache_{kind}_total", cache="redirect") for kind in ("hits", "misses"))
    assert redirect_cache == REDIRECTS + UNKNOWN
    search = sum(value(s, f"slugline_cache_{kind}_total", cache="search") for kind in ("hits", "misses"))
    assert search == 1
    assert value(s, "slugline_cache_bytes", cache="redirect") > 0
    assert value(s, "slugline_cache_hits_total", cache="token") + value(s, "slugline_cache_misses_total", cache="token")
    assert ("slugline_db_pool_connections_in_use", ()) in {(n, k) for n, v in s.items() for k in v}
    hooks = {o: value(s, "slugline_webhook_deliveries_total", outcome=o) for o in ("retried", "failed", "disabled")}
    assert hooks == {"retried": 1, "failed": 0, "disabled": 0}
    assert value(s, "slugline_webhook_attempt_seconds_count") == 3
    assert value(s, "slugline_webhook_delivery_lag_seconds_count") == 2


def test_a_separate_address_answers_without_a_token(start_server: ServerFactory) -> None:
    port = free_port()
    server = start_server(workers=2, SLUGLINE_METRICS_BIND=f"127.0.0.1:{port}")
    assert httpx.get(f"{server.url}/metrics").status_code == 404  # not on the service's own address
    keys = make_account(server, "metrics-bind")
    with api(server, keys.full) as http:
        made = http.post("/links", json={"destination_url": "https://example.com/", "slug": "b0"})
    assert made.status_code == 201, made.text
    redirect_many(server, ["b0"], 10)

    def done(s: Samples) -> bool:
        hits: Any = value(s, "slugline_redirects_total", outcome="hit")
        return bool(hits + value(s, "slugline_redirects_total", outcome="miss") == 10)

    families, _ = settled(scraper(f"http://127.0.0.1:{port}/metrics"), done)
    assert set(FAMILIES) <= families


def test_a_killed_worker_keeps_its_counts(start_server: ServerFactory) -> None:
    """kill -9 of a worker: Granian starts another, and what the dead one counted (folded before it died) stays in
    the sums, beside the new worker's files."""
    server = start_server(workers=2, SLUGLINE_METRICS_TOKEN=TOKEN)
    keys = make_account(server, "metrics-kill")
    with api(server, keys.full) as http:
        assert http.post("/links", json={"destination_url": "https://example.com/", "slug": "k0"}).status_code == 201
    redirect_many(server, ["k0"], 20)
    scrape = scraper(f"{server.url}/metrics", {"Authorization": f"Bearer {TOKEN}"})

    def counted(n: int) -> Callable[[Samples], bool]:
        def done(s: Samples) -> bool:
            hits = value(s, "slugline_redirects_total", outcome="hit")
            return bool(hits + value(s, "slugline_redirects_total", outcome="miss") == n)

        return done

    settled(scrape, counted(20))
    assert server.proc is not None
    serve = server.proc.pid
    before = workers_of(serve)
    assert len(before) == 2
    os.kill(before[0], signal.SIGKILL)
    wait_for(lambda: len(set(workers_of(serve)) - set(before)) == 1, what="a new worker")
    redirect_many(server, ["k0"], 10)
    settled(scrape, counted(30))
    # Stopped only once the new worker has started: Granian waits out its kill timeout (30 s) for a worker that is
    # told to stop while it starts.
    log = server.log_path
    assert log is not None
    wait_for(lambda: log.read_text().count("Started worker-") == 3, what="the new worker started")
