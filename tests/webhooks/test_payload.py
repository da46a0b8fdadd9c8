"""A `link.clicked` body names every click field, a message written before clicks had places (or variants)
included."""

from __future__ import annotations

import orjson

from slugline.webhooks import payload
from slugline.webhooks.clicks import CLICK_FIELDS
from slugline.webhooks.outbox import CLICKED, Claimed

BEFORE_PLACES: list[object] = ["lnk_1", "2026-11-27T07:59:59.812345Z", "mobile", "chrome", "android", "qr", None]


def _claimed(data: list[list[object]]) -> Claimed:
    return Claimed("msg_1", "wh_1", 1, CLICKED, orjson.dumps(data).decode(), 0.0, 1, "http://x/", "salt", "http://s")


def test_a_click_of_an_older_message_gets_no_place() -> None:
    [click] = orjson.loads(payload.body(_claimed([BEFORE_PLACES])))["data"]["clicks"]
    assert list(click) == list(CLICK_FIELDS)
    assert click["source"] == "qr" and click["country"] is None and click["region"] is None and click["city"] is None
    assert click["variant"] is None


def test_a_placed_click_keeps_its_place() -> None:
    [click] = orjson.loads(payload.body(_claimed([[*BEFORE_PLACES, "FR", "Île-de-France", "Paris"]])))["data"]["clicks"]
    place = (click["country"], click["region"], click["city"], click["variant"])
    assert place == ("FR", "Île-de-France", "Paris", None)


def test_a_click_keeps_its_variant() -> None:
    placed = [*BEFORE_PLACES, "FR", None, None, 2]
    [click] = orjson.loads(payload.body(_claimed([placed])))["data"]["clicks"]
    assert (click["country"], click["variant"]) == ("FR", 2)
