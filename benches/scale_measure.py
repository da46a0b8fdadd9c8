"""Measuring one build with one version of the code (`analytics_scale.py`): real HTTP requests to `slugline serve`.

For every query shape: the first request on a fresh server (a process started for that shape alone, so nothing
it needs is cached yet), then on one server, after one request of each shape that is not counted, `repeats`
rounds over every shape idle, and as many while `scale_load` keeps clicks arriving through redirects. Times are
the client's, request sent to body read. Any answer but 200 is kept as its status, never raised.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from httpbench import SECRET, free_port, stop, wait_until_up

FLUSHED_SECONDS = 2.5  # the load's first clicks are written (a flush at least every second) before timing starts


@dataclass(frozen=True)
class Shape:
    name: str
    path: str
    old: bool  # answered by the code before per-link analytics, intervals, from/to and the new filters


def shapes(manifest: dict[str, Any], today: date) -> list[Shape]:
    hot, cold = manifest["links"][0][0], manifest["links"][-1][0]
    since = today - timedelta(days=200)
    return [
        Shape("days=30", "/api/v1/analytics?days=30", True),
        Shape("days=365", "/api/v1/analytics?days=365", True),
        Shape("days=7 hourly", "/api/v1/analytics?days=7&interval=hour", False),
        Shape("days=365 weekly", "/api/v1/analytics?days=365&interval=week", False),
        Shape("days=365 monthly", "/api/v1/analytics?days=365&interval=month", False),
        Shape("90 days from/to", f"/api/v1/analytics?from={since}&to={since + timedelta(days=89)}", False),
        Shape("365 device=mobile", "/api/v1/analytics?days=365&device=mobile", False),
        Shape("365 source=google.com", "/api/v1/analytics?days=365&source=google.com", True),
        Shape("365 browser+os", "/api/v1/analytics?days=365&browser=chrome&os=android", False),
        Shape("365 mobile+newsletter", "/api/v1/analytics?days=365&device=mobile&source=newsletter", False),
        Shape("hot link 365", f"/api/v1/links/{hot}/analytics?days=365", False),
        Shape("cold link 365", f"/api/v1/links/{cold}/analytics?days=365", False),
        Shape("hot link 365 google", f"/api/v1/links/{hot}/analytics?days=365&source=google.com", False),
    ]


Sample = tuple[int | str, float]  # status (or the error's name), milliseconds


def timed(client: httpx.Client, path: str) -> Sample:
    started = time.perf_counter()
    try:
        response = client.get(path)
    except httpx.HTTPError as exc:
        return type(exc).__name__, (time.perf_counter() - started) * 1000
    ms = (time.perf_counter() - started) * 1000
    if response.status_code != 200 and (path, response.status_code) not in _told:
        _told.add((path, response.status_code))
        print(f"    {path}: {response.status_code} {response.text[:160]}", flush=True)
    return response.status_code, ms


_told: set[tuple[str, int]] = set()  # each refusal's body is shown once


@contextlib.contextmanager
def serving(python: str, manifest: dict[str, Any], log: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`slugline serve`, one worker, on the build's database, believing X-Forwarded-For from loopback."""
    port = free_port()
    env = {
        **os.environ,
        "SLUGLINE_DATABASE_URL": manifest["database_url"],
        "SLUGLINE_SECRET_KEY": SECRET,
        "SLUGLINE_TRUSTED_PROXIES": "127.0.0.1",
        "SLUGLINE_RATE_LIMIT_PRO": str(10**9),
    }
    proc = subprocess.Popen(
        [python, "-m", "slugline.cli", "serve", "--port", str(port), "--workers", "1"],
        env=env,
        cwd=log.parent,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_until_up(f"{base}/api/v1/health", proc)
        except RuntimeError as exc:
            tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-15:])
            raise RuntimeError(f"{exc}; the end of {log}:\n{tail}") from None
        yield proc, base
    finally:
        stop(proc)


def client(base: str, manifest: dict[str, Any], timeout: float) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {manifest['key']}"}, timeout=timeout)


def first_views(
    python: str, manifest: dict[str, Any], asked: list[Shape], log: Path, opts: dict[str, Any]
) -> dict[str, Sample]:
    """Each shape's first request, each on a server started for it."""
    firsts: dict[str, Sample] = {}
    for shape in asked:
        with serving(python, manifest, log) as (_, base), client(base, manifest, opts["timeout"]) as http:
            if opts["drop_caches"]:
                drop_caches()
            firsts[shape.name] = timed(http, shape.path)
        found = figure([firsts[shape.name]], "first")
        print(f"  first {shape.name:24s} {f'{found:.1f} ms' if isinstance(found, float) else found}", flush=True)
    return firsts


def rounds(http: httpx.Client, asked: list[Shape], repeats: int, budget: float | None) -> dict[str, list[Sample]]:
    """`repeats` rounds, each shape once a round (a dashboard going from view to view); fewer if `budget` seconds
    run out first (at least one)."""
    samples: dict[str, list[Sample]] = {shape.name: [] for shape in asked}
    ends = time.monotonic() + (budget if budget is not None else float("inf"))
    for done in range(repeats):
        if done and time.monotonic() > ends:
            print(f"  the budget of {budget:.0f} s ran out after {done} rounds", flush=True)
            break
        for shape in asked:
            samples[shape.name].append(timed(http, shape.path))
    return samples


def measure(python: str, manifest: dict[str, Any], data: Path, opts: dict[str, Any]) -> dict[str, Any]:
    """First views, then idle and loaded rounds on one server; worker memory before and after."""
    today = datetime.now(UTC).date()
    asked = [s for s in shapes(manifest, today) if s.old or not opts["old"]]
    log = data / "server.log"
    firsts = first_views(python, manifest, asked, log, opts)
    with serving(python, manifest, log) as (server, base), client(base, manifest, opts["timeout"]) as http:
        rounds(http, asked, 1, None)  # warm-up: the first views were measured above
        rss_before = worker_memory(server.pid)
        idle = rounds(http, asked, opts["repeats"], opts["budget"])
        print("  idle rounds done; now under load", flush=True)
        clicks_before = stored_clicks(manifest["database_url"])
        driver = start_driver(data, base, opts)
        try:
            time.sleep(FLUSHED_SECONDS)
            loaded = rounds(http, asked, opts["repeats"], opts["budget"])
        finally:
            load = stop_driver(driver)
        rss_after = worker_memory(server.pid)
    clicks_after = stored_clicks(manifest["database_url"])  # the server flushed its buffer on SIGTERM
    load["stored"] = None if clicks_before is None or clicks_after is None else clicks_after - clicks_before
    return {
        "shapes": {
            s.name: {"path": s.path, "first": [firsts[s.name]], "idle": idle[s.name], "load": loaded[s.name]}
            for s in asked
        },
        "load": load,
        "rss_mib": {"before": rss_before, "after": rss_after},
    }


def start_driver(data: Path, base: str, opts: dict[str, Any]) -> subprocess.Popen[str]:
    script = Path(__file__).with_name("analytics_scale.py")
    args = ["drive", "--data", str(data), "--base", base, "--rate", str(opts["rate"])]
    args += ["--connections", str(opts["connections"])]
    return subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, text=True)


def stop_driver(driver: subprocess.Popen[str]) -> dict[str, Any]:
    driver.send_signal(signal.SIGTERM)
    out, _ = driver.communicate(timeout=60)
    if not out.strip():
        raise RuntimeError(f"the load driver stopped with {driver.returncode} and printed no result (see above)")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["achieved"] = result["answers"].get("302", 0) / result["seconds"]
    return result


def worker_memory(server_pid: int) -> dict[str, dict[str, float | None]]:
    """Resident MiB of each worker process (the server's children), and the peak so far where the system says
    (Linux's /proc; elsewhere psutil, if installed, gives the current figure only)."""
    found = subprocess.run(["pgrep", "-P", str(server_pid)], capture_output=True, text=True).stdout.split()
    memory: dict[str, dict[str, float | None]] = {}
    for pid in found:
        status = Path(f"/proc/{pid}/status")
        if status.exists():
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            memory[pid] = {
                key: int(fields[name].split()[0]) / 1024 for key, name in (("rss", "VmRSS"), ("peak", "VmHWM"))
            }
        else:
            import psutil

            memory[pid] = {"rss": psutil.Process(int(pid)).memory_info().rss / 2**20, "peak": None}
    return memory


def stored_clicks(database_url: str) -> int | None:
    """The clicks in the log (not the highest id: PostgreSQL's sequence leaves gaps); None if it cannot be read."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM clicks")).scalar() or 0)
    except SQLAlchemyError as exc:
        print(f"  counting the clicks failed: {str(exc).splitlines()[0]}", flush=True)
        return None
    finally:
        engine.dispose()


def drop_caches() -> None:
    """The kernel's page cache emptied (root only), so the first view reads the database from disk."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def percentile(values: list[float], which: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(which) - 1]


def figure(samples: list[Sample], which: str) -> float | str:
    """A column's milliseconds (`first`, `p50` or `p99`), or the status answered instead of 200."""
    failed = Counter(status for status, _ in samples if status != 200)
    if failed:
        status, _ = failed.most_common(1)[0]
        return f"HTTP {status}" if isinstance(status, int) else str(status)
    ms = [ms for _, ms in samples]
    return ms[0] if which == "first" else statistics.median(ms) if which == "p50" else percentile(ms, 99)


def cell(samples: list[Sample], which: str) -> str:
    found = figure(samples, which)
    return f"{found:.1f}" if isinstance(found, float) else found
