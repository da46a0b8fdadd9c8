"""The OAuth endpoints' bodies against a real `slugline serve` (Granian delivers a body in pieces, as a client sends
it): a body past the cap is refused without being read, one held back is refused at the deadline, a multipart form is
refused before it is parsed, and registration metadata is bounded, redirect URIs included."""

from __future__ import annotations

import socket
import time

import httpx

from tests.support.oauth_client import REDIRECT_URI
from tests.support.server import ServerFactory

DEADLINE = 1.0  # SLUGLINE_BODY_TIMEOUT_SECONDS of the server under test


def _exchange(port: int, head: str, body: bytes = b"", wait: float = 15.0) -> tuple[int, bytes]:
    """Send a request's head and the start of its body by hand; the status and body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(head.encode() + body)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, answer.partition(b"\r\n\r\n")[2]


def _head(path: str, ctype: str, length: int) -> str:
    return f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\nContent-Length: {length}\r\n\r\n"


def test_oauth_bodies_are_bounded(start_server: ServerFactory) -> None:
    server = start_server(SLUGLINE_BODY_TIMEOUT_SECONDS=str(DEADLINE))
    # 200 MiB announced: refused on the announcement, nothing read.
    status, body = _exchange(server.port, _head("/oauth/register", "application/json", 200 << 20), b'{"client_name":')
    assert status == 413 and b"at most 1024 KiB" in body

    # The last bytes of a form held back: 408 at the deadline, not whenever the client finishes.
    form = "application/x-www-form-urlencoded"
    started = time.monotonic()
    status, body = _exchange(server.port, _head("/oauth/authorize", form, 100), b"client_id=abc&")
    assert status == 408 and b"did not arrive within 1 s" in body
    assert time.monotonic() - started < DEADLINE + 3

    # A multipart form, whose file parts Starlette's parser would spill to disk: refused before it is parsed.
    multipart = b'--XyZ\r\nContent-Disposition: form-data; name="f"; filename="a.bin"\r\n\r\n' + b"a" * 1000
    head = _head("/oauth/authorize", "multipart/form-data; boundary=XyZ", len(multipart) + 9)
    status, body = _exchange(server.port, head, multipart + b"\r\n--XyZ--")
    assert status == 400 and b"application/x-www-form-urlencoded" in body

    with httpx.Client(base_url=server.url, timeout=30) as http:
        res = http.post("/oauth/register", json={"redirect_uris": [REDIRECT_URI], "client_name": "n" * (2 << 20)})
        assert res.status_code == 413
        res = http.post("/oauth/register", json={"redirect_uris": [REDIRECT_URI], "client_name": "n" * 256})
        assert res.status_code == 400 and res.json()["error"] == "invalid_client_metadata"
        assert "client_name: at most 255 characters" in res.json()["error_description"]
        # A redirect URI the code must never be sent to: refused with RFC 7591's own error.
        for uri in ("javascript:alert(1)", "http://app.example/callback", "https://app.example/cb#x"):
            res = http.post("/oauth/register", json={"redirect_uris": [REDIRECT_URI, uri]})
            assert res.status_code == 400 and res.json()["error"] == "invalid_redirect_uri", res.text
