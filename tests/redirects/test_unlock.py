"""Password links through the real redirect path: forged or malformed unlock cookies show the form, never a 500."""

from __future__ import annotations

import time

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import SQLITE_ONLY, Account, raw_get

FUTURE = int(time.time()) + 3600


@pytest.fixture
def vault(client: TestClient, alice: Account) -> dict[str, str]:
    res = client.post(
        "/api/v1/links",
        headers=alice.auth(),
        json={
            "destination_url": "https://example.org/secret",
            "slug": "vault",
            "visibility": "password",
            "password": "open sesame",
        },
    )
    assert res.status_code == 201, res.text
    link: dict[str, str] = res.json()
    return link


@pytest.mark.parametrize(
    "value",
    [
        f"{FUTURE}.\u00e9\u00e9\u00e9".encode("latin-1"),  # non-ASCII signature: compare_digest(str, str) raised
        f"{FUTURE}.".encode() + "\u00e9".encode() * 32,
        b"\xb2.abc",  # "²" passes str.isdigit(), then int() fails
        b"\xb9\xb2\xb3." + b"0" * 64,
        b"9" * 5000 + b".abc",  # beyond int()'s digit limit
        b"9" * 13 + b".abc",  # too long to be an expiry we signed
        b"-5.abc",
        b"+99999999999.abc",
        b" 99999999999.abc",
        b"1_000_000_000_0.abc",
        b".",
        b"",
        b"abc",
        f"{FUTURE}.{'0' * 64}".encode(),  # well formed, wrong signature
        f"{FUTURE}".encode(),
    ],
    # Named without the time, so that every process of a parallel run (pytest-xdist) collects the same tests.
    ids=lambda value: value.replace(str(FUTURE).encode(), b"<future>").decode("latin-1")[:80],
)
@SQLITE_ONLY
def test_forged_cookies_show_the_form(client: TestClient, vault: dict[str, str], value: bytes) -> None:
    cookie = f"slu_{vault['id']}=".encode() + value
    status, _, body = raw_get(client, "/vault", [(b"cookie", cookie)])  # the raw bytes, as a real server passes them
    assert status == 200, body
    assert b"This link is password-protected" in body
    res = client.get("/vault", headers={b"cookie": cookie}, follow_redirects=False)  # re-encoded as UTF-8
    assert res.status_code == 200 and b"This link is password-protected" in res.content


@SQLITE_ONLY
def test_a_real_cookie_still_unlocks_alongside_forged_ones(client: TestClient, vault: dict[str, str]) -> None:
    right = client.post("/vault", data={"password": "open sesame"}, follow_redirects=False)
    assert right.status_code == 302
    value = right.headers["set-cookie"].split(";")[0].encode()
    client.cookies.clear()
    name = f"slu_{vault['id']}=".encode()
    forged = b"; ".join(name + v for v in (b"\xb2.x", b"9" * 5000 + b".x", f"{FUTURE}.\u00e9".encode("latin-1")))
    status, headers, _ = raw_get(client, "/vault", [(b"cookie", forged + b"; " + value)])
    assert status == 302 and headers[b"location"] == b"https://example.org/secret"
    expired = value.split(b"=", 1)[0] + b"=1." + value.split(b".", 1)[1]
    assert client.get("/vault", headers={b"cookie": expired}, follow_redirects=False).status_code == 200
