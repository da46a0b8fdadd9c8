"""One pass of the month packs' upkeep (`slugline.clicks.packs.upkeep`) over many accounts whose packs are all made:
what each worker's click upkeep spends every 5 minutes just finding that nothing is due.

    python benches/pack_pass.py [--accounts 10000] [--months 12] [--rounds 3] [--database-url URL]

Builds a fresh database (a SQLite file in a temporary folder unless `--database-url` names an empty one) with
`--accounts` accounts, each with `--months` closed months of month cubes in both views and every month's pack made,
then times `--rounds` passes. The code before a change runs the same script with its own package first on the path
(`PYTHONPATH=/path/to/before/python`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from sqlalchemy import text

from httpbench import SECRET
from slugline.clicks import packs
from slugline.clicks.cubes import ALL, MONTH, PACK, PUBLIC
from slugline.common.clock import month_days, month_of_day
from slugline.settings import Settings
from slugline.storage import migrate
from slugline.storage.db import Database

_ACCOUNT = text(
    "INSERT INTO accounts (id, username, password_hash, plan, created_at, links_version) "
    "VALUES (:id, :name, 'x', 'free', CURRENT_TIMESTAMP, 0)"
)
_CUBE = text("INSERT INTO click_cubes (account_id, scope, level, bucket, cube) VALUES (:a, :s, :level, :b, :cube)")


def fill(db: Database, accounts: int, months: int) -> None:
    """Accounts whose closed months all have their month cubes and full packs (their contents do not matter here:
    the pass reads only which rows there are)."""
    closed = month_of_day(packs.last_closed())
    done = [(m, month_days(m)[1]) for m in range(closed - months, closed)]
    with db.engine.begin() as conn:
        conn.execute(_ACCOUNT, [{"id": a, "name": f"user{a}"} for a in range(1, accounts + 1)])
        for a in range(1, accounts + 1):
            conn.execute(
                _CUBE,
                [
                    {"a": a, "s": scope, "level": level, "b": bucket, "cube": b""}
                    for scope in (ALL, PUBLIC)
                    for month, last in done
                    for level, bucket in ((MONTH, month), (PACK, last))
                ],
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", help="an empty database (default: a new SQLite file)")
    args = parser.parse_args()
    url = args.database_url or f"sqlite:///{tempfile.mkdtemp()}/packs.db"
    db = Database(Settings(database_url=url, secret_key=SECRET))
    try:
        migrate.upgrade(db.engine)
        fill(db, args.accounts, args.months)
        seconds = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            made = sum(packs.upkeep(db))
            seconds.append(time.perf_counter() - started)
            assert made == 0, f"{made} packs were due"
        print(
            f"{db.engine.dialect.name}, {args.accounts:,} accounts x {args.months} months, nothing due: "
            f"pass {statistics.median(seconds) * 1000:,.0f} ms (median of {args.rounds}; "
            + ", ".join(f"{s * 1000:,.0f}" for s in seconds)
            + ")"
        )
    finally:
        db.dispose()


if __name__ == "__main__":
    main()
