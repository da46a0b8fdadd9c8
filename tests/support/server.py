"""Starts `slugline serve` as a real process (Granian) on a free port and waits for it to answer; and what the e2e
tests do with one: accounts with keys, API clients, waiting for clicks to land."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from slugline.accounts.identitycache import TRUST_SECONDS

SECRET = "e2e-secret-" + "k" * 40
PASSWORD = "e2e-password"  # of every account make_account registers
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    database_url: str
    workers: int = 1
    env_extra: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    python: str = sys.executable  # whose `slugline` runs: another venv's, to test a wheel

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "SLUGLINE_DATABASE_URL": self.database_url,
            "SLUGLINE_SECRET_KEY": SECRET,
            "SLUGLINE_FETCH_ALLOW_PRIVATE": "true",
            **self.env_extra,
        }

    def cli(self, *args: str, stdin_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.python, "-m", "slugline.cli", *args],
            env={**self.env, **(stdin_env or {})},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )

    def start(self, log_dir: Path, deadline: float = 60.0) -> Server:
        if not self.database_url.startswith("sqlite"):
            self.cli("migrate")
        self.log_path = log_dir / f"server-{self.port}.log"
        with self.log_path.open("ab") as log:  # the child keeps its own descriptor; ours must not leak
            self.proc = subprocess.Popen(
                [
                    self.python,
                    "-m",
                    "slugline.cli",
                    "serve",
                    "--port",
                    str(self.port),
                    "--workers",
                    str(self.workers),
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.log()}")
            try:
                if httpx.get(f"{self.url}/api/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"server did not answer within {deadline}s: {self.log()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path else ""


@dataclass
class Keys:
    username: str
    full: str
    public: str
    session: str


def set_plan(server: Server, username: str, plan: str) -> None:
    """The admin CLI's plan change, then the wait after which every worker is promised to see it: an identity
    resolved just before the change is trusted for `TRUST_SECONDS` more (the CLI itself can take less)."""
    server.cli("accounts", "set-plan", username, plan)
    time.sleep(TRUST_SECONDS)


def make_account(server: Server, username: str, plan: str = "developer") -> Keys:
    """Register over HTTP, set the plan with the admin CLI, and generate both keys over HTTP."""
    res = httpx.post(f"{server.url}/api/v1/auth/register", json={"username": username, "password": PASSWORD})
    res.raise_for_status()
    token = res.json()["token"]
    set_plan(server, username, plan)
    auth = {"Authorization": f"Bearer {token}"}
    full = httpx.post(f"{server.url}/api/v1/api-key", json={"scope": "full"}, headers=auth).json()["key"]
    public = httpx.post(f"{server.url}/api/v1/api-key", json={"scope": "public"}, headers=auth).json()["key"]
    return Keys(username, full, public, token)


# The `start_server` fixture (tests/conftest.py): start(database_url=None, workers=1, **env) -> a running Server.
ServerFactory = Callable[..., Server]


def wait_for(check: Callable[[], T | None], deadline: float = 15.0, what: str | Callable[[], str] = "condition") -> T:
    """Poll `check` until it returns something truthy; fail after `deadline` seconds, naming `what` (a callable is
    asked only then, so that it can tell what things look like at the time)."""
    end = time.monotonic() + deadline
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < end, f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.05)


def api(server: Server, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.url}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30)


def clicks_of(http: httpx.Client, link_id: str, expected: int) -> list[dict[str, Any]]:
    """The link's clicks, once at least `expected` of them are stored (clicks are buffered for about a second)."""

    def page() -> list[dict[str, Any]] | None:
        body = http.get(f"/links/{link_id}/clicks", params={"per": 100}).json()
        data: list[dict[str, Any]] = body["data"]
        return data if body["pagination"]["total"] >= expected else None

    return wait_for(page, what=f"{expected} clicks of {link_id}")
