"""The OpenAPI document in process: every operation names its statuses and shapes, and the request rules it states
are the ones the service applies (schemathesis proves the rest against a real server: tests/e2e/test_openapi_e2e.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from slugline.common import patterns
from slugline.common.outputs import Health
from tests.support.helpers import SQLITE_ONLY

ERROR = {"$ref": "#/components/schemas/Error"}
HEALTH = {"$ref": "#/components/schemas/Health"}
LOGGED_OUT = "#/components/schemas/LoggedOut"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@SQLITE_ONLY
def test_every_operation_documents_its_answers(client: TestClient) -> None:
    doc = client.get("/api/v1/openapi.json").json()
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": doc["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            statuses = op["responses"]
            assert "500" in statuses and ("503" in statuses or path == "/api/v1/health/live"), (method, path)
            assert [s for s in statuses if s.startswith("2")], (method, path)
            for status, answer in statuses.items():
                if int(status) >= 400 and (path, status) != ("/api/v1/health", "503"):
                    assert answer["content"]["application/json"]["schema"] == ERROR, (method, path, status)
            if "requestBody" in op:  # a body that does not arrive in time is 408
                assert {"400", "408", "413", "422"} <= set(statuses), (method, path)
    links = doc["paths"]["/api/v1/links"]
    created = {"201", "400", "401", "403", "408", "409", "413", "422", "429", "500", "503"}
    assert set(links["post"]["responses"]) == created
    logout = doc["paths"]["/api/v1/auth/logout"]["post"]
    assert set(logout["responses"]) == {"200", "401", "403", "429", "500", "503"}
    assert logout["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": LOGGED_OUT}
    assert links["get"]["security"] == [{"bearerAuth": []}]
    qr = doc["paths"]["/api/v1/links/{link_id}/qr"]["get"]["responses"]["200"]["content"]
    assert set(qr) == {"image/png", "image/svg+xml"}
    assert "security" not in doc["paths"]["/api/v1/public/{slug}"]["get"]


@SQLITE_ONLY
def test_health_is_documented_as_it_answers(client: TestClient) -> None:
    """The database's state and the worker's click buffer, in one model, whether the database answers (200) or not
    (503); a 503 here is that body, not an error."""
    doc = client.get("/api/v1/openapi.json").json()
    answers = doc["paths"]["/api/v1/health"]["get"]["responses"]
    assert {status: answer["content"]["application/json"]["schema"] for status, answer in answers.items()} == {
        "200": HEALTH,
        "503": HEALTH,
        "500": ERROR,
    }
    health = client.get("/api/v1/health").json()
    assert set(health) == set(doc["components"]["schemas"]["Health"]["required"])
    assert set(health["clicks"]) == set(doc["components"]["schemas"]["ClickBuffer"]["required"])
    assert Health.model_validate(health).clicks.pending >= 0


@SQLITE_ONLY
def test_body_rules_are_documented(client: TestClient) -> None:
    doc = client.get("/api/v1/openapi.json").json()
    create = doc["paths"]["/api/v1/links"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    props = create["properties"]
    assert props["slug"]["anyOf"][0]["pattern"] == patterns.SLUG
    assert props["slug"]["anyOf"][0]["not"] == {"pattern": patterns.RESERVED_SLUG}
    assert props["hashtags"]["anyOf"][0]["items"]["pattern"] == patterns.HASHTAG
    assert props["title"]["anyOf"][0]["pattern"] == "^[^\\x00]*$"  # no NUL in any text
    assert create["anyOf"][0]["required"] == ["visibility", "password"]
    update = doc["paths"]["/api/v1/links/{link_id}"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert update["minProperties"] == 1
    assert "anyOf" not in update["properties"]["visibility"]  # null cannot clear it, so null is not offered


@pytest.mark.parametrize(
    "url, ok",
    [
        ("0", False),
        ("https://example.com", True),
        ("HTTP://EXAMPLE.com:8080/a b", False),
        ("https://example.com:65535/x?y#z", True),
        ("https://example.com:65536/", False),
        ("https://user@example.com/", False),
        ("https://[2001:db8::1]/", False),
        ("https://bücher.example/", False),
        ("https://example.com/bücher", True),
    ],
)
def test_destination_pattern(url: str, ok: bool) -> None:
    assert bool(re.fullmatch(patterns.DESTINATION, url)) is ok


@SQLITE_ONLY
@pytest.mark.parametrize(
    "body, status",
    [
        ({"destination_url": "0"}, 422),
        ({"destination_url": "https://[2001:db8::1]/"}, 422),  # the pattern refuses it, so the service does too
        ({"destination_url": "  https://padded.example/  "}, 201),
        ({"destination_url": "https://a.example/", "auto_meta": "0"}, 422),  # JSON booleans only
        ({"destination_url": "https://a.example/", "auto_meta": 1}, 422),
        ({"destination_url": "https://a.example/", "hashtags": ["İ" * 64]}, 201),  # lowercasing lengthens it
        ({"destination_url": "https://a.example/", "visibility": None, "auto_meta": None}, 201),  # null: not given
    ],
)
def test_create_accepts_what_the_schema_accepts(client: TestClient, alice: Any, body: Any, status: int) -> None:
    res = client.post("/api/v1/links", json=body, headers=bearer(alice.full))
    assert res.status_code == status, res.text


@SQLITE_ONLY
def test_405_names_every_method_of_the_path(client: TestClient, alice: Any) -> None:
    res = client.request("PATCH", "/api/v1/links", headers=bearer(alice.full))
    assert res.status_code == 405
    assert res.headers["allow"] == "GET, POST"
    res = client.options("/api/v1/links/lnk_00000000000", headers=bearer(alice.full))
    assert res.status_code == 405
    assert res.headers["allow"] == "DELETE, GET, PUT"
    assert res.json() == {"error": "method not allowed"}


@SQLITE_ONLY
def test_analyze_refuses_what_its_pattern_refuses(client: TestClient, alice: Any) -> None:
    long_label = "http://" + "a" * 64 + "/"
    res = client.get("/api/v1/analyze", params={"url": long_label}, headers=bearer(alice.full))
    assert res.status_code == 422
    assert res.json()["error"].startswith("url must be an http(s) URL")


@SQLITE_ONLY
def test_analytics_parameters_and_answer_are_documented(client: TestClient) -> None:
    doc = client.get("/api/v1/openapi.json").json()
    analytics = "#/components/schemas/Analytics"
    for path, statuses in (
        ("/api/v1/analytics", {"200", "401", "403", "422", "429", "500", "503"}),
        ("/api/v1/links/{link_id}/analytics", {"200", "401", "403", "404", "422", "429", "500", "503"}),
    ):
        op = doc["paths"][path]["get"]
        assert set(op["responses"]) == statuses, path
        assert op["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": analytics}, path
        params = {p["name"]: p["schema"] for p in op["parameters"] if p["in"] == "query"}
        assert set(params) == {"days", "from", "to", "interval", "source", "device", "browser", "os", "referrer"}
        assert (params["interval"]["enum"], params["interval"]["default"]) == (["hour", "day", "week", "month"], "day")
        [device] = [branch for branch in params["device"]["anyOf"] if branch.get("type") != "null"]
        assert device["enum"] == ["desktop", "mobile", "tablet", "other"], path
        for name in ("from", "to"):
            assert {"type": "string", "format": "date"} in params[name]["anyOf"], (path, name)
        [days] = [branch for branch in params["days"]["anyOf"] if branch.get("type") != "null"]
        assert (days["minimum"], days["maximum"]) == (1, 365), path
    schemas = doc["components"]["schemas"]
    answer = schemas["Analytics"]
    assert set(answer["required"]) == {
        *("days", "from", "to", "interval", "source", "device", "browser", "os", "referrer"),
        *("total_clicks", "unique_visitors", "clicks", "devices", "browsers", "operating_systems"),
        *("sources", "referrers", "top_links"),
    }
    assert answer["properties"]["interval"]["enum"] == ["hour", "day", "week", "month"]
    for field, item, key in (
        ("devices", "DeviceClicks", "device"),
        ("browsers", "BrowserClicks", "browser"),
        ("operating_systems", "OsClicks", "os"),
        ("sources", "SourceClicks", "source"),
        ("referrers", "ReferrerClicks", "referrer"),
    ):
        assert answer["properties"][field]["items"] == {"$ref": f"#/components/schemas/{item}"}, field
        assert set(schemas[item]["required"]) == {key, "clicks"}, item


@SQLITE_ONLY
def test_click_exports_are_documented_as_files(client: TestClient) -> None:
    doc = client.get("/api/v1/openapi.json").json()
    for path, statuses in (
        ("/api/v1/clicks/export", {"200", "401", "403", "422", "429", "500", "503"}),
        ("/api/v1/links/{link_id}/clicks/export", {"200", "401", "403", "404", "422", "429", "500", "503"}),
    ):
        op = doc["paths"][path]["get"]
        assert set(op["responses"]) == statuses, path
        ok = op["responses"]["200"]
        assert set(ok["content"]) == {"text/csv", "application/x-ndjson"}, path
        assert "Content-Disposition" in ok["headers"], path
        params = {p["name"]: p["schema"] for p in op["parameters"] if p["in"] == "query"}
        assert set(params) == {"days", "from", "to", "format", "source", "device", "browser", "os", "referrer"}
        assert (params["format"]["enum"], params["format"]["default"]) == (["csv", "ndjson"], "csv"), path
        assert op["security"] == [{"bearerAuth": []}], path
