"""The process Granian serves logs through a plain handler. The MCP SDK installs a rich one unless logging is
configured first, and rendering a rich traceback held a worker's event loop for about a second: while the disk was
full the click flusher logged one every second, and each redirect not yet cached waited for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SHOW_HANDLERS = "import logging, slugline.asgi; print(*(type(h).__name__ for h in logging.getLogger().handlers))"


def test_served_app_logs_through_a_plain_handler(tmp_path: Path) -> None:
    env = {**os.environ, "SLUGLINE_DATABASE_URL": f"sqlite:///{tmp_path}/asgi.db", "SLUGLINE_SECRET_KEY": "s" * 48}
    shown = subprocess.run([sys.executable, "-c", SHOW_HANDLERS], env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["StreamHandler"]
