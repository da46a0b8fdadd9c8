"""The in-process rate limits hold against a real `slugline serve` (no Redis): filling the limiter's table with the
buckets of made-up sign-in names does not hand anyone a fresh bucket."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.support.server import Server, ServerFactory

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
    without one, the table fills and refuses newcomers for a few seconds, and still drops nobody's bucket."""
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
        # The registrations' own limit answers, not the password-hash budget the churn may have spent meanwhile. While
        # the churn's buckets fill the table, a call without a bucket of its own (this address's dashboard bucket: at
        # this rate it is full again at once) is refused as well, until they refill (6 s); never a registration.
        deadline = time.monotonic() + 30
        while "too many registrations" not in (after := post("/app/register", "churn-after", "a long password")).text:
            assert after.status_code == 429 and "rate limit exceeded" in after.text, after.text[-2000:]
            assert time.monotonic() < deadline, "the table never made room again"
            time.sleep(0.5)
        assert after.status_code == 429
