from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.server import Server

ServerFactory = Callable[..., Server]


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[ServerFactory]:
    """Start real servers; each is stopped (SIGTERM) at the end of the test, with its log shown on failure."""
    started: list[Server] = []

    def start(database_url: str | None = None, workers: int = 1, **env: str) -> Server:
        url = database_url or f"sqlite:///{tmp_path}/e2e.db"
        server = Server(url, workers=workers, env_extra=env).start(tmp_path)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
