"""The one engine factory and session helpers, for SQLite (default) and PostgreSQL (psycopg 3)."""

from __future__ import annotations

import errno
import importlib
import ipaddress
import os
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session, sessionmaker

from slugline.settings import Settings
from slugline.storage.loopread import LoopReader, PgLoopReader
from slugline.storage.loopwrite import CommitUnknown, LoopWriter, PgLoopWriter

SQLITE_BUSY_SECONDS = 10  # how long a writer waits for another one before giving up
# While PostgreSQL is away a request fails within a few seconds (503) instead of hanging on a connect or the pool.
CONNECT_SECONDS = 3
# SQLite connections kept open per worker: as many as the thread pool runs at once (anyio's default, 40), so a
# request under load never opens one (and runs its PRAGMAs) only to close it again. A file connection is cheap.
SQLITE_POOL = 40
SQLITE_THREADS = 4
POOL_WAIT_SECONDS = 5
# The write-ahead log is copied into the database file once it holds this many pages (32 MiB at 4 KiB pages), not
# SQLite's 1,000: each checkpoint ends in an fsync, and click batches rewrite the same last pages of the clicks table
# and its index in every commit, so a longer log is copied less often and each hot page once. At the default a click
# cost more CPU in checkpoints (`benches/test_click_path.py` measures it). After a checkpoint the log file is cut
# back to WAL_KEPT_BYTES.
WAL_CHECKPOINT_PAGES = 8192
WAL_KEPT_BYTES = 64 * 1024 * 1024
# Per worker: plain connections for the writes (and deep pages) PostgreSQL answers on the event loop
# (`loopread.PgLoopReader`, which keeps its `PIPES` pipelined connections for the reads besides).
LOOP_CONNECTIONS = 8
UNAVAILABLE_MESSAGE = "the database is unavailable: try again shortly"
LOCK_POLL_SECONDS = (0.0005, 0.01)  # Windows: first and longest pause between tries of a writer lock another holds


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# The OS lock `WriterLock` takes: flock on POSIX (Linux, macOS), msvcrt's byte-range lock on Windows.
_fcntl: Any = _optional("fcntl")
_msvcrt: Any = None if _fcntl is not None else _optional("msvcrt")


def unavailable(exc: BaseException) -> bool:
    """The store is down, unreachable, read-only or full: the request may succeed later (503), it is not a bug (500).

    OperationalError is what both drivers raise for those (and for a locked SQLite file past its busy timeout);
    InterfaceError is a connection that died under us; TimeoutError is the pool waiting for a free connection;
    CommitUnknown a connection that died during a COMMIT on the event loop (`loopwrite.PgLoopWriter`)."""
    return isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError | CommitUnknown)


def normalize_url(url: str) -> str:
    """Let users write plain `postgresql://` URLs; psycopg 3 is the driver we ship."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+psycopg://" + url[len(plain) :]
    return url


# Where libpq may learn of TLS, or of the host it really connects to, other than the URL's host and `sslmode`: with
# any of them the URL is used as given.
_ELSEWHERE_KEYS = frozenset({"service", "hostaddr", "requiressl", "gssencmode", "channel_binding"})
_ELSEWHERE_ENV = ("PGSERVICE", "PGHOSTADDR", "PGREQUIRESSL", "PGGSSENCMODE", "PGCHANNELBINDING")


def plaintext_on_loopback(url: URL) -> URL:
    """A PostgreSQL URL whose every host is this machine's loopback, and which says nothing of TLS, gets
    `sslmode=allow`: a connection without TLS, or with it if the server accepts no other (`hostssl` lines).

    libpq's default, `prefer`, negotiates TLS whenever the server offers it, and Debian's server offers it on every
    TCP connection. On loopback that protects nothing (no network to listen on; whoever can read the loopback
    device can read both processes' memory), and `prefer` checks no certificate anyway, while encrypting each
    message cost a good part of a primary-key read's round trip in the worker and as much again in the server
    (`benches/pg_roundtrip.py`, `tls`). A URL or an environment that names any TLS setting (`sslmode`, `PGSSLMODE`,
    `PGSSLROOTCERT`, ...), a service, or a host address is kept as it is."""
    if url.get_backend_name() != "postgresql":
        return url
    if any(key.startswith("ssl") or key in _ELSEWHERE_KEYS for key in url.query):
        return url
    if any(os.environ.get(name) for name in _ELSEWHERE_ENV) or any(
        name.startswith("PGSSL") and value for name, value in os.environ.items()
    ):
        return url
    # As the driver reads it: a `host` in the query wins over the URL's own.
    given = url.query.get("host") or url.host or ()
    hosts = [host for entry in ([given] if isinstance(given, str) else given) for host in entry.split(",")]
    return url.update_query_dict({"sslmode": "allow"}) if hosts and all(map(_loopback, hosts)) else url


def _loopback(host: str) -> bool:
    """`host` (with or without a port, as a URL's `host` parameter may carry one) is this machine's loopback."""
    if host.startswith("["):
        host = host[1 : host.find("]")]
    elif host.count(":") == 1:
        host = host.split(":")[0]
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name, or a socket directory (no TLS there anyway)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_SECONDS * 1000}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
    cur.execute(f"PRAGMA journal_size_limit={WAL_KEPT_BYTES}")
    cur.close()


def make_engine(settings: Settings) -> Engine:
    url = normalize_url(settings.database_url)
    if url.startswith("sqlite"):
        path = settings.sqlite_path()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_SECONDS},
            pool_size=SQLITE_POOL,
            max_overflow=SQLITE_POOL,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(
        plaintext_on_loopback(make_url(url)),
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        pool_pre_ping=True,
        pool_timeout=POOL_WAIT_SECONDS,
        connect_args={"connect_timeout": CONNECT_SECONDS},
    )


class WriterLock:
    """One writer at a time for an SQLite file, across the threads of a process and the processes (workers) that
    share the file: a thread lock, then an OS lock (flock; on Windows msvcrt's) on a file beside the database.
    Writers of every worker queue on it and are handed the file the moment it is free, where SQLite's own busy
    handler would have them sleep and try again (up to 100 ms a try): with two workers writing, that sleeping had
    made creates slower than with one. SQLite still guards the file itself; writers that do not take this lock (the
    click flusher) only wait on the file as before."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(path.name + "-writer")
        self._thread = threading.Lock()
        self._fd = -1
        self._pid = 0

    def _file(self) -> int:
        """This process's descriptor of the lock file (a forked worker opens its own: flock locks are per open)."""
        if self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            self._pid = os.getpid()
        return self._fd

    def __enter__(self) -> None:
        self.acquire_by(None)

    def acquire_by(self, deadline: float | None) -> bool:
        """The lock, waiting for it until `deadline` (`time.monotonic()`; None: for as long as it takes); False when
        another thread of this process still holds it then. Another process's writer is waited for to its end (its
        write is short; `LoopWriter` stops waiting for the answer at the deadline, and gives the lock back if it
        comes later)."""
        if deadline is None:
            self._thread.acquire()
        elif not self._thread.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return False
        elif time.monotonic() >= deadline:
            self._thread.release()
            return False
        try:
            _lock_file(self._file(), wait=True)
        except BaseException:
            self._thread.release()
            raise
        return True

    def __exit__(self, *_: object) -> None:
        self.release()

    def acquire_now(self) -> bool:
        """The lock if no thread or process holds it; False at once otherwise."""
        if not self._thread.acquire(blocking=False):
            return False
        try:
            taken = _lock_file(self._file(), wait=False)
        except BaseException:
            self._thread.release()
            raise
        if not taken:
            self._thread.release()
        return taken

    def release(self) -> None:
        _unlock_file(self._fd)
        self._thread.release()


def _lock_file(fd: int, wait: bool) -> bool:
    """An exclusive OS lock on the open file `fd`, waiting for it if `wait`; False when another holds it (and not
    `wait`). Where the OS offers neither lock, the thread lock alone serves: SQLite still guards the file."""
    if _fcntl is not None:
        try:
            _fcntl.flock(fd, _fcntl.LOCK_EX if wait else _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    if _msvcrt is None:
        return True
    # Windows: the first byte, locked without waiting and tried again after a pause (msvcrt's own waiting lock gives
    # up after 10 s, and tries once a second). Another process's writer holds it for one short write.
    pause, longest = LOCK_POLL_SECONDS
    while True:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            _msvcrt.locking(fd, _msvcrt.LK_NBLCK, 1)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EDEADLK):
                raise
            if not wait:
                return False
        time.sleep(pause)
        pause = min(pause * 2, longest)


def _unlock_file(fd: int) -> None:
    if _fcntl is not None:
        _fcntl.flock(fd, _fcntl.LOCK_UN)
    elif _msvcrt is not None:
        os.lseek(fd, 0, os.SEEK_SET)
        _msvcrt.locking(fd, _msvcrt.LK_UNLCK, 1)


class Database:
    """Engine plus session factory; one per process."""

    def __init__(self, settings: Settings) -> None:
        self.engine = make_engine(settings)
        # Threads that run requests' database work at once, per worker. Never more than the pool keeps connections
        # for (a thread past it would open and close a connection of its own every time). On SQLite the work is
        # CPU under the GIL: past a few threads they only trade the GIL, and concurrent lists of links were served
        # fewer a second with every thread added past two. Four still leave room for requests that wait (for
        # the write lock, a password hash) without stalling the reads. PostgreSQL work waits on the network, so
        # more threads help there.
        sqlite = self.engine.dialect.name == "sqlite"
        self.threads = settings.db_threads or (SQLITE_THREADS if sqlite else settings.db_pool_size)
        self.threads = min(self.threads, SQLITE_POOL if sqlite else settings.db_pool_size)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        path = settings.sqlite_path() if sqlite else None
        file = path is not None and path.name != ":memory:"
        self._writer: AbstractContextManager[object] = threading.Lock() if sqlite else nullcontext()
        # Small reads answered on the event loop (see `slugline.storage.loopread`): SQLite files and PostgreSQL.
        self.now: LoopReader | PgLoopReader | None = None
        # Small writes made on the event loop (see `slugline.storage.loopwrite`): SQLite files and PostgreSQL.
        self.write_now: LoopWriter | PgLoopWriter | None = None
        if path is not None and file:
            lock = WriterLock(path)
            self._writer = lock
            self.now = LoopReader(path, self.engine.dialect)
            self.write_now = LoopWriter(path, self.engine.dialect, lock)
        elif self.engine.dialect.name == "postgresql":
            url = self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
            self.now = PgLoopReader(url, self.engine.dialect, LOOP_CONNECTIONS)
            self.write_now = PgLoopWriter(self.now)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session whose transaction commits on success and rolls back on error."""
        with self.sessions.begin() as session:
            yield session

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A session for a write transaction. On SQLite, one at a time, queued on a lock (`WriterLock` for a file,
        shared by every worker): the file takes one writer anyway, and a writer that finds it taken sleeps in
        SQLite's busy handler (up to 100 ms a try) where a lock hands over at once."""
        with self._writer, self.session() as session:
            yield session

    def reading(self) -> Connection:
        """A connection for reads outside a transaction (each statement sees what was committed when it ran, as in
        any transaction at READ COMMITTED): on PostgreSQL no BEGIN and ROLLBACK round trips around them."""
        return self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")

    async def close_loop(self) -> None:
        """Closes the connections the loop reader opened for the running event loop (an app on it is stopping)."""
        if isinstance(self.now, PgLoopReader):
            await self.now.aclose()

    def dispose(self) -> None:
        if self.now is not None:
            self.now.close()
        if isinstance(self.write_now, LoopWriter):
            self.write_now.close()
        self.engine.dispose()
