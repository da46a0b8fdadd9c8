"""What the HTTP benchmarks share: tools, servers on free loopback ports, wrk runs and their medians.

Every server runs on this machine only (127.0.0.1), with temporary files of its own; wrk runs against the servers
of one benchmark alternate, so a busy moment of the machine hits all of them alike.
"""

from __future__ import annotations

import contextlib
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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

BENCHES = Path(__file__).resolve().parent
SECRET = "bench-" + "s" * 40
# Every redirect records a click only when it looks like a person's visit: a browser and where it came from.
BROWSER = {
    "User-Agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36",
    "Referer": "https://news.example.com/item?id=1",
}
NGINX_CONF = """daemon off; worker_processes {workers}; pid {tmp}/nginx.pid; error_log {tmp}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off; client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi; uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  server {{ listen 127.0.0.1:{port}; location / {{ return 302 https://example.org/bench; }} }}
}}
"""


@dataclass(frozen=True)
class Run:
    rps: float
    p99_ms: float
    responses: int


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


def start_granian(
    target: str, workers: int, tmp: Path, env: Mapping[str, str] = {}
) -> tuple[subprocess.Popen[bytes], str]:
    """A bare ASGI app under the same Granian, interface and event loop as `slugline serve`."""
    port = free_port()
    args = [sys.executable, "-m", "granian", "--interface", "asgi", "--loop", "uvloop", "--workers", str(workers)]
    proc = subprocess.Popen(
        [*args, "--host", "127.0.0.1", "--port", str(port), target],
        env={**os.environ, "PYTHONPATH": str(BENCHES), **env},
        stdout=(tmp / f"granian-{port}.log").open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until_up(f"{base}/", proc)
    return proc, base


def slugline_env(tmp: Path, database_url: str | None, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "SLUGLINE_DATABASE_URL": database_url or f"sqlite:///{tmp}/bench.db",
        "SLUGLINE_SECRET_KEY": SECRET,
        **extra,
    }


def start_slugline(tmp: Path, workers: int, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cli = [sys.executable, "-m", "slugline.cli"]
    if not env["SLUGLINE_DATABASE_URL"].startswith("sqlite"):
        subprocess.run([*cli, "migrate"], env=env, check=True, capture_output=True)
    proc = subprocess.Popen(
        [*cli, "serve", "--port", str(port), "--workers", str(workers)],
        env=env,
        stdout=(tmp / "slugline.log").open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until_up(f"{base}/api/v1/health", proc)
    return proc, base


def pro_account(base: str, env: dict[str, str]) -> dict[str, str]:
    """A pro account with a full-access key: the Authorization header."""
    name = f"bench{uuid.uuid4().hex[:8]}"
    token = httpx.post(f"{base}/api/v1/auth/register", json={"username": name, "password": "bench-password"}).json()
    cli = [sys.executable, "-m", "slugline.cli", "accounts", "set-plan", name, "pro"]
    subprocess.run(cli, env=env, check=True, capture_output=True)
    session = {"Authorization": f"Bearer {token['token']}"}
    key = httpx.post(f"{base}/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]
    return {"Authorization": f"Bearer {key}"}


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 60) -> None:
    """SIGTERM lets slugline flush its buffered clicks (Granian passes it to the workers); nginx wants SIGQUIT.
    A server still running after `timeout` is killed with its whole process group (each starts a session of its
    own), so no worker outlives the run and the figures already printed stand."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"{proc.args!r} did not stop within {timeout:.0f} s: killed", file=sys.stderr, flush=True)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def own_schema(database_url: str | None) -> Iterator[str | None]:
    """A PostgreSQL URL pointing at a fresh schema of its own, dropped afterwards; SQLite (None) as is."""
    if not database_url:
        yield None
        return
    from sqlalchemy import create_engine, make_url, text

    from slugline.storage.db import normalize_url

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


def lua_request(method: str, headers: Mapping[str, str], body: str | None = None) -> str:
    """A wrk script that sends every request with this method, headers and body."""
    lines = [f'wrk.method = "{method}"']
    lines += [f"wrk.headers[{name!r}] = {value!r}".replace("'", '"') for name, value in headers.items()]
    if body is not None:
        lines.append(f"wrk.body = [==[{body}]==]")
    return "\n".join(lines) + "\n"


def lua_paths(paths: Sequence[str]) -> str:
    """Added to a `lua_request` script: each request takes the next of `paths`, round robin."""
    listed = ", ".join(f'"{path}"' for path in paths)
    return (
        f"paths = {{{listed}}}\nlocal next = 0\n"
        "request = function()\n  next = next % #paths + 1\n  return wrk.format(nil, paths[next])\nend\n"
    )


def wrk(url: str, duration: float, connections: int, threads: int, script: str) -> Run:
    """One wrk run with `script` (see `lua_request`); any answer other than 2xx/3xx fails the benchmark."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(script)
        lua.flush()
        cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(duration))}s", "--latency", "-s", lua.name]
        out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    if "Non-2xx or 3xx" in out:
        raise RuntimeError(f"unexpected responses from {url}:\n{out}")
    value, unit = _find(r"99%\s+([\d.]+)(us|ms|s)", out).groups()
    p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    return Run(float(_find(r"Requests/sec:\s+([\d.]+)", out)[1]), p99, int(_find(r"(\d+) requests in", out)[1]))


def median(runs: Sequence[Run]) -> Run:
    return Run(
        statistics.median(r.rps for r in runs),
        statistics.median(r.p99_ms for r in runs),
        sum(r.responses for r in runs),
    )


def worker_threads_cpu(server: subprocess.Popen[bytes]) -> dict[tuple[int, int], float]:
    """CPU seconds used so far by each thread of the server's worker processes, keyed by (pid, thread id); the
    main thread of a worker (thread id = pid) is the one that serves requests."""
    found = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu: dict[tuple[int, int], float] = {}
    for pid in map(int, found):
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                stat = (task / "stat").read_text()
            except OSError:  # the thread ended meanwhile
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            cpu[(pid, int(task.name))] = (int(fields[11]) + int(fields[12])) / ticks
    return cpu


def cpu_split(before: dict[tuple[int, int], float], after: dict[tuple[int, int], float]) -> tuple[float, float]:
    """CPU seconds between two readings: (serving threads, every other thread)."""
    serving = other = 0.0
    for key, seconds in after.items():
        used = seconds - before.get(key, 0.0)
        if key[0] == key[1]:
            serving += used
        else:
            other += used
    return serving, other


def postgres_cpu() -> float:
    """CPU seconds used so far by every PostgreSQL server process on this machine (its backends, WAL writer,
    checkpointer, autovacuum), for the benches that run against a local server."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or not (proc / "comm").read_text().startswith("postgres"):
                continue
            stat = (proc / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total
