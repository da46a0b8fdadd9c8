"""Analytics at scale: every analytics answer within 50 ms p99, with 10,000,000 clicks over 365 days and 10,000 links in
one account, while 2,000 clicks/s keep arriving, the first view included, on SQLite and on PostgreSQL.

    python benches/analytics_scale.py run --store sqlite postgres [--clicks 10000000 --links 10000 --days 365]
        [--repeats 50] [--rate 2000] [--baseline DIR] [--keep DIR [--reuse]] [--json FILE]
    python benches/analytics_scale.py run --clicks 200000 --links 2000        # a quick run

`run` builds each store's data (`build`), then measures it (`measure`) and prints one table per store: each query
shape's first view (a fresh server), p50 and p99 over `--repeats` rounds idle and under load, the clicks/s the load
achieved, the build's rate and the worker's memory. The data is built through the click writer (`scale_build.py`)
from the traffic model of `scale_traffic.py`; the load is real redirects (`scale_load.py`). With `--baseline DIR`
(a checkout with its own `DIR/.venv`), the older code builds a database of its own from the same clicks (its
schema may differ), under its own interpreter, and is measured on it too, in columns beside the current code's;
shapes it cannot answer show `n/a`. PostgreSQL gets a fresh database per build (`--postgres`: the server to use),
dropped at the end unless kept. `--keep DIR` keeps the data (SQLite files, PostgreSQL databases, manifests) and
`--reuse` measures what an earlier `--keep` run left there instead of building again (the load adds clicks).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from httpbench import BENCHES

GOAL_MS = 50.0
COLUMNS = (("first", "first"), ("idle", "p50"), ("idle", "p99"), ("load", "p50"), ("load", "p99"))
POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def main() -> int:
    args = parser().parse_args()
    if args.command == "build":
        return build_command(args)
    if args.command == "drive":
        import scale_load

        scale_load.run(read_manifest(args.data), args.base, args.rate, args.connections, seed=args.seed + 1)
        return 0
    if args.command == "measure":
        store = read_manifest(args.data)["database_url"].partition(":")[0]
        results = {"new": measure_one(sys.executable, args.data, args, old=False)}
        report_store(args, store, results)
        if args.json:
            args.json.write_text(json.dumps({store: results}, indent=1))
        return 0
    return run_command(args)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = top.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="build and measure each store, the baseline too if given")
    run.add_argument("--store", nargs="+", choices=("sqlite", "postgres"), default=["sqlite"])
    run.add_argument("--postgres", default=POSTGRES, help=f"the PostgreSQL server (default {POSTGRES})")
    run.add_argument("--baseline", type=Path, help="a checkout of the older code, with its own .venv")
    run.add_argument("--keep", type=Path, help="keep the data here (default: a temporary directory)")
    run.add_argument("--reuse", action="store_true", help="measure the data an earlier --keep left in --keep")
    build = commands.add_parser("build", help="build one database (under the interpreter that runs this)")
    build.add_argument("--out", type=Path, required=True, help="where the manifest (and a SQLite file) go")
    build.add_argument("--database-url", help="an empty database (default: a SQLite file in --out)")
    build.add_argument("--now", type=float, help="Unix time the clicks end at (default: now)")
    measure = commands.add_parser("measure", help="measure one build with the current code")
    measure.add_argument("--data", type=Path, required=True, help="a build's --out")
    drive = commands.add_parser("drive", help="(internal) the redirect load, until SIGTERM")
    drive.add_argument("--data", type=Path, required=True)
    drive.add_argument("--base", required=True)
    for sub in (run, build, measure, drive):
        sub.add_argument("--seed", type=int, default=7)
    for sub in (run, build):
        sub.add_argument("--clicks", type=int, default=10_000_000)
        sub.add_argument("--links", type=int, default=10_000)
        sub.add_argument("--days", type=int, default=365)
    for sub in (run, measure, drive):
        sub.add_argument("--rate", type=float, default=2000, help="clicks/s of the load (default 2,000)")
        sub.add_argument("--connections", type=int, default=32, help="connections of the load (default 32)")
    for sub in (run, measure):
        sub.add_argument("--repeats", type=int, default=50, help="rounds idle and under load (default 50)")
        sub.add_argument("--timeout", type=float, default=300, help="seconds a request may take (default 300)")
        sub.add_argument("--budget", type=float, help="seconds of rounds per phase, idle and loaded (default: no cap)")
        sub.add_argument("--drop-caches", action="store_true", help="empty the page cache before each first view")
        sub.add_argument("--json", type=Path, help="also write the results here")
    return top


def build_command(args: argparse.Namespace) -> int:
    from scale_build import build

    args.out.mkdir(parents=True, exist_ok=True)
    url = args.database_url or f"sqlite:///{args.out.resolve() / 'slugline.db'}"
    made = build(url, args.clicks, args.links, args.days, args.now or time.time(), args.seed)
    (args.out / "manifest.json").write_text(json.dumps(made))
    return 0


def read_manifest(data: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((data / "manifest.json").read_text())
    return found


def run_command(args: argparse.Namespace) -> int:
    now = time.time()  # one end for every build of the run: old and new code get the same clicks
    if args.reuse and not args.keep:
        sys.exit("--reuse measures what --keep DIR kept: give --keep DIR")
    codes: dict[str, tuple[str, Path | None]] = {"new": (sys.executable, None)}
    if args.baseline:  # built and served under its own interpreter, from its own checkout
        codes["baseline"] = (str(args.baseline.resolve() / ".venv" / "bin" / "python"), args.baseline.resolve())
    with contextlib.ExitStack() as stack:
        root = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="slugline-scale-")))
        saved: dict[str, Any] = {}
        for store in args.store:
            results = {}
            for label, (python, checkout) in codes.items():
                data = root / store / label
                print(f"\n{store}, {label} code ({python})", flush=True)
                stack.enter_context(built(data, store, (python, checkout), args, now))
                results[label] = measure_one(python, data, args, old=label == "baseline")
            saved[store] = results
            report_store(args, store, results)
        if args.json:
            args.json.write_text(json.dumps(saved, indent=1))
    return 0


@contextlib.contextmanager
def built(
    data: Path, store: str, code: tuple[str, Path | None], args: argparse.Namespace, now: float
) -> Iterator[None]:
    """The data of one store for one version of the code, built by that code (unless reused); a PostgreSQL database
    made for it is dropped afterwards unless `--keep`."""
    manifest = data / "manifest.json"
    if args.reuse and manifest.exists():
        print(f"  reusing {data}", flush=True)
        yield
        return
    if manifest.exists() and store == "postgres":  # an earlier build's database goes before a new one is made
        drop_database(args.postgres, read_manifest(data)["database_url"])
    data.mkdir(parents=True, exist_ok=True)
    for name in ("manifest.json", "slugline.db", "slugline.db-wal", "slugline.db-shm"):
        (data / name).unlink(missing_ok=True)
    python, checkout = code
    url = create_database(args.postgres) if store == "postgres" else None
    command = [python, str(BENCHES / "analytics_scale.py"), "build", "--out", str(data), "--now", str(now)]
    command += ["--clicks", str(args.clicks), "--links", str(args.links), "--days", str(args.days)]
    command += ["--seed", str(args.seed), *(["--database-url", url] if url else [])]
    try:
        subprocess.run(command, check=True, cwd=checkout)
        yield
    finally:
        if url and not args.keep:
            drop_database(args.postgres, url)


def create_database(server: str) -> str:
    from sqlalchemy import create_engine, make_url, text

    name = f"slugline_scale_{uuid.uuid4().hex[:10]}"
    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(server).set(database=name).render_as_string(hide_password=False)


def drop_database(server: str, url: str) -> None:
    from sqlalchemy import create_engine, make_url, text

    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    engine.dispose()


def measure_one(python: str, data: Path, args: argparse.Namespace, old: bool) -> dict[str, Any]:
    import scale_measure

    manifest = read_manifest(data)
    opts = {k: getattr(args, k) for k in ("repeats", "rate", "connections", "timeout", "drop_caches", "budget")}
    measured = scale_measure.measure(python, manifest, data, {**opts, "old": old})
    measured["build"] = {k: v for k, v in manifest.items() if k not in ("links", "key")}
    measured["build"]["links"] = len(manifest["links"])
    return measured


def report_store(args: argparse.Namespace, store: str, results: dict[str, dict[str, Any]]) -> None:
    from scale_measure import cell

    labels = list(results)
    head = "| shape |" + "".join(
        f" {label} {'first' if part == 'first' else f'{part} {which}'} |" for label in labels for part, which in COLUMNS
    )
    done = {
        f"{label} {part}": min(len(shape[part]) for shape in results[label]["shapes"].values())
        for label in labels
        for part in ("idle", "load")
    }
    rounds = ", ".join(f"{name} {count}" for name, count in done.items())
    print(f"\n{store}: milliseconds (first view on a fresh server; p50/p99 over rounds: {rounds})\n{head}")
    print("|---" * (head.count("|") - 1) + "|")
    met = 0
    names = list(results[labels[0]]["shapes"])
    for name in names:
        line = f"| {name} |"
        for label in labels:
            shape = results[label]["shapes"].get(name)
            for part, which in COLUMNS:
                line += f" {cell(shape[part], which) if shape else 'n/a'} |"
        met += within_goal(results[labels[0]]["shapes"][name])
        print(line)
    print(f"\n{labels[0]}: {met} of {len(names)} shapes within {GOAL_MS:.0f} ms (first view and both p99s)")
    for label in labels:
        summary(label, results[label])


def within_goal(shape: dict[str, Any]) -> bool:
    """The first view and both p99s answered, each within the goal."""
    from scale_measure import figure

    found = [figure(shape[part], which) for part, which in COLUMNS if which != "p50"]
    return all(isinstance(ms, float) and ms <= GOAL_MS for ms in found)


def summary(label: str, result: dict[str, Any]) -> None:
    build, load, rss = result["build"], result["load"], result["rss_mib"]
    stored = "?" if load["stored"] is None else f"{load['stored']:,}"
    print(
        f"{label} code:\n  build: {build['clicks']:,} clicks over {build['days']} days and {build['links']:,} links, "
        f"{build['clicks_per_second']:,.0f} clicks/s ({build['click_seconds']:,.0f} s; the links took "
        f"{build['link_seconds']:,.0f} s)"
        + (f"; {build['packs']} month packs made in {build['pack_seconds']:,.1f} s" if "packs" in build else "")
    )
    print(
        f"  load: {load['achieved']:,.0f} clicks/s achieved of {load['target']:,.0f} asked, over {load['seconds']:,.0f}"
        f" s (answers {load['answers']}); {stored} clicks stored meanwhile"
    )
    print(f"  worker memory, MiB: before {fmt_rss(rss['before'])}; after {fmt_rss(rss['after'])}")


def fmt_rss(memory: dict[str, dict[str, float | None]]) -> str:
    return ", ".join(
        f"worker {pid} {mib['rss']:,.0f}" + (f" (peak {mib['peak']:,.0f})" if mib["peak"] is not None else "")
        for pid, mib in memory.items()
    )


if __name__ == "__main__":
    sys.exit(main())
