"""A `link.clicked` receiver for `http_redirect.py --webhooks`: counts the clicks delivered and how long each took
from its redirect to its delivery (the delivery lag), on a thread of the bench's own process."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import orjson

from httpbench import pro_account


class ClickReceiver:
    def __init__(self) -> None:
        self.lags: list[float] = []
        self.deliveries = 0
        self.ids: set[str] = set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                now = time.time()
                receiver.take(self.headers.get("webhook-id", ""), orjson.loads(body), now)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self, msg_id: str, payload: dict[str, Any], now: float) -> None:
        self.deliveries += 1
        if msg_id in self.ids or payload.get("type") != "link.clicked":
            return
        self.ids.add(msg_id)
        for click in payload["data"]["clicks"]:
            self.lags.append(now - datetime.fromisoformat(click["clicked_at"]).timestamp())

    def report(self, stored: int) -> str:
        lags = sorted(self.lags)
        if not lags:
            return f"no clicks delivered ({stored} stored)"
        p50, p99 = lags[len(lags) // 2], lags[min(len(lags) - 1, int(len(lags) * 0.99))]
        return (
            f"{len(lags)} of {stored} clicks delivered in {self.deliveries} deliveries; delivery lag p50 {p50:.2f} s, "
            f"p99 {p99:.2f} s"
        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def subscribe(base: str, env: dict[str, str], links: int, fields: dict[str, object], url: str) -> None:
    """The bench links, on an account whose endpoint wants `link.clicked` (made first, so every click counts)."""
    auth = pro_account(base, env)
    with httpx.Client(base_url=base, headers=auth, timeout=30) as client:
        client.post("/api/v1/webhooks", json={"url": url, "events": ["link.clicked"]}).raise_for_status()
        for i in range(links):
            body = {"destination_url": f"https://example.org/{i}", "slug": f"bench-{i}", **fields}
            client.post("/api/v1/links", json=body).raise_for_status()
