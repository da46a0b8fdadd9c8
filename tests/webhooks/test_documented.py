"""The OpenAPI document's `webhooks` say what a receiver gets: every event of a session, as delivered and verified with
`standardwebhooks`, is valid against its documented body, and every documented event is one an endpoint can want."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from slugline.webhooks.inputs import EVENTS
from tests.support.geodb import PARIS_V4, write_db
from tests.support.helpers import CHROME, LINKS, ClientFactory
from tests.support.receiver import Receiver
from tests.webhooks.test_delivery import FAST, HOOKS, _account


def clicked(events: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events.values() if e["type"] == "link.clicked"]


def test_every_delivered_event_matches_its_documented_body(
    make_client: ClientFactory, receiver: Receiver, tmp_path: Path
) -> None:
    geo = str(write_db(tmp_path / "geo.mmdb"))
    client, rt = make_client(**FAST, trusted_proxies="testclient", geoip_db=geo)
    alice = _account(client, rt)
    hook = client.post(HOOKS, json={"url": receiver.url, "events": list(EVENTS)}, headers=alice.auth()).json()
    receiver.secret = hook["secret"]
    link = client.post(LINKS, json={"destination_url": "https://example.com/", "slug": "doc"}, headers=alice.auth())
    client.put(f"{LINKS}/{link.json()['id']}", json={"title": "Documented"}, headers=alice.auth())
    for forwarded in (PARIS_V4, "198.51.100.7"):
        headers = {"user-agent": CHROME, "x-forwarded-for": forwarded}
        assert client.get("/doc", headers=headers, follow_redirects=False).is_redirect
    receiver.wait_for(lambda events: sum(len(e["data"]["clicks"]) for e in clicked(events)) == 2)
    client.delete(f"{LINKS}/{link.json()['id']}", headers=alice.auth())
    receiver.wait_for(lambda events: any(e["type"] == "link.deleted" for e in events.values()))

    doc = client.get("/api/v1/openapi.json").json()
    assert set(doc["webhooks"]) == set(EVENTS)
    registry: Registry[Any] = Registry().with_resource("urn:doc", Resource.from_contents(doc, DRAFT202012))

    def check(kind: str, event: dict[str, Any]) -> None:
        body = doc["webhooks"][kind]["post"]["requestBody"]["content"]["application/json"]
        schema = {"$ref": "urn:doc" + body["schema"]["$ref"]}
        checker = Draft202012Validator(schema, registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER)
        assert not [error.message for error in checker.iter_errors(event)], event

    for event in receiver.events.values():
        check(event["type"], event)
    for kind, hook in doc["webhooks"].items():  # and each documented example
        example = hook["post"]["requestBody"]["content"]["application/json"]["example"]
        assert example["type"] == kind
        check(kind, example)
    delivered = {event["type"] for event in receiver.events.values()}
    assert delivered == {"link.created", "link.updated", "link.clicked", "link.deleted"} and not receiver.refused
