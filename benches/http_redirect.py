"""HTTP load: `slugline serve` redirects (click recording on) against nginx `return 302`, measured in one run.

    python benches/http_redirect.py [--duration 10] [--rounds 3] [--workers 1] [--database-url postgresql://…]

Installs Debian's `nginx-light` and `wrk` with apt when missing. Both servers listen on free loopback ports,
nginx with its own temporary config, pid and log files. wrk runs alternate between the two; the medians of
req/s and p99 latency are printed with the ratio. Afterwards the clicks stored are compared with the 302s wrk
received, since every slugline redirect records one. A PostgreSQL database gets a schema of the run's own,
dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

NGINX_CONF = """daemon off; worker_processes {workers}; pid {tmp}/nginx.pid; error_log {tmp}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off; client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi; uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  server {{ listen 127.0.0.1:{port}; location / {{ return 302 https://example.org/bench; }} }}
}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ensure_tools() -> None:
    if shutil.which("wrk") and (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()):
        return
    print("installing nginx-light and wrk with apt-get …", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light", "wrk"], check=True)


def wait_until_up(url: str, proc: subprocess.Popen[bytes], deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {deadline}s")


def start_nginx(tmp: Path, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(workers=workers, tmp=tmp, port=port))
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen(
        [nginx, "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/bench"
    wait_until_up(url, proc)
    return proc, url


def start_slugline(
    tmp: Path, workers: int, database_url: str | None
) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    port = free_port()
    env = {
        **os.environ,
        "SLUGLINE_DATABASE_URL": database_url or f"sqlite:///{tmp}/bench.db",
        "SLUGLINE_SECRET_KEY": "bench-" + "s" * 40,
    }
    cli = [sys.executable, "-m", "slugline.cli"]
    if database_url:
        subprocess.run([*cli, "migrate"], env=env, check=True, capture_output=True)
    log = (tmp / "slugline.log").open("ab")
    proc = subprocess.Popen(
        [*cli, "serve", "--port", str(port), "--workers", str(workers)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until_up(f"{base}/api/v1/health", proc)
    name = f"bench{int(time.time())}"
    token = httpx.post(f"{base}/api/v1/auth/register", json={"username": name, "password": "bench-password"}).json()
    subprocess.run([*cli, "accounts", "set-plan", name, "pro"], env=env, check=True, capture_output=True)
    session = {"Authorization": f"Bearer {token['token']}"}
    key = httpx.post(f"{base}/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]
    auth = {"Authorization": f"Bearer {key}"}
    link = httpx.post(f"{base}/api/v1/links", json={"destination_url": "https://example.org/bench"}, headers=auth)
    link.raise_for_status()
    return proc, f"{base}/{link.json()['slug']}", {**auth, "link_id": link.json()["id"], "base": base}


@contextmanager
def own_schema(database_url: str | None) -> Iterator[str | None]:
    """A PostgreSQL URL pointing at a fresh schema of its own, dropped afterwards; SQLite (None) as is."""
    if not database_url:
        yield None
        return
    from sqlalchemy import create_engine, make_url, text

    from slugline.db import normalize_url

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(normalize_url(database_url))
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield make_url(database_url).update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _find(pattern: str, text: str) -> re.Match[str]:
    found = re.search(pattern, text)
    if found is None:
        raise RuntimeError(f"wrk printed no match for {pattern!r}:\n{text}")
    return found


def wrk(url: str, duration: float, connections: int, threads: int) -> tuple[float, float, int]:
    """(requests per second, p99 latency in ms, responses) of one wrk run."""
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(duration))}s", "--latency", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(_find(r"Requests/sec:\s+([\d.]+)", out)[1])
    value, unit = _find(r"99%\s+([\d.]+)(us|ms|s)", out).groups()
    p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    total = int(_find(r"(\d+) requests in", out)[1])
    if "Non-2xx or 3xx" in out:
        raise RuntimeError(f"unexpected responses from {url}:\n{out}")
    return rps, p99, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per server, alternating (default 3)")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="slugline workers and nginx worker processes")
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    args = parser.parse_args()
    ensure_tools()
    results: dict[str, list[tuple[float, float, int]]] = {"nginx": [], "slugline": []}
    with tempfile.TemporaryDirectory(prefix="slugline-bench-") as name, own_schema(args.database_url) as db_url:
        tmp = Path(name)
        nginx, nginx_url = start_nginx(tmp, args.workers)
        slug, slug_url, info = start_slugline(tmp, args.workers, db_url)
        try:
            for url in (nginx_url, slug_url):
                wrk(url, 2, args.connections, args.threads)  # warm-up, not counted
            for round_no in range(args.rounds):
                for label, url in (("nginx", nginx_url), ("slugline", slug_url)):
                    results[label].append(wrk(url, args.duration, args.connections, args.threads))
                    rps, p99, _ = results[label][-1]
                    print(f"round {round_no + 1} {label:8s} {rps:10.0f} req/s  p99 {p99:7.2f} ms", flush=True)
        finally:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(timeout=30)
        slug.send_signal(signal.SIGTERM)  # flushes the buffered clicks
        slug.wait(timeout=60)
        report(results, args, tmp, info, db_url)
    return 0


def report(
    results: dict[str, list[tuple[float, float, int]]],
    args: argparse.Namespace,
    tmp: Path,
    info: dict[str, str],
    db_url: str | None,
) -> None:
    med = {
        label: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        for label, runs in results.items()
    }
    print(
        f"\nwrk -t{args.threads} -c{args.connections} -d{args.duration:g}s, {args.rounds} rounds, "
        f"{args.workers} worker(s), {args.database_url or 'SQLite'}; medians:"
    )
    for label, (rps, p99) in med.items():
        print(f"  {label:8s} {rps:10.0f} req/s   p99 {p99:7.2f} ms")
    print(f"  ratio    {med['slugline'][0] / med['nginx'][0]:.3f}x nginx")
    stored = count_clicks(db_url or f"sqlite:///{tmp}/bench.db", info["link_id"])
    # wrk's count misses requests still in flight when a run ends; the server answered (and recorded) those too.
    sent = sum(r[2] for r in results["slugline"])
    print(f"  clicks stored: {stored} (wrk counted {sent} measured responses, plus the warm-up)")


def count_clicks(database_url: str, link_id: str) -> int:
    from sqlalchemy import create_engine, text

    from slugline.db import normalize_url

    engine = create_engine(normalize_url(database_url))
    with engine.connect() as conn:
        count = conn.execute(text("SELECT count(*) FROM clicks WHERE link_id = :id"), {"id": link_id}).scalar()
    engine.dispose()
    return int(count or 0)


if __name__ == "__main__":
    sys.exit(main())
