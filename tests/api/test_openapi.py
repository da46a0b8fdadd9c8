"""The OpenAPI document in process: every operation names its statuses and shapes, and the request rules it states
are the ones the service applies (schemathesis proves the rest against a real server: tests/e2e/test_openapi_e2e.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
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
    schemas = doc["components"]["schemas"]
    create = schemas["LinkCreate"]
    props = create["properties"]
    assert props["slug"]["anyOf"][0]["pattern"] == patterns.SLUG
    assert props["slug"]["anyOf"][0]["not"] == {"pattern": patterns.RESERVED_SLUG}
    assert props["hashtags"]["anyOf"][0]["items"]["pattern"] == patterns.HASHTAG
    assert props["title"]["anyOf"][0]["pattern"] == "^[^\\x00]*$"  # no NUL in any text
    # The password rule: in words, and as a condition that generators leave aside (never a top-level union).
    assert "password" in create["description"] and create["then"]["required"] == ["password"]
    update = schemas["LinkUpdate"]
    assert update["minProperties"] == 1
    assert "anyOf" not in update["properties"]["visibility"]  # null cannot clear it, so null is not offered
    assert update["properties"]["visibility"]["$ref"] == "#/components/schemas/Visibility"


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
        assert set(params) == {
            *("days", "from", "to", "interval", "source", "device", "browser", "os", "referrer", "country", "city"),
            "variant",
        }
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
        *("sources", "referrers", "top_links", "country", "city", "variant", "countries", "cities", "variants"),
    }
    assert set(schemas["VariantClicks"]["required"]) == {"variant", "to", "weight", "clicks", "unique_visitors"}
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
        assert set(params) == {
            *("days", "from", "to", "format", "source", "device", "browser", "os", "referrer", "country", "city"),
            "variant",
        }
        assert (params["format"]["enum"], params["format"]["default"]) == (["csv", "ndjson"], "csv"), path
        assert op["security"] == [{"bearerAuth": []}], path


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, methods in doc["paths"].items() for method, op in methods.items()]


@SQLITE_ONLY
def test_operations_read_well_in_generated_clients(client: TestClient) -> None:
    """camelCase operation ids (a generated client's function names), a tag each, and the document's own metadata."""
    doc = client.get("/api/v1/openapi.json").json()
    ids = {(method, path): op["operationId"] for method, path, op in operations(doc)}
    assert len(set(ids.values())) == len(ids)
    for where, name in ids.items():
        assert re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", name), where
    assert {
        ids["post", "/api/v1/links"],
        ids["get", "/api/v1/links"],
        ids["get", "/api/v1/links/{link_id}"],
        ids["put", "/api/v1/links/{link_id}"],
        ids["delete", "/api/v1/links/{link_id}"],
        ids["get", "/api/v1/analytics"],
        ids["get", "/api/v1/search"],
        ids["get", "/api/v1/links/{link_id}/qr"],
        ids["get", "/api/v1/me"],
    } == {
        "createLink",
        "listLinks",
        "getLink",
        "updateLink",
        "deleteLink",
        "getAnalytics",
        "search",
        "getQrCode",
        "getMe",
    }
    tags = {tag["name"] for tag in doc["tags"]}
    for method, path, op in operations(doc):
        assert len(op["tags"]) == 1 and op["tags"][0] in tags, (method, path)
    assert doc["info"]["license"] == {"name": "MIT", "identifier": "MIT"}
    assert doc["info"]["contact"]["name"] and doc["servers"][0]["url"] == "/"


@SQLITE_ONLY
def test_request_bodies_are_named_components(client: TestClient) -> None:
    """A generated client gets a class per body with every field: no body is inline or a top-level union."""
    doc = client.get("/api/v1/openapi.json").json()
    schemas = doc["components"]["schemas"]
    bodies = {}
    for method, path, op in operations(doc):
        if "requestBody" in op:
            [body] = op["requestBody"]["content"].values()  # JSON, or the import's form
            bodies[method, path] = body["schema"]["$ref"].removeprefix("#/components/schemas/")
    assert bodies == {
        ("post", "/api/v1/links"): "LinkCreate",
        ("put", "/api/v1/links/{link_id}"): "LinkUpdate",
        ("post", "/api/v1/auth/register"): "Credentials",
        ("post", "/api/v1/auth/login"): "Credentials",
        ("post", "/api/v1/api-key"): "KeyRequest",
        ("post", "/api/v1/webhooks"): "WebhookCreate",
        ("patch", "/api/v1/webhooks/{webhook_id}"): "WebhookUpdate",
        ("post", "/api/v1/links/import"): "ImportForm",
    } | {key: name for key, name in bodies.items() if key[1].startswith("/api/v1/links/bulk")}
    for name, schema in schemas.items():
        assert not {"anyOf", "oneOf"} & schema.keys(), name
    assert schemas["LinkCreate"]["required"] == ["destination_url"]
    assert schemas["LinkCreate"]["additionalProperties"] is False


@SQLITE_ONLY
def test_answers_are_closed_typed_and_enumerated(client: TestClient) -> None:
    doc = client.get("/api/v1/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for name, schema in schemas.items():
        if "properties" in schema:
            assert schema["additionalProperties"] is False, name
    assert schemas["Hit"]["properties"]["highlights"]["additionalProperties"] == {"type": "string"}
    link = schemas["Link"]["properties"]
    assert link["created_at"]["format"] == link["updated_at"]["format"] == "date-time"
    assert link["short_url"]["format"] == "uri"
    assert link["visibility"] == {"$ref": "#/components/schemas/Visibility"}
    assert schemas["Analytics"]["properties"]["from"]["format"] == "date"
    assert schemas["Me"]["properties"]["scope"]["enum"] == ["full", "public", "session"]
    assert schemas["Me"]["properties"]["plan"]["enum"] == ["free", "developer", "pro"]
    assert schemas["Click"]["properties"]["device"]["enum"] == ["desktop", "mobile", "tablet", "bot", "other"]
    [scope] = doc["paths"]["/api/v1/api-key"]["delete"]["parameters"]
    assert (scope["name"], scope["required"], scope["schema"]["enum"]) == ("scope", True, ["full", "public"])


@SQLITE_ONLY
def test_every_operation_has_a_valid_example(client: TestClient) -> None:
    """Each operation shows its success answer (and body) by example, and each example is valid against its schema."""
    doc = client.get("/api/v1/openapi.json").json()
    registry: Registry[Any] = Registry().with_resource("urn:doc", Resource.from_contents(doc, DRAFT202012))

    def check(example: Any, schema: dict[str, Any], where: tuple[str, ...]) -> None:
        validator = Draft202012Validator(schema, registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER)
        errors = [error.message for error in validator.iter_errors(example)]
        assert not errors, (where, errors)

    for method, path, op in operations(doc):
        answers = [
            (status, media_type, content)
            for status, answer in op["responses"].items()
            if status.startswith("2")
            for media_type, content in answer.get("content", {}).items()
        ]
        shown = [(status, media_type, content) for status, media_type, content in answers if "example" in content]
        assert shown, f"{method} {path}: add its example to python/slugline/api/examples.py"
        for status, media_type, content in shown:
            check(content["example"], rebased(content["schema"]), (method, path, status, media_type))
        if "requestBody" in op:
            [(media_type, body)] = op["requestBody"]["content"].items()
            check(body["example"], rebased(body["schema"]), (method, path, "body"))
            if media_type == "application/json":
                res = client.request(method, path, json=body["example"])  # and the service takes it (auth aside)
            else:  # a form: its file as a file
                form = {name: value for name, value in body["example"].items() if name != "file"}
                res = client.request(method, path, data=form, files={"file": ("x", body["example"]["file"])})
            assert res.status_code != 422, (method, path, res.text)


def rebased(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its local references pointed into the document's resource."""
    rebased: dict[str, Any] = json.loads(json.dumps(schema).replace('"#/components/', '"urn:doc#/components/'))
    return rebased


@SQLITE_ONLY
@pytest.mark.parametrize(
    "body, message",
    [
        ({"destination_url": "https://a.example/", "password": "open sesame"}, "password can only be set"),
        ({"destination_url": "https://a.example/", "visibility": "private", "password": "x" * 8}, "can only be set"),
        ({"destination_url": "https://a.example/", "visibility": "password"}, "password is required"),
    ],
)
def test_the_password_rule_is_a_clear_422(client: TestClient, alice: Any, body: Any, message: str) -> None:
    res = client.post("/api/v1/links", json=body, headers=bearer(alice.full))
    assert res.status_code == 422 and message in res.json()["error"], res.text
    assert set(res.json()) == {"error"}
