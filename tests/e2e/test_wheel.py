"""The prebuilt wheel is self-contained: it carries the core and the migrations, and `slugline migrate` works."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_migrates_a_fresh_database(tmp_path: Path) -> None:
    subprocess.run(["make", "-s", "wheel", f"VENV={Path(sys.prefix)}"], cwd=ROOT, check=True, capture_output=True,
                   timeout=900)
    wheels = sorted((ROOT / "dist").glob("slugline-*.whl"), key=lambda p: p.stat().st_mtime)
    assert wheels, "make wheel produced no wheel"
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(wheels[-1]) as whl:
        names = whl.namelist()
        whl.extractall(unpacked)
    assert "slugline/migrations/env.py" in names and any(n.startswith("slugline/migrations/versions/") for n in names)
    assert any(n.startswith("slugline/_core") for n in names) and "slugline/py.typed" in names
    assert not any(n.startswith("migrations/") for n in names)
    env = {**os.environ, "PYTHONPATH": str(unpacked), "SLUGLINE_DATABASE_URL": f"sqlite:///{tmp_path}/w.db"}
    out = subprocess.run([sys.executable, "-c", "import slugline.migrate as m, sys; print(m.migrations_dir())"],
                         env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip().startswith(str(unpacked)), out.stdout
    subprocess.run([sys.executable, "-m", "slugline.cli", "migrate"], env=env, check=True, cwd=tmp_path,
                   capture_output=True, timeout=120)
    assert (tmp_path / "w.db").stat().st_size > 0
