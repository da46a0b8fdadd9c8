"""`slugline links import` speed: links/s and peak resident memory for a file of N links, into SQLite and PostgreSQL.

    .venv/bin/python benches/import_speed.py --links 1000000 \\
        [--database-url postgresql://postgres@127.0.0.1:5432/test] [--reference-links 100000]

Writes a CSV file in the links file's format (slug, destination, title, two hashtags, clicks, created_at), then
imports it into a fresh account of a fresh database (an SQLite file, and a schema of its own on the PostgreSQL URL),
each in a process of its own so its peak resident set (`ru_maxrss`) is the import's (beside the resident set just
before it starts: the difference is what the import holds). Prints one JSON line per run, with the process's CPU
time (the SQLite work is in it; PostgreSQL's server is not) and the load average, since a shared machine's wall
clock says more about its other tenants than about the import. On PostgreSQL it also gives the CPU time of the
server processes of the import's connections (read from /proc: the server must run on this machine) and links per
CPU second of both.

`--reference-links N` also runs the importer as it was before batched writes (one statement per link, from git
commit `REFERENCE`, loaded beside the current code) on the first N links of the same file, for the old figure in the
same run. The search index and the caches learn of the links as they do in a server; the link count and the
account's links version are checked after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from httpbench import own_schema

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = "ba108b2"  # the last commit whose importer wrote one statement per link

RUN = """
import importlib.util, json, os, resource, sys, time
from sqlalchemy import func, select
from slugline.accounts import service as accounts
from slugline.common.models import Account, Link
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.storage.migrate import upgrade

path, url, limit, module_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if module_path:  # the reference: the old importer, beside the current code
    spec = importlib.util.spec_from_file_location("slugline.links.old_importer", module_path)
    importer = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = importer
    spec.loader.exec_module(importer)
else:
    from slugline.links import importer
rt = Runtime.create(Settings(database_url=url, secret_key="bench-" * 8))
backends = []  # PostgreSQL: the server processes of this engine's connections (the server runs on this machine)
if url.startswith("postgresql"):
    from sqlalchemy import event
    event.listen(rt.db.engine, "connect", lambda conn, _: backends.append(conn.info.backend_pid))

def server_cpu():
    # CPU seconds the server processes of our connections have used (the COPY and its triggers run there)
    ticks = {}
    for pid in backends:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            ticks[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:  # a closed connection's: not counted
            pass
    return ticks

upgrade(rt.db.engine)
accounts.register(rt, {"username": "bench", "password": "bench-password-1"})
caller = accounts.operator(rt, "bench")

def lines():
    with open(path, encoding="utf-8", newline="") as file:
        for n, line in enumerate(file):
            if n > limit:
                return
            yield line

with open("/proc/self/statm") as statm:
    before = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
started, cpu, server = time.perf_counter(), time.process_time(), server_cpu()
if os.environ.get("BENCH_PROFILE"):
    import cProfile
    cProfile.run('report = importer.import_links(rt, caller, lines(), "csv")', os.environ["BENCH_PROFILE"])
else:
    report = importer.import_links(rt, caller, lines(), "csv")
spent, cpu = time.perf_counter() - started, time.process_time() - cpu
server = sum(seconds - server.get(pid, 0.0) for pid, seconds in server_cpu().items())
with rt.db.session() as session:
    count = session.scalar(select(func.count()).select_from(Link))
    version = session.scalar(select(Account.links_version).where(Account.id == caller.account_id))
assert count == limit == report["created"] == version, (count, limit, report, version)
print(json.dumps({
    "links": count,
    "seconds": round(spent, 2),
    "links_per_s": round(count / spent),
    "python_cpu_s": round(cpu, 2),
    "links_per_python_cpu_s": round(count / cpu),
    **({"server_cpu_s": round(server, 2), "links_per_cpu_s": round(count / (cpu + server))} if backends else {}),
    "rss_before_import_mb": round(before / 2**20, 1),
    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
}))
"""


def write_file(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("slug,destination_url,title,hashtags,clicks,created_at\n")
        for n in range(count):
            out.write(
                f"imp{n:07d},https://example.com/articles/{n}?utm_source=import,Article number {n},"
                f"news tag{n % 100},{n % 1000},2025-0{1 + n % 9}-1{n % 10}T12:34:56.123456Z\n"
            )


def run(store: str, url: str, path: Path, count: int, reference: Path | None) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    args = [sys.executable, "-c", RUN, str(path), url, str(count), str(reference or "")]
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{store} failed:\n{out.stderr[-4000:]}")
    figures = {
        "store": store,
        "importer": f"reference {REFERENCE}" if reference else "batched",
        **json.loads(out.stdout),
    }
    print(json.dumps({**figures, "loadavg": os.getloadavg()}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", type=int, default=1_000_000)
    parser.add_argument("--database-url", help="a PostgreSQL URL (a schema of its own is made there and dropped)")
    parser.add_argument("--reference-links", type=int, default=0, help="also run the old importer on N links")
    parser.add_argument("--only", choices=("sqlite", "postgresql"), help="one store only")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        path = folder / "links.csv"
        write_file(path, max(options.links, options.reference_links))
        reference = None
        if options.reference_links:
            reference = folder / "old_importer.py"
            old = subprocess.run(
                ["git", "show", f"{REFERENCE}:python/slugline/links/importer.py"], cwd=ROOT, capture_output=True
            )
            reference.write_bytes(old.stdout)
        stores = [("sqlite", None)] if options.only != "postgresql" else []
        if options.database_url and options.only != "sqlite":
            stores.append(("postgresql", options.database_url))
        for store, pg in stores:
            runs = [(options.links, None)] + ([(options.reference_links, reference)] if reference else [])
            for n, (count, module) in enumerate(runs):
                with own_schema(pg) as url:
                    run(store, url or f"sqlite:///{folder}/{store}{n}.db", path, count, module)


if __name__ == "__main__":
    main()
