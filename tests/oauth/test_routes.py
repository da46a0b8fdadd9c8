"""The OAuth endpoints against what a caller may send them: client_ids no client could have (a URL that does not
parse, a NUL that PostgreSQL refuses in any string) are refused with an RFC 6749 error, never a 500."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

CHALLENGE = "x" * 43
UNPARSABLE = "https://[::1/x"  # an unclosed IPv6 bracket: urlsplit raises ValueError


def test_an_unparsable_client_id_url_is_a_400(client: TestClient) -> None:
    res = client.get("/oauth/authorize", params={"client_id": UNPARSABLE})
    assert res.status_code == 400
    assert res.json() == {"error": "invalid_client", "error_description": "client_id is not a valid URL"}
    form = {"client_id": UNPARSABLE, "response_type": "code", "code_challenge": CHALLENGE}
    res = client.post("/oauth/authorize", data=form, follow_redirects=False)
    assert res.status_code == 400 and res.json()["error"] == "invalid_request"
    token = {"grant_type": "authorization_code", "code": "x", "client_id": UNPARSABLE, "code_verifier": "x"}
    res = client.post("/oauth/token", data={**token, "redirect_uri": "http://a/"})
    assert res.status_code in (400, 401) and res.json()["error"] == "invalid_client"


@pytest.mark.parametrize("client_id", ["a\x00b", "0" * 65, "{12345678-1234-5678-1234-567812345678}"])
def test_client_ids_registration_never_issues_are_unknown(client: TestClient, client_id: str) -> None:
    res = client.get(
        "/oauth/authorize", params={"client_id": client_id, "response_type": "code", "code_challenge": CHALLENGE}
    )
    assert res.status_code == 400 and "not found" in res.json()["error_description"]
    refresh = {"grant_type": "refresh_token", "refresh_token": "x", "client_id": client_id}
    res = client.post("/oauth/token", data=refresh)
    assert res.status_code == 401 and res.json()["error"] == "invalid_client"
    res = client.post("/oauth/revoke", data={"token": "x", "client_id": client_id})
    assert res.status_code == 401 and res.json()["error"] == "unauthorized_client"
