"""HTTP load on redirects (click recording on): nginx `return 302`, a bare Granian ASGI app and `slugline serve`.

    python benches/http_redirect.py [--duration 10] [--rounds 3] [--workers 1] [--links 1]
                                    [--database-url postgresql://…] [--metrics] [--webhooks]
                                    [--rules 20] [--baseline DIR]

nginx is the machine's physical limit; the bare app (benches/bare_apps.py: a dict lookup, a 302 and a click tuple
kept, under the same Granian, interface and event loop) is the ceiling of our own stack. wrk sends a browser's
User-Agent and a Referer, so every redirect records a click. Runs alternate between the three servers; the medians
of req/s and p99 are printed with Slugline's ratio to each. With `--links N` the redirects go round robin over N
links (`/bench-0` ...), as traffic spread over many links does. Afterwards the clicks stored are compared with the
302s wrk received. A PostgreSQL database gets a schema of the run's own, dropped at the end.

What one click costs Slugline's workers is read from /proc: the CPU of the serving (main) thread and of every other
thread per request, over the `GET` rounds (a click each) and over one round of `HEAD` (which records none); the
difference is the click's share. Everything the click costs in Rust and the database runs off the serving thread.
The bare app's workers are read the same way over its own rounds, for the CPU a redirect costs with no Slugline.
With `--database-url`, the CPU of every PostgreSQL server process on this machine over Slugline's rounds is
printed per request too: the database's share of the clicks.

With `--webhooks` another Slugline (its own SQLite file) runs with an endpoint subscribed to `link.clicked` on a
receiver in this process, and takes its turn in every round: the ratio of its req/s to the first one's is what the
outbox costs a redirect; the clicks delivered and their delivery lag (redirect to arrival, p50 and p99) are printed
at the end. Deliveries are paced at `--webhook-click-interval` (the default's 1 s: at most 100 clicks a second).
With `--rules N` the same Slugline also serves links with N redirect rules (`/ruled-0` ...), each round measuring
them after the plain ones: the last rule asks for the country, which a GeoIP database made for the run places at
127.0.0.1, so every rule is tried, the user agent classified and the address looked up. With `--baseline DIR`
another Slugline runs the package found in DIR (e.g. main's `python/`, as it is today) on its own SQLite file and takes
its turn in every round: the ratio of the two is what this tree's changes cost a plain redirect, in the same run, and
its workers' CPU per `GET` is printed beside this tree's.

With `--metrics` a second Slugline (its own SQLite file) runs with `SLUGLINE_METRICS_TOKEN` set and takes its turn in
every round: the ratio of its req/s to the first one's is what metrics cost a redirect, and its /metrics is read at
the end for the redirects it counted.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from httpbench import (
    BROWSER,
    Run,
    cpu_split,
    ensure_tools,
    lua_paths,
    lua_request,
    median,
    own_schema,
    postgres_cpu,
    pro_account,
    slugline_env,
    start_granian,
    start_nginx,
    start_slugline,
    stop,
    worker_threads_cpu,
    wrk,
)
from webhook_receiver import ClickReceiver, subscribe


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per server, alternating (default 3)")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="workers of every server")
    parser.add_argument("--links", type=int, default=1, help="links the redirects go to, round robin (default 1)")
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    parser.add_argument(
        "--link-fields",
        type=json.loads,
        default={},
        help="JSON fields every link is made with, such as '{\"max_clicks\": 1000000000}' (a limited link) or "
        '\'{"expires_at": "2999-01-01T00:00:00Z"}\' (an expiring one)',
    )
    parser.add_argument("--rules", type=int, default=0, help="also measure links with this many redirect rules")
    parser.add_argument("--baseline", default=None, help="also run the slugline package in this directory")
    parser.add_argument(
        "--metrics", action="store_true", help="also run Slugline with SLUGLINE_METRICS_TOKEN set (its own database)"
    )
    parser.add_argument(
        "--webhooks",
        action="store_true",
        help="also run Slugline (its own database) with a link.clicked webhook endpoint on a local receiver",
    )
    parser.add_argument("--webhook-click-interval", default="1.0", help="SLUGLINE_WEBHOOKS_CLICK_INTERVAL_SECONDS")
    args = parser.parse_args()
    ensure_tools()
    paths = [f"/bench-{i}" for i in range(args.links)]
    script = lua_request("GET", BROWSER) + lua_paths(paths)
    with tempfile.TemporaryDirectory(prefix="slugline-bench-") as name, own_schema(args.database_url) as db_url:
        tmp = Path(name)
        env = slugline_env(tmp, db_url, **({"SLUGLINE_GEOIP_DB": str(geo_db(tmp))} if args.rules else {}))
        nginx, nginx_url = start_nginx(tmp, args.workers)
        bare, bare_base = start_granian(
            "bare_apps:redirect", args.workers, tmp, {"BARE_REDIRECT_LINKS": str(args.links)}
        )
        server, base = start_slugline(tmp, args.workers, env)
        servers = {"bare Granian": bare, "slugline": server}
        urls = {"nginx": nginx_url, "bare Granian": bare_base, "slugline": base}
        scripts = start_comparisons(args, tmp, env, servers, urls)  # a label's own requests; others send `script`
        if args.metrics:
            (tmp / "metrics").mkdir()
            metrics_env = slugline_env(tmp / "metrics", None, SLUGLINE_METRICS_TOKEN=METRICS_TOKEN)
            servers[WITH_METRICS], urls[WITH_METRICS] = start_slugline(tmp / "metrics", args.workers, metrics_env)
        if args.webhooks:
            (tmp / "webhooks").mkdir()
            receiver = ClickReceiver()
            hooks_env = slugline_env(
                tmp / "webhooks",
                None,
                SLUGLINE_WEBHOOKS_ALLOW_PRIVATE="true",
                SLUGLINE_WEBHOOKS_CLICK_INTERVAL_SECONDS=args.webhook_click_interval,
            )
            servers[WITH_WEBHOOKS], urls[WITH_WEBHOOKS] = start_slugline(tmp / "webhooks", args.workers, hooks_env)
            subscribe(urls[WITH_WEBHOOKS], hooks_env, args.links, args.link_fields, receiver.url)
        try:
            for label in ("slugline", WITH_METRICS) if args.metrics else ("slugline",):
                make_links(urls[label], metrics_env if label == WITH_METRICS else env, args.links, args.link_fields)
            scripts = {label: scripts.get(label, script) for label in urls}
            results, cpu, database_cpu = measure(urls, scripts, args, servers)
            before_head = worker_threads_cpu(server)
            head_script = lua_request("HEAD", BROWSER) + lua_paths(paths)
            head = wrk(urls["slugline"], args.duration, args.connections, args.threads, head_script)
            time.sleep(1.2)
            after_head = worker_threads_cpu(server)
        finally:
            stop(nginx, signal.SIGQUIT)
            stop(bare)
            if args.metrics:
                counted = scraped_redirects(urls[WITH_METRICS])
                stop(servers[WITH_METRICS])
                stored_there = count_clicks(metrics_env["SLUGLINE_DATABASE_URL"])
                print(f"  {WITH_METRICS}: {counted} redirects counted in /metrics, {stored_there} clicks stored")
            if args.webhooks:
                time.sleep(2)  # the last click batches' deliveries
                stop(servers[WITH_WEBHOOKS])
                print(f"  {WITH_WEBHOOKS}: {receiver.report(count_clicks(hooks_env['SLUGLINE_DATABASE_URL']))}")
                receiver.close()
            stop(server)  # SIGTERM: the buffered clicks are flushed
        report(results, args)
        per_request = {
            label: [seconds / sum(run.responses for run in results[label]) * 1e6 for seconds in cpu_split(*used)]
            for label, used in cpu.items()
        }
        with_click, bare_cpu = per_request["slugline"], per_request["bare Granian"]
        without = [seconds / head.responses * 1e6 for seconds in cpu_split(before_head, after_head)]
        print(
            f"  worker CPU per request, µs: GET (records a click) serving thread {with_click[0]:.2f}, other threads "
            f"{with_click[1]:.2f}; HEAD (no click) serving thread {without[0]:.2f}, other threads {without[1]:.2f}; "
            f"bare Granian GET serving thread {bare_cpu[0]:.2f}, other threads {bare_cpu[1]:.2f}"
        )
        if BASELINE in per_request:
            before = per_request[BASELINE]
            print(
                f"  worker CPU per GET, µs, baseline: serving thread {before[0]:.2f} "
                f"({with_click[0] / before[0]:.3f}x this tree / baseline), other threads {before[1]:.2f} "
                f"({with_click[1] / before[1]:.3f}x)"
            )
        if args.metrics:
            on = per_request[WITH_METRICS]
            print(
                f"  worker CPU per GET, µs, metrics on: serving thread {on[0]:.2f} ({on[0] / with_click[0]:.3f}x off), "
                f"other threads {on[1]:.2f} ({on[1] / with_click[1]:.3f}x off)"
            )
        if args.webhooks:
            on = per_request[WITH_WEBHOOKS]
            print(
                f"  worker CPU per GET, µs, webhooks on: serving thread {on[0]:.2f} "
                f"({on[0] / with_click[0]:.3f}x off), other threads {on[1]:.2f} ({on[1] / with_click[1]:.3f}x off)"
            )
        if args.database_url:
            responses = sum(run.responses for run in results["slugline"])
            print(f"  PostgreSQL server CPU per GET (the click's write): {database_cpu / responses * 1e6:.2f} µs")
        stored = count_clicks(env["SLUGLINE_DATABASE_URL"])
    # wrk's count misses requests still in flight when a run ends; the server answered (and recorded) those too.
    print(
        f"  clicks stored: {stored} (wrk counted {median(results['slugline']).responses} measured responses, "
        "plus the warm-up)"
    )
    return 0


Cpu = dict[tuple[int, int], float]
WITH_METRICS = "slugline+metrics"
WITH_WEBHOOKS = "slugline+webhooks"
BASELINE = "baseline"
RULED = "slugline rules"
METRICS_TOKEN = "bench-metrics-token-0123456789"


def make_links(base: str, env: dict[str, str], links: int, fields: dict[str, object]) -> None:
    auth = pro_account(base, env)
    with httpx.Client(base_url=base, headers=auth, timeout=30) as client:
        for i in range(links):
            body = {"destination_url": f"https://example.org/{i}", "slug": f"bench-{i}", **fields}
            client.post("/api/v1/links", json=body).raise_for_status()


def scraped_redirects(base: str) -> int:
    """The redirects the metrics server's /metrics counts (every worker's, folded within a second)."""
    time.sleep(1.2)
    text = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
    lines = [line for line in text.splitlines() if line.startswith("slugline_redirects_total")]
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in lines))


def start_comparisons(
    args: argparse.Namespace,
    tmp: Path,
    env: dict[str, str],
    servers: dict[str, subprocess.Popen[bytes]],
    urls: dict[str, str],
) -> dict[str, str]:
    """`--baseline`'s server (its links made) and `--rules`' link, added to `servers` and `urls`: the wrk scripts of
    the labels that send requests of their own."""
    scripts: dict[str, str] = {}
    if args.baseline:
        (tmp / "baseline").mkdir()
        baseline_env = slugline_env(tmp / "baseline", None, PYTHONPATH=str(Path(args.baseline).resolve()))
        servers[BASELINE], urls[BASELINE] = start_slugline(tmp / "baseline", args.workers, baseline_env)
        make_links(urls[BASELINE], baseline_env, args.links, args.link_fields)
    if args.rules:
        make_ruled_link(urls["slugline"], env, args.rules)
        urls[RULED], scripts[RULED] = urls["slugline"], lua_request("GET", BROWSER) + lua_paths(["/ruled-0"])
    return scripts


def geo_db(tmp: Path) -> Path:
    """A small GeoIP database placing 127.0.0.0/8 (where wrk's requests come from) in France."""
    from mmdb_writer import MMDBWriter
    from netaddr import IPSet

    writer = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type="GeoLite2-City", languages=["en"])
    writer.insert_network(IPSet(["127.0.0.0/8"]), {"country": {"iso_code": "FR"}, "city": {"names": {"en": "Paris"}}})
    writer.insert_network(IPSet(["2001:db8::/32"]), {"country": {"iso_code": "DE"}})
    path = tmp / "geo.mmdb"
    writer.to_db_file(str(path))
    return path


def make_ruled_link(base: str, env: dict[str, str], rules: int) -> None:
    """`/ruled-0`, whose `rules` rules none but the last hold for wrk's requests (a browser's desktop Chrome on
    Windows, no Accept-Language, from 127.0.0.1), the last of which asks for the country."""
    misses = [
        {"if": {"device": ["mobile", "tablet"], "os": ["iOS", "Android"]}, "to": "https://example.org/m"},
        {"if": {"browser": ["Firefox", "Safari"]}, "to": "https://example.org/b"},
        {"if": {"language": ["ja", "ko", "zh"]}, "to": "https://example.org/l"},
        {"if": {"os": ["Windows", "macOS"], "device": ["tablet"]}, "to": "https://example.org/o"},
    ]
    body = {
        "destination_url": "https://example.org/plain",
        "slug": "ruled-0",
        "rules": [misses[i % len(misses)] for i in range(rules - 1)]
        + [{"if": {"country": ["FR", "BE", "CH"]}, "to": "https://example.org/fr"}],
    }
    with httpx.Client(base_url=base, headers=pro_account(base, env), timeout=30) as client:
        client.post("/api/v1/links", json=body).raise_for_status()
        where = client.get("/ruled-0", headers=BROWSER, follow_redirects=False).headers["location"]
    assert where == "https://example.org/fr", where


def measure(
    urls: dict[str, str],
    scripts: dict[str, str],
    args: argparse.Namespace,
    servers: dict[str, subprocess.Popen[bytes]],
) -> tuple[dict[str, list[Run]], dict[str, tuple[Cpu, Cpu]], float]:
    """The runs of each server, the workers' CPU of each of `servers` before and after its own runs (summed), and
    the CPU every PostgreSQL server process on this machine used over Slugline's runs (0 on SQLite)."""
    for label, url in urls.items():
        wrk(url, 2, args.connections, args.threads, scripts[label])  # warm-up, not counted
    results: dict[str, list[Run]] = {label: [] for label in urls}
    cpu: dict[str, tuple[Cpu, Cpu]] = {label: ({}, {}) for label in servers}
    database = 0.0
    for round_no in range(args.rounds):
        for label, url in urls.items():
            server = servers.get(label)
            before = worker_threads_cpu(server) if server is not None else {}
            database_before = postgres_cpu() if label == "slugline" and args.database_url else 0.0
            results[label].append(wrk(url, args.duration, args.connections, args.threads, scripts[label]))
            if server is not None:
                if label.startswith("slugline") or label == BASELINE:
                    time.sleep(1.2)  # the last clicks are flushed, and their CPU counted
                after = worker_threads_cpu(server)
                if label == "slugline" and args.database_url:
                    database += postgres_cpu() - database_before
                start, end = cpu[label]
                for key, seconds in after.items():
                    start[key] = start.get(key, 0.0) + before.get(key, 0.0)
                    end[key] = end.get(key, 0.0) + seconds
            run = results[label][-1]
            print(f"round {round_no + 1} {label:12s} {run.rps:10.0f} req/s  p99 {run.p99_ms:7.2f} ms", flush=True)
    return results, cpu, database


def report(results: dict[str, list[Run]], args: argparse.Namespace) -> None:
    med = {label: median(runs) for label, runs in results.items()}
    print(
        f"\nwrk -t{args.threads} -c{args.connections} -d{args.duration}s, {args.rounds} alternating rounds, "
        f"{args.workers} worker(s), {args.links} link(s), {args.database_url or 'SQLite'}; medians:"
    )
    for label, run in med.items():
        print(f"  {label:12s} {run.rps:10.0f} req/s   p99 {run.p99_ms:7.2f} ms")
    mine = med["slugline"]
    print(
        f"  slugline / nginx        {mine.rps / med['nginx'].rps:.3f}x   (p99 {mine.p99_ms / med['nginx'].p99_ms:.2f}x)"
    )
    bare = med["bare Granian"]
    print(f"  slugline / bare Granian {mine.rps / bare.rps:.3f}x   (p99 {mine.p99_ms / bare.p99_ms:.2f}x)")
    if WITH_METRICS in med:
        on = med[WITH_METRICS]
        print(f"  metrics on / off        {on.rps / mine.rps:.3f}x   (p99 {on.p99_ms / mine.p99_ms:.2f}x)")
        ratios = [a.rps / b.rps for a, b in zip(results[WITH_METRICS], results["slugline"], strict=True)]
        print(f"  metrics on / off by round: {', '.join(f'{r:.3f}' for r in ratios)}")
    if WITH_WEBHOOKS in med:
        hooked = med[WITH_WEBHOOKS]
        print(f"  webhooks on / off       {hooked.rps / mine.rps:.3f}x   (p99 {hooked.p99_ms / mine.p99_ms:.2f}x)")
        ratios = [a.rps / b.rps for a, b in zip(results[WITH_WEBHOOKS], results["slugline"], strict=True)]
        print(f"  webhooks on / off by round: {', '.join(f'{r:.3f}' for r in ratios)}")
    if BASELINE in med:
        ratios = [a.rps / b.rps for a, b in zip(results["slugline"], results[BASELINE], strict=True)]
        print(f"  slugline / baseline     {mine.rps / med[BASELINE].rps:.3f}x   by round: {_listed(ratios)}")
    if RULED in med:
        ratios = [b.rps / a.rps for a, b in zip(results["slugline"], results[RULED], strict=True)]
        print(f"  {args.rules} rules / plain {med[RULED].rps / mine.rps:11.3f}x   by round: {_listed(ratios)}")


def _listed(ratios: list[float]) -> str:
    return ", ".join(f"{r:.3f}" for r in ratios)


def count_clicks(database_url: str) -> int:
    from sqlalchemy import create_engine, text

    from slugline.storage.db import normalize_url

    engine = create_engine(normalize_url(database_url))
    with engine.connect() as conn:
        count = conn.execute(text("SELECT count(*) FROM clicks")).scalar()
    engine.dispose()
    return int(count or 0)


if __name__ == "__main__":
    sys.exit(main())
