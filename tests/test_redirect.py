"""The redirect layer's pure helpers: query merging, Location encoding, Accept negotiation."""

from __future__ import annotations

import pytest

from slugline.linkcache import ascii_url
from slugline.redirect import merge_query, prefers_json


@pytest.mark.parametrize(("destination", "query", "location", "utm", "qr"), [
    ("https://a.example/p", b"x=1", "https://a.example/p?x=1", None, False),
    ("https://a.example/p?keep=%20raw&x=0", b"x=1&src=qr", "https://a.example/p?keep=+raw&x=1", None, True),
    ("https://a.example/p?keep=%20raw", b"utm_source=News", "https://a.example/p?keep=%20raw&utm_source=News", "News",
     False),
    ("https://a.example/p#frag", b"src=qr", "https://a.example/p#frag", None, True),
    ("https://a.example/p", b"q=caf%C3%A9", "https://a.example/p?q=caf%C3%A9", None, False),
])
def test_merge_query(destination: str, query: bytes, location: str, utm: str | None, qr: bool) -> None:
    assert merge_query(destination, query) == (location.encode(), utm, qr)


def test_ascii_url_encodes_unicode_hosts_and_paths() -> None:
    assert ascii_url("https://bücher.example/straße?q=ü") == "https://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%BC"
    assert ascii_url("https://a.example/a%20b?c=d&e") == "https://a.example/a%20b?c=d&e"


@pytest.mark.parametrize(("accept", "json"), [
    (b"", False), (b"*/*", False), (b"application/json", True), (b"text/html,application/xhtml+xml,*/*;q=0.8", False),
    (b"application/json, text/html", True), (b"text/html, application/json", False),
    (b"text/html;q=0.5, application/json", True), (b"application/problem+json", True), (b"application/json;q=0", False),
])
def test_prefers_json(accept: bytes, json: bool) -> None:
    assert prefers_json(accept) is json
