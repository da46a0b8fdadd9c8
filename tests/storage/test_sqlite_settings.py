"""Every pooled SQLite connection runs with the settings the store relies on: the write-ahead log, foreign keys
enforced, fsync only at checkpoints, and the log copied into the file at `WAL_CHECKPOINT_PAGES` (not SQLite's
1,000 pages: click batches checkpointed that often spent about as long in checkpoints as in their inserts)."""

from __future__ import annotations

from slugline.runtime import Runtime
from slugline.storage.db import WAL_CHECKPOINT_PAGES, WAL_KEPT_BYTES
from tests.support.helpers import SQLITE_ONLY


@SQLITE_ONLY
def test_pooled_connections_have_the_stores_settings(runtime: Runtime) -> None:
    with runtime.db.engine.connect() as conn:
        found = {
            name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
            for name in ("journal_mode", "foreign_keys", "synchronous", "wal_autocheckpoint", "journal_size_limit")
        }
    assert found == {
        "journal_mode": "wal",
        "foreign_keys": 1,
        "synchronous": 1,  # NORMAL
        "wal_autocheckpoint": WAL_CHECKPOINT_PAGES,
        "journal_size_limit": WAL_KEPT_BYTES,
    }
