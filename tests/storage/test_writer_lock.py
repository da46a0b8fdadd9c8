"""`WriterLock` where `fcntl` does not exist (Windows): the module imports, and the lock still keeps a second writer
out, through msvcrt's byte-range lock (simulated here over flock, with Windows' errors) or, with neither, the thread
lock alone."""

from __future__ import annotations

import errno
import fcntl
import importlib.util
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from slugline.storage import db


def _fake_msvcrt() -> types.ModuleType:
    """msvcrt's `locking` as Windows behaves: LK_NBLCK fails with EACCES while another open file holds the lock."""
    fake = types.ModuleType("msvcrt")
    fake.LK_UNLCK, fake.LK_LOCK, fake.LK_NBLCK = 0, 1, 2  # type: ignore[attr-defined]
    calls: list[int] = []

    def locking(fd: int, mode: int, nbytes: int) -> None:
        assert nbytes == 1
        calls.append(mode)
        if mode == fake.LK_UNLCK:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return
        assert mode == fake.LK_NBLCK  # never msvcrt's own 10-second wait
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OSError(errno.EACCES, "Permission denied") from None

    fake.locking = locking  # type: ignore[attr-defined]
    fake.calls = calls  # type: ignore[attr-defined]
    return fake


@pytest.fixture
def without_fcntl(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(sys.modules, "fcntl", None)  # `import fcntl` raises ImportError, as on Windows
    yield


def _fresh_db() -> types.ModuleType:
    """`slugline.storage.db` imported anew, as a copy (the one the rest of the tests use stays as it is)."""
    spec = importlib.util.find_spec("slugline.storage.db")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _two_processes(module: types.ModuleType, path: Path) -> tuple[db.WriterLock, db.WriterLock]:
    """Two locks on one file, each with its own open file, as two worker processes have."""
    first, second = module.WriterLock(path), module.WriterLock(path)
    return first, second


def test_windows_lock_keeps_out_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, without_fcntl: None
) -> None:
    fake = _fake_msvcrt()
    monkeypatch.setitem(sys.modules, "msvcrt", fake)
    windows = _fresh_db()
    assert windows._fcntl is None and windows._msvcrt is fake
    first, second = _two_processes(windows, tmp_path / "slugline.db")
    assert first.acquire_now()
    assert not second.acquire_now()  # held by the other "process"
    done = threading.Event()

    def waits() -> None:
        with second:
            done.set()

    waiter = threading.Thread(target=waits)
    waiter.start()
    assert not done.wait(0.1)  # waits while the first holds it
    first.release()
    assert done.wait(5)
    waiter.join(5)
    assert first.acquire_now()
    first.release()
    assert fake.LK_UNLCK in fake.calls


def test_without_any_os_lock_the_thread_lock_serves(tmp_path: Path, without_fcntl: None) -> None:
    bare = _fresh_db()  # no fcntl, and no msvcrt off Windows
    assert bare._fcntl is None and (sys.platform == "win32" or bare._msvcrt is None)
    lock = bare.WriterLock(tmp_path / "slugline.db")
    assert lock.acquire_now()
    assert not lock.acquire_now()
    lock.release()
    assert lock.acquire_by(None)
    lock.release()


def test_posix_lock_keeps_out_another_process(tmp_path: Path) -> None:
    first, second = _two_processes(db, tmp_path / "slugline.db")
    assert first.acquire_now()
    assert not second.acquire_now()
    first.release()
    assert second.acquire_now()
    second.release()
