"""The typed stub `_core.pyi` is the Python contract of the Rust core: stubtest keeps the two in step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PYTHON_SRC = Path(__file__).resolve().parents[2] / "python"


def test_stub_matches_the_extension() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "slugline._core"],
        cwd=PYTHON_SRC,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
