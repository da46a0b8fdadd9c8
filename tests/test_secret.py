"""The server secret: under 32 bytes it is refused with a clear message (the CLI exits 2), and the generated key
file appears whole or not at all, the same for every process that starts at once."""

from __future__ import annotations

import multiprocessing
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slugline.settings import MIN_SECRET_BYTES, Settings


def _settings(tmp_path: Path, **values: str | None) -> Settings:
    fields: dict[str, Any] = {"database_url": f"sqlite:///{tmp_path}/db/slugline.db", **values}
    return Settings(**fields)


@pytest.mark.parametrize("secret", ["", "short", "x" * (MIN_SECRET_BYTES - 1)])
def test_a_short_secret_setting_is_refused(tmp_path: Path, secret: str) -> None:
    with pytest.raises(RuntimeError, match=f"at least {MIN_SECRET_BYTES}"):
        _settings(tmp_path, secret_key=secret).secret()


@pytest.mark.parametrize("content", ["", "\n", "too-short"])
def test_a_short_key_file_is_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "secret.key").write_text(content)
    with pytest.raises(RuntimeError, match=r"secret\.key"):
        _settings(tmp_path).secret()


def test_the_cli_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    env = {**os.environ, "SLUGLINE_DATABASE_URL": f"sqlite:///{tmp_path}/s.db", "SLUGLINE_SECRET_KEY": "tiny"}
    done = subprocess.run(
        [sys.executable, "-m", "slugline.cli", "serve", "--port", "1"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "at least 32" in done.stderr and "Traceback" not in done.stderr


def _read_secret(path: str) -> bytes:
    return Settings(database_url=f"sqlite:///{path}/slugline.db", secret_key=None).secret()


def test_processes_starting_together_agree_on_one_whole_key(tmp_path: Path) -> None:
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        secrets = pool.map(_read_secret, [str(tmp_path)] * 32)
    assert len(set(secrets)) == 1 and len(secrets[0]) >= MIN_SECRET_BYTES
    key_file = tmp_path / "secret.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.key"]  # no temporary file left behind


def test_the_key_file_is_written_before_it_appears(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key file's name only ever points at a complete key: it is linked into place after the write."""
    seen: list[str] = []
    real_link = os.link

    def watching_link(src: str | Path, dst: str | Path) -> None:
        seen.append(Path(src).read_text())  # what the name will point at, the moment it appears
        assert not Path(dst).exists()
        real_link(src, dst)

    monkeypatch.setattr(os, "link", watching_link)
    secret = _read_secret(str(tmp_path))
    assert seen == [secret.decode()]
