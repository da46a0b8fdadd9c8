"""The answers Granian gives itself, before the app sees the request (docs/api.md, "Answers from the HTTP server"): a
status, no body and a closed connection, which no setting of ours changes. Pinned here so that a Granian release
that answers otherwise is noticed, and the documentation changed with it."""

from __future__ import annotations

import contextlib
import socket

from tests.support.server import Server, ServerFactory

ROUTE = b"GET /api/v1/health HTTP/1.1\r\nHost: slugline.test\r\nConnection: close\r\n"


def exchange(server: Server, request: bytes) -> bytes:
    """What the server answers before it closes the connection. A server that refuses a request before reading all
    of it may close (reset) the connection while it is still being sent: its answer is read all the same."""
    answer = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(request)
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk
    return answer


def refusal(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def test_requests_the_http_server_refuses_get_a_status_and_no_body(start_server: ServerFactory) -> None:
    server = start_server()
    many_fields = b"".join(b"X-Field-%d: a\r\n" % n for n in range(99))  # 101 with Host and Connection
    refused = {
        "a control byte in a header": (ROUTE + b"X-Note: a\x01b\r\n\r\n", 400),
        "a NUL byte in a header": (ROUTE + b"X-Note: a\x00b\r\n\r\n", 400),
        "a control byte in the path": (b"GET /api/v1/he\x01alth HTTP/1.1\r\nHost: slugline.test\r\n\r\n", 400),
        "two Content-Length headers": (ROUTE + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400),
        "1 MiB of headers": (ROUTE + b"X-Note: " + b"a" * 2**20 + b"\r\n\r\n", 431),
        "more than 100 header fields": (ROUTE + many_fields + b"\r\n", 431),
    }
    for what, (request, expected) in refused.items():
        status, headers, body = refusal(exchange(server, request))
        assert (status, headers.get("content-length"), body) == (expected, "0", b""), what
        assert "content-type" not in headers and headers.get("connection") == "close", what
    # Within the limits the same request reaches the app: 100 fields, a 300 KiB header, a tab and a byte over 0x7F.
    within = [
        ROUTE + b"".join(b"X-Field-%d: a\r\n" % n for n in range(98)) + b"\r\n",
        ROUTE + b"X-Note: " + b"a" * 300 * 1024 + b"\r\n\r\n",
        ROUTE + b"X-Note: a\tb\xe9\r\n\r\n",
    ]
    for request in within:
        status, headers, body = refusal(exchange(server, request))
        assert (status, headers["content-type"]) == (200, "application/json"), request[:80]
