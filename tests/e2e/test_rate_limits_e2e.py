"""The in-process rate limits hold against a real `slugline serve` (no Redis): filling the limiter's table with the
buckets of made-up sign-in names does not hand anyone a fresh bucket, and filling it from ever new addresses refuses
no one else."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.support.mcp_client import MODES, call, connect
from tests.support.server import Keys, Server, ServerFactory, api, make_account

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
TABLE_BYTES = 1 << 16  # the smallest table the setting allows: a few hundred buckets
CHURN = 400  # sign-in attempts with made-up usernames: more than that table has room for


def _form(server: Server) -> tuple[str, str]:
    """A pre-session cookie and the CSRF token that goes with it."""
    page = httpx.get(f"{server.url}/app/register")
    found = CSRF.search(page.text)
    assert found, page.text
    return page.cookies["slugline_csrf"], found[1]


@pytest.mark.parametrize("hashes", ["30", "1000000"], ids=["default-hash-budget", "no-hash-budget"])
def test_filling_the_table_does_not_reset_the_registration_limit(start_server: ServerFactory, hashes: str) -> None:
    """The reviewer's churn: 5 registrations an hour spent, then sign-ins with a new username each (a bucket each,
    formerly even past the address's password-hash budget); a table that dropped its oldest bucket to make room let
    the next registration through. With the hash budget (30/min) the churn now adds no bucket once it is spent;
    without one, the churn's buckets (full again within seconds) make room for each other and for newcomers, and the
    registrations' bucket, spent for the hour, is never the one dropped."""
    server = start_server(
        SLUGLINE_RATE_LIMIT_BYTES=str(TABLE_BYTES),
        SLUGLINE_RATE_LIMIT_PASSWORD_HASHES=hashes,
        SLUGLINE_RATE_LIMIT_ANONYMOUS="1000000",  # the dashboard's own per-IP limit would stop the churn first
    )
    seed, csrf = _form(server)
    # One connection; the pre-session cookie alone on every form (a signed-in session would need another token).
    with httpx.Client(base_url=server.url, timeout=30) as http:

        def post(path: str, username: str, password: str) -> httpx.Response:
            http.cookies.clear()
            form = {"csrf_token": csrf, "username": username, "password": password}
            return http.post(path, data=form, headers={"Cookie": f"slugline_csrf={seed}"}, follow_redirects=False)

        registered = [post("/app/register", f"churn-{i}", "a long password").status_code for i in range(6)]
        assert registered == [303] * 5 + [429]
        churned = [post("/app/login", f"nobody{i}", "x" * 8).status_code for i in range(CHURN)]
        assert set(churned) <= {401, 429}, churned
        # The registrations' own limit answers, not the password-hash budget the churn may have spent meanwhile
        # (a password-hash refusal waits for that budget to refill: never a registration).
        deadline = time.monotonic() + 30
        while "too many registrations" not in (after := post("/app/register", "churn-after", "a long password")).text:
            assert after.status_code == 429 and "too many password checks" in after.text, after.text[-2000:]
            assert time.monotonic() < deadline, "the registration was never answered by its own limit"
            time.sleep(0.5)
        assert after.status_code == 429


def _flood_then_visit(server: Server, keys: Keys) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for n in range(1_000):  # a few hundred buckets fill the table; five times as many addresses
            address = f"198.{18 + n // 65_536}.{n // 256 % 256}.{n % 256}"
            assert http.get("/api/v1/public/x", headers={"X-Forwarded-For": address}).status_code == 404
        http.cookies.set("slugline_session", keys.session)
        page = http.get("/app/", headers={"X-Forwarded-For": "192.0.2.200"})
        assert page.status_code == 200, page.text[-500:]
    with api(server, keys.full) as owner:
        assert owner.get("/links").status_code == 200


@pytest.mark.anyio
async def test_a_table_filled_from_many_addresses_refuses_no_one_else(start_server: ServerFactory) -> None:
    """The reviewer's flood: calls from ever new addresses, each leaving a bucket that refills slowly, filled a
    64 KiB table, and then the owner's REST, MCP and dashboard calls were refused with 429 (every caller without a
    live bucket was). Now the strangers' buckets make room for each other and for everyone else."""
    server = start_server(
        SLUGLINE_RATE_LIMIT_BYTES=str(TABLE_BYTES),
        SLUGLINE_RATE_LIMIT_ANONYMOUS="3",  # a stranger's bucket, one call spent, is full again in 20 s
        SLUGLINE_TRUSTED_PROXIES="127.0.0.1",
    )
    keys = make_account(server, "owner")
    _flood_then_visit(server, keys)
    async with connect(server, keys.public, MODES[-1]) as agent:
        assert (await call(agent, "get_me"))["username"] == "owner"
