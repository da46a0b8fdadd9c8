"""The real `slugline serve` under Granian, spoken to over HTTP."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys

import httpx

from tests.support.server import ServerFactory, make_account


def test_serve_end_to_end(start_server: ServerFactory, database_url: str) -> None:
    server = start_server(database_url)
    keys = make_account(server, "walker")
    auth = {"Authorization": f"Bearer {keys.full}"}
    with httpx.Client(base_url=f"{server.url}/api/v1", headers=auth) as http:
        assert http.get("/me").json()["scope"] == "full"
        made = http.post(
            "/links",
            json={
                "destination_url": "https://example.org/a",
                "slug": "walk",
                "title": "Café walk",
                "hashtags": ["Trips"],
            },
        )
        assert made.status_code == 201, made.text
        assert made.json()["short_url"] == f"{server.url}/walk"
        found = http.get("/links", params={"q": "cafe #trips"}).json()
        assert [link["slug"] for link in found["data"]] == ["walk"]
        assert http.get("/links/lnk_doesnotexist").json() == {"error": "link not found"}
        bad = http.post("/links", content=b"{nope", headers={"Content-Type": "application/json"})
        assert bad.status_code == 400 and set(bad.json()) == {"error"}


def test_same_custom_slug_raced_gives_one_201_and_one_409(start_server: ServerFactory, database_url: str) -> None:
    server = start_server(database_url, workers=2)
    keys = make_account(server, "racer")
    auth = {"Authorization": f"Bearer {keys.full}"}

    def create(slug: str) -> int:
        with httpx.Client(base_url=f"{server.url}/api/v1", headers=auth, timeout=30) as http:
            return http.post("/links", json={"destination_url": "https://example.org/", "slug": slug}).status_code

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for round_no in range(5):
            statuses = sorted(pool.map(create, [f"race-{round_no}"] * 4))
            assert statuses == [201, 409, 409, 409], statuses


def test_cli_version_and_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "slugline.cli", "--version"], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.startswith("slugline ")
    for args in (
        ["--help"],
        ["serve", "--help"],
        ["migrate", "--help"],
        ["accounts", "create", "--help"],
        ["accounts", "set-plan", "--help"],
        ["accounts", "reset-password", "--help"],
        ["keys", "revoke", "--help"],
        ["links", "create", "--help"],
        ["clicks", "export", "--help"],
    ):
        res = subprocess.run([sys.executable, "-m", "slugline.cli", *args], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and "usage:" in res.stdout, args


def test_postgres_needs_a_secret_to_serve_but_not_to_migrate(pg_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SLUGLINE_SECRET_KEY"} | {"SLUGLINE_DATABASE_URL": pg_url}
    migrate = subprocess.run(
        [sys.executable, "-m", "slugline.cli", "migrate"], env=env, capture_output=True, text=True, timeout=120
    )
    assert migrate.returncode == 0, migrate.stderr
    serve = subprocess.run(
        [sys.executable, "-m", "slugline.cli", "serve", "--port", "9"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert serve.returncode == 2 and "SLUGLINE_SECRET_KEY must be set" in serve.stderr
    assert "Traceback" not in serve.stderr
