from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import SQLITE_ONLY

REGISTER = "/api/v1/auth/register"
LOGIN = "/api/v1/auth/login"


def test_register_returns_account_and_session_token(client: TestClient) -> None:
    res = client.post(REGISTER, json={"username": "Ada_Lovelace", "password": "analytical"})
    assert res.status_code == 201
    body = res.json()
    assert body["account"]["username"] == "ada_lovelace"
    assert body["account"]["plan"] == "free"
    assert body["token"].startswith("svc_sess_")
    assert body["expires_at"].endswith("Z")
    me = client.get("/api/v1/me", headers={"Authorization": f"Bearer {body['token']}"})
    assert me.json()["scope"] == "session"


def test_register_taken_name_is_409_case_insensitive(client: TestClient) -> None:
    assert client.post(REGISTER, json={"username": "grace", "password": "cobol-1959"}).status_code == 201
    res = client.post(REGISTER, json={"username": "GRACE", "password": "cobol-1959"})
    assert res.status_code == 409
    assert "grace" in res.json()["error"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"username": "ab", "password": "longenough"}, "username"),
        ({"username": "x" * 33, "password": "longenough"}, "username"),
        ({"username": "no spaces", "password": "longenough"}, "username"),
        ({"username": "okname", "password": "short"}, "password"),
        ({"password": "longenough"}, "username"),
        ({"username": "okname", "password": "longenough", "admin": True}, "admin"),
    ],
)
@SQLITE_ONLY
def test_register_validation_names_the_field(client: TestClient, body: dict[str, object], field: str) -> None:
    res = client.post(REGISTER, json=body)
    assert res.status_code == 422
    assert field in res.json()["error"]


def test_login_right_and_wrong(client: TestClient) -> None:
    client.post(REGISTER, json={"username": "linus", "password": "penguins!"})
    ok = client.post(LOGIN, json={"username": "Linus", "password": "penguins!"})
    assert ok.status_code == 200 and ok.json()["token"].startswith("svc_sess_")
    for body in ({"username": "linus", "password": "wrong-password"}, {"username": "nobody", "password": "penguins!"}):
        bad = client.post(LOGIN, json=body)
        assert bad.status_code == 401
        assert bad.json() == {"error": "wrong username or password"}
        assert bad.headers["www-authenticate"] == "Bearer"


@SQLITE_ONLY
def test_malformed_json_is_400(client: TestClient) -> None:
    res = client.post(REGISTER, content=b'{"username": "x",', headers={"Content-Type": "application/json"})
    assert res.status_code == 400
    assert "malformed JSON" in res.json()["error"]


@SQLITE_ONLY
def test_non_json_body_is_400(client: TestClient) -> None:
    res = client.post(REGISTER, data={"username": "formuser", "password": "longenough"})
    assert res.status_code == 400
    assert "application/json" in res.json()["error"]


@SQLITE_ONLY
def test_json_that_is_not_an_object_is_422(client: TestClient) -> None:
    res = client.post(REGISTER, json=["username", "password"])
    assert res.status_code == 422
    assert "JSON object" in res.json()["error"]


@pytest.mark.parametrize("body", [{"username": "ab", "password": "x"}, {"username": "ünï", "password": "short"}])
def test_login_with_names_registration_would_refuse_is_just_wrong(client: TestClient, body: dict[str, str]) -> None:
    res = client.post(LOGIN, json=body)
    assert res.status_code == 401 and res.json() == {"error": "wrong username or password"}


@SQLITE_ONLY
def test_login_still_validates_shape(client: TestClient) -> None:
    assert client.post(LOGIN, json={"username": "someone"}).status_code == 422
    assert client.post(LOGIN, json={"username": "someone", "password": "x", "otp": 1}).status_code == 422


@SQLITE_ONLY
def test_oversized_body_is_413_without_reading_it_all(client: TestClient) -> None:
    big = b'{"username": "' + b"a" * (1 << 20) + b'", "password": "long enough"}'
    res = client.post(REGISTER, content=big, headers={"Content-Type": "application/json"})
    assert res.status_code == 413 and "at most" in res.json()["error"]
