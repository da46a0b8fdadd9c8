"""The analytics service function in process, on data `analytics_scale.py build` made: no HTTP, no server warm-up.
It is called on an event loop, as a server calls it, with the worker's database threads (an account's figures and
its top links are read on two threads at once).

    python benches/analytics_inprocess.py --data DIR [--repeats 15] [--profile] [SHAPE ...]

Each shape runs in a process of its own (a fresh worker: nothing cached yet): its first call, then `--repeats` more,
each timed in wall and CPU milliseconds (the CPU of this process: the core's second thread counts too), with the
analytics cache's figures after them. `--profile` prints cProfile's top functions over the repeats instead, and
`--profile-first` over the first call.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import select

from httpbench import SECRET

SHAPES: dict[str, tuple[dict[str, Any], str | None]] = {
    "days=30": ({"days": 30}, None),
    "days=365": ({"days": 365}, None),
    "days=7 hourly": ({"days": 7, "interval": "hour"}, None),
    "days=365 weekly": ({"days": 365, "interval": "week"}, None),
    "365 device=mobile": ({"days": 365, "device": "mobile"}, None),
    "365 source=google.com": ({"days": 365, "source": "google.com"}, None),
    "365 browser+os": ({"days": 365, "browser": "chrome", "os": "android"}, None),
    "365 mobile+newsletter": ({"days": 365, "device": "mobile", "source": "newsletter"}, None),
    "hot link 365": ({"days": 365}, "hot"),
    "cold link 365": ({"days": 365}, "cold"),
    "hot link 365 google": ({"days": 365, "source": "google.com"}, "hot"),
}


def main() -> int:
    top = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--data", type=Path, required=True, help="a build's --out")
    top.add_argument("--repeats", type=int, default=15)
    top.add_argument("--profile", action="store_true")
    top.add_argument("--profile-first", action="store_true")
    top.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # (internal) run one shape here
    top.add_argument("shapes", nargs="*", default=list(SHAPES), help="default: every shape")
    args = top.parse_args()
    if args.one:
        run_one(args.data, args.shapes[0], args.repeats, args.profile, args.profile_first)
        return 0
    for shape in args.shapes:
        command = [sys.executable, __file__, "--data", str(args.data), "--repeats", str(args.repeats), "--one"]
        flags = [flag for flag, on in (("--profile", args.profile), ("--profile-first", args.profile_first)) if on]
        subprocess.run([*command, *flags, shape], check=True)
    return 0


def run_one(data: Path, shape: str, repeats: int, profile: bool, profile_first: bool = False) -> None:
    import anyio.to_thread

    from slugline.analytics.service import get_analytics
    from slugline.common.caller import Caller
    from slugline.common.models import Account
    from slugline.runtime import Runtime
    from slugline.settings import Settings

    manifest = json.loads((data / "manifest.json").read_text())
    rt = Runtime.create(Settings(database_url=manifest["database_url"], secret_key=SECRET))
    with rt.db.session() as session:
        account = session.execute(select(Account).where(Account.username == "scale")).scalar_one()
        caller = Caller(account.id, "scale", "pro", "full", account.created_at)
    query, which = SHAPES[shape]
    link = {"hot": manifest["links"][0][0], "cold": manifest["links"][-1][0], None: None}[which]

    loop = asyncio.new_event_loop()

    async def threads() -> None:  # as the server has them (`slugline.app`)
        anyio.to_thread.current_default_thread_limiter().total_tokens = rt.db.threads

    loop.run_until_complete(threads())

    def ask() -> None:
        loop.run_until_complete(get_analytics(rt, caller, dict(query), link))

    if profile_first:
        profiler = cProfile.Profile()
        first = timed(lambda: profiler.runcall(ask))
        print(f"===== {shape}: first {first[0]:.1f} ms wall, {first[1]:.1f} ms CPU (profiled)")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
        return
    first = timed(ask)
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(repeats):
            ask()
        profiler.disable()
        print(f"===== {shape}: first {first[0]:.1f} ms wall, {first[1]:.1f} ms CPU")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return
    again = [timed(ask) for _ in range(repeats)]
    wall = statistics.median(w for w, _ in again)
    cpu = statistics.median(c for _, c in again)
    print(
        f"{shape:22s} first {first[0]:7.1f} wall {first[1]:7.1f} cpu | again p50 {wall:6.1f} wall {cpu:6.1f} cpu, "
        f"max {max(w for w, _ in again):6.1f} wall | {rt.analytics.stats()}",
        flush=True,
    )
    rt.close()
    loop.close()


def timed(call: Callable[[], None]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


if __name__ == "__main__":
    sys.exit(main())
