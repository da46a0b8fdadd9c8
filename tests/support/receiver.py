"""A webhook receiver for the tests: a real HTTP server on a thread that verifies every delivery with the
`standardwebhooks` package (a receiver nobody here wrote) and keeps what came, by message id."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook


class Receiver:
    """`status`: what it answers (a callable of the number of deliveries so far may change it); `secret`: set once
    the endpoint is made. `events` maps each verified message id to its payload; `arrivals` counts every delivery."""

    def __init__(self) -> None:
        self.secret: str | None = None
        self.events: dict[str, dict[str, Any]] = {}
        self.arrivals: list[tuple[str, float]] = []
        self.refused: list[str] = []
        self.answer: Callable[[int], int] = lambda _: 200
        self.hold = 0.0  # > 0: each delivery is held this long, then answered without being recorded
        self.held: list[str] = []
        self._lock = threading.Lock()
        self._port = 0
        self._start()

    def _start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if receiver.hold:
                    receiver.held.append(self.headers.get("webhook-id", ""))
                    time.sleep(receiver.hold)
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = receiver.take(body, {k: v for k, v in self.headers.items()})
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self.server.daemon_threads = True
        self._port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self._port}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def take(self, body: bytes, headers: dict[str, str]) -> int:
        with self._lock:
            status = self.answer(len(self.arrivals))
            msg_id = headers.get("webhook-id", "")
            self.arrivals.append((msg_id, time.time()))
            if status >= 300:
                return status
            try:
                assert self.secret is not None
                payload = Webhook(self.secret).verify(body, headers)
            except Exception as exc:
                self.refused.append(f"{msg_id}: {exc}")
                return 400
            self.events.setdefault(msg_id, payload)
            return status

    def wait_for(self, check: Callable[[dict[str, dict[str, Any]]], bool], seconds: float = 15) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with self._lock:
                if check(self.events):
                    return
            time.sleep(0.05)
        raise AssertionError(f"the receiver did not get what was expected: {list(self.events.values())}")

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events.values() if e["type"] == kind]

    def down(self) -> None:
        """Stops answering: connections are refused until `up`."""
        self.server.shutdown()
        self.server.server_close()

    def up(self) -> None:
        """Answers again, on the same port."""
        self._start()
        self._thread.start()

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.down()
