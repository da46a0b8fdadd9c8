"""Instructions the click writer runs per batch of 1,000 clicks spread over 1,000 links (encode and write to a
SQLite file), counted by callgrind, so the figure is the same on a busy machine and an idle one:

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cw.%p \\
        .venv/bin/python benches/click_writer_instructions.py --batches 8
    callgrind_annotate /tmp/cw.* | head -20     # PROGRAM TOTALS / 8 = instructions per batch

Setting up (1,000 links made through the service, three warm-up batches) is not counted: the script turns
callgrind's instrumentation on (`callgrind_control -i on`) only for the measured batches. Without valgrind it
prints the wall time per batch instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from datetime import UTC, datetime

from sqlalchemy import text

from slugline import _core
from slugline.accounts import service as accounts
from slugline.clicks.buffer import ClickRecorder
from slugline.clicks.store import MAX_TEXT, write_batch
from slugline.common.caller import Caller
from slugline.links import service as links
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.storage.migrate import upgrade

AGENT = (
    b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
BATCH = LINKS = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    rt = Runtime.create(Settings(database_url=f"sqlite:///{folder}/writer.db", secret_key="bench-" + "s" * 40))
    try:
        upgrade(rt.db.engine)
        accounts.register(rt, {"username": "bench", "password": "bench-password"}, plan="pro")
        with rt.db.engine.connect() as conn:
            account_id = conn.execute(text("SELECT id FROM accounts WHERE username = 'bench'")).scalar_one()
        caller = Caller(account_id, "bench", "pro", "full", datetime.now(UTC))
        spread = [
            links.create_on_thread(rt, caller, {"destination_url": f"https://example.org/{i}"})["id"]
            for i in range(LINKS)
        ]
        recorder = ClickRecorder(rt)

        def encoded() -> _core.EncodedClicks:
            for i in range(BATCH):
                recorder.queue.record(
                    spread[i % LINKS], AGENT, b"https://news.example.com/x", None, False, f"198.51.100.{i % 250}"
                )
            taken = recorder.queue.take(BATCH)
            batch = taken.encode(recorder.salts.get(rt.db, taken.days()), MAX_TEXT)
            recorder.queue.release(taken)
            return batch

        for _ in range(3):
            write_batch(rt.db, encoded())
        if "vgpreload" in os.environ.get("LD_PRELOAD", ""):  # under valgrind: count from here
            subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True, capture_output=True)
        started = time.perf_counter()
        for _ in range(args.batches):
            write_batch(rt.db, encoded())
        elapsed = time.perf_counter() - started
        each = elapsed / args.batches * 1000
        print(f"{args.batches} batches of {BATCH:,} clicks over {LINKS:,} links: {each:.1f} ms each")
    finally:
        rt.db.dispose()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
