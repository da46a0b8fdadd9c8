"""HTTP load on the REST API and MCP: `slugline serve` against a bare FastAPI route under the same Granian.

    python benches/http_api.py [--duration 5] [--rounds 3] [--workers 1] [--links 10000] [--database-url postgresql://…]
    python benches/http_api.py --postgresql-too postgresql://…   # SQLite, PostgreSQL and the bare app, alternated

The bare app answers every route with the JSON Slugline itself answered (fetched once, then constant), so the ratio
is what Slugline's own work (auth, rate limits, the database, the rules) costs against the framework's ceiling.
Rows alternate wrk runs between the two servers; medians of req/s and p99 are printed with the ratio. Rate limits
are raised out of the way. Writes (POST, PUT) run last, so the reads see a fixed set of links. MCP's `get_me` is
called twice: `mcp_get_me` as a client of the 2025 protocols sends it (the handshake-era transport, which the SDK
runs in a task of its own per request), `mcp_get_me_2026` as the official v2 client sends it after its
`server/discover` probe (the 2026-07-28 per-request envelope, which the SDK answers in the request's own task).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from httpbench import (
    Run,
    ensure_tools,
    lua_request,
    median,
    own_schema,
    postgres_cpu,
    pro_account,
    slugline_env,
    start_granian,
    start_slugline,
    stop,
    worker_threads_cpu,
    wrk,
)

MCP_CALL = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_me", "arguments": {}}}
)
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
# The same call in the 2026-07-28 protocol, the one the official v2 client picks when the server offers it: one
# self-contained request, its version and capabilities in `_meta` and repeated in headers, no handshake.
MODERN = "2026-07-28"
MCP_CALL_2026 = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "get_me",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
)
MCP_HEADERS_2026 = {**MCP_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "get_me"}
Row = tuple[str, str, str, str | None]  # name, method, path, body
# A server: its address, a key's header, the rows to run on it, and its process (None: not a Slugline server).
Served = tuple[str, dict[str, str], list[Row], "subprocess.Popen[bytes] | None"]
WORDS = ["rust", "python", "guide", "book", "kubernetes", "music", "guitar", "news", "recipe", "travel"]


def seed(base: str, auth: dict[str, str], count: int) -> str:
    """`count` links through the API (a few concurrent clients); returns one link's id."""
    made: list[str] = []
    with httpx.Client(base_url=base, headers=auth, timeout=30) as client:
        for i in range(count):
            words = [WORDS[(i * 7 + k) % len(WORDS)] for k in range(3)]
            body = {"destination_url": f"https://example.org/{i}", "title": " ".join(words), "hashtags": words[:2]}
            response = client.post("/api/v1/links", json=body)
            response.raise_for_status()
            made.append(response.json()["id"])
    return made[0]


def rows(link_id: str, auth: dict[str, str]) -> list[Row]:
    """(name, method, path, body) of each row, reads first."""
    update = json.dumps({"title": "bench update"})
    create = json.dumps({"destination_url": "https://example.org/new", "title": "bench"})
    return [
        ("me", "GET", "/api/v1/me", None),
        ("get_link", "GET", f"/api/v1/links/{link_id}", None),
        ("list", "GET", "/api/v1/links?per=20", None),
        ("list_q", "GET", "/api/v1/links?q=rust&per=20", None),
        ("search", "GET", "/api/v1/search?q=rust", None),
        ("mcp_get_me", "POST", "/mcp", MCP_CALL),
        ("mcp_get_me_2026", "POST", "/mcp", MCP_CALL_2026),
        ("update", "PUT", f"/api/v1/links/{link_id}", update),
        ("create", "POST", "/api/v1/links", create),
    ]


def headers_for(name: str, auth: dict[str, str]) -> dict[str, str]:
    if name == "mcp_get_me":
        return {**auth, **MCP_HEADERS}
    if name == "mcp_get_me_2026":
        return {**auth, **MCP_HEADERS_2026}
    return {**auth, "Content-Type": "application/json"} if name in ("update", "create") else dict(auth)


def capture(base: str, auth: dict[str, str], table: list[Row]) -> dict[str, Any]:
    """Slugline's own answer to each row, for the bare app to repeat."""
    bodies: dict[str, Any] = {}
    with httpx.Client(base_url=base, timeout=30) as client:
        for name, method, path, body in table:
            response = client.request(method, path, content=body, headers=headers_for(name, auth))
            response.raise_for_status()
            bodies[name] = [response.status_code, response.json()]
    return bodies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=5, help="seconds per wrk run (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per server and row, alternating (default 3)")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--links", type=int, default=10_000, help="links in the account (default 10,000)")
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    parser.add_argument(
        "--postgresql-too",
        default=None,
        metavar="URL",
        help="also serve from this PostgreSQL database, alternated with the SQLite server and the bare app in the "
        "same rounds, and print PostgreSQL / SQLite",
    )
    parser.add_argument("--only", nargs="*", default=None, help="row names to run (default: all)")
    args = parser.parse_args()
    ensure_tools()
    if args.postgresql_too and args.database_url:
        parser.error("--postgresql-too compares against SQLite: give no --database-url with it")
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="slugline-bench-")))
        servers: dict[str, Served] = {}
        stores = {SLUGLINE: args.database_url, POSTGRESQL: args.postgresql_too}
        for label, url in stores.items():
            if label == SLUGLINE or url:
                servers[label] = stack.enter_context(_slugline(tmp / label, url, args))
        base, auth, table, _ = servers[SLUGLINE]
        (tmp / "bodies.json").write_text(json.dumps(capture(base, auth, table)))
        bare, bare_base = start_granian(
            "bare_apps:api", args.workers, tmp, {"BARE_API_BODIES": str(tmp / "bodies.json")}
        )
        stack.callback(stop, bare)
        servers[BARE] = (bare_base, auth, table, None)
        results, cpu = measure(servers, args)
    report(results, args)
    report_cpu(results, cpu, args)
    return 0


SLUGLINE, POSTGRESQL, BARE = "slugline", "slugline PostgreSQL", "bare FastAPI"


@contextlib.contextmanager
def _slugline(tmp: Path, database_url: str | None, args: argparse.Namespace) -> Iterator[Served]:
    """A Slugline server on its own store, seeded: its address, a key's header, and the rows to run on it."""
    limits = {f"SLUGLINE_RATE_LIMIT_{plan}": "100000000" for plan in ("PRO", "DEVELOPER", "ANONYMOUS")}
    tmp.mkdir()
    with own_schema(database_url) as db_url:
        env = slugline_env(tmp, db_url, **limits)
        server, base = start_slugline(tmp, args.workers, env)
        try:
            auth = pro_account(base, env)
            started = time.monotonic()
            link_id = seed(base, auth, args.links)
            print(f"seeded {args.links} links in {time.monotonic() - started:.1f} s", flush=True)
            table = [row for row in rows(link_id, auth) if args.only is None or row[0] in args.only]
            yield base, auth, table, server
        finally:
            stop(server)


def measure(
    servers: dict[str, Served], args: argparse.Namespace
) -> tuple[dict[str, dict[str, list[Run]]], dict[str, dict[str, tuple[float, float]]]]:
    """Each row, on every server in turn, `args.rounds` times; and for each Slugline server and row, the CPU seconds
    its workers and the local PostgreSQL server used over those runs."""
    results: dict[str, dict[str, list[Run]]] = {}
    cpu: dict[str, dict[str, tuple[float, float]]] = {}
    for index, (name, *_) in enumerate(servers[SLUGLINE][2]):
        scripts = {}
        for label, (url, auth, table, _) in servers.items():
            _, method, path, body = table[index]
            scripts[label] = (url + path, lua_request(method, headers_for(name, auth), body))
            wrk(url + path, 1, args.connections, args.threads, scripts[label][1])  # warm-up, not counted
        runs: dict[str, list[Run]] = {label: [] for label in servers}
        used = {label: (0.0, 0.0) for label in servers}
        for _ in range(args.rounds):
            for label, (target, script) in scripts.items():
                proc = servers[label][3]
                before = (sum(worker_threads_cpu(proc).values()), postgres_cpu()) if proc else (0.0, 0.0)
                runs[label].append(wrk(target, args.duration, args.connections, args.threads, script))
                after = (sum(worker_threads_cpu(proc).values()), postgres_cpu()) if proc else (0.0, 0.0)
                used[label] = (used[label][0] + after[0] - before[0], used[label][1] + after[1] - before[1])
        results[name], cpu[name] = runs, used
        line = " | ".join(f"{label} {median(runs[label]).rps:9.0f} req/s" for label in servers)
        print(f"{name:16s} {line} | ratio {median(runs[SLUGLINE]).rps / median(runs[BARE]).rps:.3f}", flush=True)
    return results, cpu


def report(results: dict[str, dict[str, list[Run]]], args: argparse.Namespace) -> None:
    both = args.postgresql_too is not None
    print(
        f"\nwrk -t{args.threads} -c{args.connections} -d{args.duration}s, {args.rounds} alternating rounds, "
        f"{args.workers} worker(s), {args.links} links, {args.database_url or 'SQLite'}"
        f"{' and ' + args.postgresql_too if both else ''}; medians:"
    )
    head = "| row | Slugline req/s | p99 ms | bare FastAPI req/s | p99 ms | ratio |"
    if both:
        head += " PostgreSQL req/s | p99 ms | ratio | PostgreSQL / SQLite |"
    print(head + "\n" + "|---" * head.count(" | ") + "|---|")
    for name, runs in results.items():
        mine, ceiling = median(runs[SLUGLINE]), median(runs[BARE])
        line = (
            f"| {name} | {mine.rps:,.0f} | {mine.p99_ms:.2f} | {ceiling.rps:,.0f} | {ceiling.p99_ms:.2f} | "
            f"{mine.rps / ceiling.rps:.3f} |"
        )
        if both:
            pg = median(runs[POSTGRESQL])
            line += f" {pg.rps:,.0f} | {pg.p99_ms:.2f} | {pg.rps / ceiling.rps:.3f} | {pg.rps / mine.rps:.3f} |"
        print(line)


def report_cpu(
    results: dict[str, dict[str, list[Run]]], cpu: dict[str, dict[str, tuple[float, float]]], args: argparse.Namespace
) -> None:
    """CPU per request over the measured runs: the Slugline workers' (every thread), and the local PostgreSQL
    server's (every process, whoever's work it was: run nothing else against it meanwhile)."""
    labels = [label for label in (SLUGLINE, POSTGRESQL) if label in next(iter(cpu.values()), {})]
    on_postgresql = [label for label in labels if label == POSTGRESQL or args.database_url]
    head = "| row |" + "".join(f" {label} workers µs/req |" for label in labels)
    head += "".join(f" {label}: PostgreSQL server µs/req |" for label in on_postgresql)
    print(
        "\nCPU per request (from /proc, over the measured runs):\n" + head + "\n" + "|---" * (head.count("|") - 1) + "|"
    )
    for name, used in cpu.items():
        served = {label: sum(run.responses for run in results[name][label]) or 1 for label in labels}
        line = f"| {name} |" + "".join(f" {used[label][0] / served[label] * 1e6:.0f} |" for label in labels)
        line += "".join(f" {used[label][1] / served[label] * 1e6:.0f} |" for label in on_postgresql)
        print(line)


if __name__ == "__main__":
    sys.exit(main())
