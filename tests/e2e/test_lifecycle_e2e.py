"""Links that end and links that preview, on real servers: the exact click limit across two instances of two workers
on one PostgreSQL, expiry within a second with warm caches, and the card a link-preview crawler gets."""

from __future__ import annotations

import html
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx

from tests.support.helpers import CHROME
from tests.support.server import ServerFactory, api, make_account, wait_for

LIMIT = 200
VISITS = 500


def test_max_clicks_is_exact_across_two_instances(start_server: ServerFactory, pg_url: str) -> None:
    first = start_server(pg_url, workers=2)
    second = start_server(pg_url, workers=2)
    keys = make_account(first, "limited")
    with api(first, keys.full) as http:
        made = http.post("/links", json={"destination_url": "https://example.org/sale", "max_clicks": LIMIT})
        assert made.status_code == 201, made.text
        link = made.json()
    slug = link["slug"]
    clients = [httpx.Client(base_url=first.url, headers={"user-agent": CHROME, "accept": "application/json"})]
    clients.append(httpx.Client(base_url=second.url, headers={"user-agent": CHROME, "accept": "application/json"}))

    def visit(n: int) -> tuple[int, str | None]:
        answer = clients[n % 2].get(f"/{slug}")
        return answer.status_code, answer.headers.get("location")

    try:
        with ThreadPoolExecutor(max_workers=32) as pool:
            answers = list(pool.map(visit, range(VISITS)))
    finally:
        for client in clients:
            client.close()
    through = [answer for answer in answers if answer == (302, "https://example.org/sale")]
    refused = [answer for answer in answers if answer[0] == 410]
    assert (len(through), len(refused)) == (LIMIT, VISITS - LIMIT), sorted(set(answers))
    with api(second, keys.full) as http:
        assert http.get(f"/links/{link['id']}").json()["status"] == "limit_reached"

        def counted() -> int | None:  # every visit is recorded, the refused ones too
            total = int(http.get(f"/links/{link['id']}/clicks").json()["pagination"]["total"])
            return total if total >= VISITS else None

        assert wait_for(counted, deadline=20, what="every visit recorded") == VISITS


def test_expiry_reaches_every_warm_worker_within_a_second(start_server: ServerFactory, pg_url: str) -> None:
    servers = [start_server(pg_url, workers=2), start_server(pg_url, workers=2)]
    keys = make_account(servers[0], "expiring")
    ends = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    with api(servers[0], keys.full) as http:
        made = http.post("/links", json={"destination_url": "https://example.org/", "expires_at": ends.isoformat()})
        assert made.status_code == 201, made.text
    slug = made.json()["slug"]
    clients = [httpx.Client(base_url=server.url, headers={"accept": "application/json"}) for server in servers]
    try:
        for client in clients:  # warm every worker's cache (new connections spread over the workers)
            for _ in range(8):
                assert httpx.get(f"{client.base_url}/{slug}").status_code == 302
        while datetime.now(UTC) < ends:
            time.sleep(0.01)
        late = ends + timedelta(seconds=1)
        for _ in range(20):
            for client in clients:
                answer = httpx.get(f"{client.base_url}/{slug}", headers={"accept": "application/json"})
                if answer.status_code == 302:
                    assert datetime.now(UTC) < late, "a worker still redirected a second after the expiry"
                    continue
                assert (answer.status_code, answer.json()) == (410, {"error": "this link has expired"})
        assert datetime.now(UTC) >= ends
    finally:
        for client in clients:
            client.close()


def test_a_link_preview_crawler_gets_the_escaped_card(start_server: ServerFactory) -> None:
    server = start_server()
    keys = make_account(server, "carded")
    preview = {
        "title": 'Launch "day" <b>',
        "description": "</title><script>x()</script>",
        "image_url": "https://i.example/c.png",
    }
    with api(server, keys.full) as http:
        made = http.post("/links", json={"destination_url": "https://example.org/launch", "preview": preview})
        assert made.status_code == 201, made.text
    slug = made.json()["slug"]
    card = httpx.get(
        f"{server.url}/{slug}", headers={"user-agent": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"}
    )
    assert card.status_code == 200 and card.headers["content-type"].startswith("text/html")
    assert f'<meta property="og:title" content="{html.escape(preview["title"], quote=True)}">' in card.text
    assert "<script>" not in card.text and "<b>" not in card.text
    assert '<meta property="og:image" content="https://i.example/c.png">' in card.text
    person = httpx.get(f"{server.url}/{slug}", headers={"user-agent": CHROME})
    assert (person.status_code, person.headers["location"]) == (302, "https://example.org/launch")
