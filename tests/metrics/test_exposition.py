"""GET /metrics: off unless configured, behind a Bearer token compared in constant time, and in Prometheus's text
format with what the app answered: requests by route template and status, redirects by outcome, caches."""

from __future__ import annotations

import hmac
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from slugline.metrics import directory, exposition
from slugline.settings import Settings
from tests.support.helpers import SQLITE_ONLY, ClientFactory

TOKEN = "metrics-token-" + "m" * 24
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    res = client.get("/metrics", headers=AUTH)
    assert res.status_code == 200, res.text
    assert res.headers["content-type"].startswith("text/plain; version=")
    found = {}
    for family in text_string_to_metric_families(res.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


@SQLITE_ONLY
def test_metrics_are_off_unless_configured(make_client: ClientFactory) -> None:
    client, _ = make_client()
    res = client.get("/metrics", headers=AUTH)
    assert res.status_code == 404
    assert res.json() == {"error": "not found"}


@SQLITE_ONLY
def test_a_separate_address_leaves_no_route_on_the_service(make_client: ClientFactory) -> None:
    client, _ = make_client(metrics_bind="127.0.0.1:9464")
    assert client.get("/metrics").status_code == 404


@SQLITE_ONLY
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", TOKEN, "Bearer"],
)
def test_a_scrape_needs_the_token(make_client: ClientFactory, authorization: str | None) -> None:
    client, _ = make_client(metrics_token=TOKEN)
    headers = {} if authorization is None else {"Authorization": authorization}
    res = client.get("/metrics", headers=headers)
    assert res.status_code == 401
    assert list(res.json()) == ["error"]
    assert res.headers["www-authenticate"] == "Bearer"
    assert TOKEN not in res.text


@SQLITE_ONLY
def test_the_token_is_compared_in_constant_time(make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return bool(real(a, b))

    monkeypatch.setattr(hmac, "compare_digest", spy)
    client, _ = make_client(metrics_token=TOKEN)
    assert client.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert client.get("/metrics", headers=AUTH).status_code == 200
    assert compared == [(b"nope", TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]


@SQLITE_ONLY
def test_a_scrape_shows_requests_redirects_and_caches(make_client: ClientFactory) -> None:
    client, rt = make_client(metrics_token=TOKEN)
    from slugline.accounts import service as accounts

    made = accounts.register(rt, {"username": "metrics-user", "password": "correct horse"}, plan="developer")
    session = {"Authorization": f"Bearer {made['token']}"}
    key = client.post("/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]
    auth = {"Authorization": f"Bearer {key}"}
    assert client.post("/api/v1/links", json={"destination_url": "https://e.x/", "slug": "m1"}, headers=auth).is_success
    for _ in range(3):
        assert client.get("/m1", follow_redirects=False).status_code == 302
    assert client.get("/no-such-link").status_code == 404
    assert client.get("/api/v1/links/lnk_00000000000", headers=auth).status_code == 404
    for _ in range(2):  # the second answered from the closed days the first kept
        assert client.get("/api/v1/analytics?days=30", headers=auth).status_code == 200

    found = samples(client)
    redirects = {k[1][0][1]: v for k, v in found.items() if k[0] == "slugline_redirects_total"}
    assert redirects["hit"] + redirects["miss"] == 3
    assert redirects["not_found"] == 1
    count = "slugline_http_request_duration_seconds_count"
    created = (("method", "POST"), ("route", "/api/v1/links"), ("status", "201"))
    assert found[(count, created)] == 1
    missing = (("method", "GET"), ("route", "/api/v1/links/{link_id}"), ("status", "404"))
    assert found[(count, missing)] == 1
    assert not any(dict(labels).get("route") == "/{slug}" for _, labels in found)  # redirects are their own family
    cache = (("cache", "redirect"),)
    assert found[("slugline_cache_hits_total", cache)] + found[("slugline_cache_misses_total", cache)] == 4
    assert found[("slugline_cache_bytes", cache)] > 0
    assert found[("slugline_cache_hits_total", (("cache", "token"),))] >= 1  # the key, resolved again
    assert found[("slugline_cache_bytes", (("cache", "token"),))] > 0
    analytics = (("cache", "analytics"),)
    assert found[("slugline_cache_hits_total", analytics)] >= 1 and found[("slugline_cache_bytes", analytics)] > 0
    assert ("slugline_db_pool_connections_in_use", ()) in found


def test_metrics_bind_is_host_and_port() -> None:
    assert Settings(metrics_bind="127.0.0.1:9464").metrics_address() == ("127.0.0.1", 9464)
    assert Settings(metrics_bind="[::1]:9464").metrics_address() == ("::1", 9464)
    assert Settings().metrics_address() is None
    for wrong in ("9464", "localhost", "host:port", ":9464", "h:70000"):
        with pytest.raises(RuntimeError, match="SLUGLINE_METRICS_BIND"):
            Settings(metrics_bind=wrong).metrics_address()


def test_serve_gives_the_workers_a_fresh_private_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(directory.MULTIPROC_ENV, raising=False)
    with directory.private_dir() as path:
        assert os.environ[directory.MULTIPROC_ENV] == path
        assert os.listdir(path) == []
        assert os.stat(path).st_mode & 0o777 == 0o700
        (Path(path) / "counter_1.db").write_bytes(b"")
    assert not Path(path).exists()
    assert directory.MULTIPROC_ENV not in os.environ


def test_a_dead_workers_live_gauges_leave_the_sums(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    dead, alive = int(gone.stdout), os.getpid()
    names = [f"gauge_livesum_{dead}.db", f"gauge_livesum_{alive}.db", f"counter_{dead}.db", f"histogram_{dead}.db"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    exposition.reap(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == sorted(names[1:])  # a dead worker's counts stay: totals never go down


def test_serve_sets_the_directory_before_the_client_is_imported() -> None:
    """prometheus-client picks files or process memory at import: were `slugline serve` to import it before setting
    the directory, its workers would keep their values to themselves and a scrape would show nothing."""
    code = (
        "import sys; from slugline import cli; from slugline.metrics import directory; "
        "assert 'prometheus_client' not in sys.modules, 'imported too early'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_taken_metrics_address_is_a_configuration_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"SLUGLINE_METRICS_BIND 127.0.0.1:{port}"):
            exposition.serve_bind("127.0.0.1", port, str(tmp_path))
