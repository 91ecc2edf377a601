"""Database engine and sessions (SQLite file by default, PostgreSQL by DATABASE_URL).

SQLite is shared by several processes (API, worker), so it runs in WAL mode with a busy timeout,
and write transactions start with ``BEGIN IMMEDIATE``: a deferred transaction that reads and then
writes can fail at once with "database is locked" when another process wrote in between.

Files are the owner's only: every process starts with ``keep_files_private`` (umask 0o077, the data
directory 0700), and the SQLite file is made 0600 before SQLite opens it, so its ``-wal`` and
``-shm`` (which SQLite creates with the database's mode) are 0600 too, whatever the umask.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlmodel import Session

P = ParamSpec("P")
T = TypeVar("T")
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# SQLite's lower() folds ASCII only; this one folds every script (used for case-insensitive search)
SQLITE_UNICODE_LOWER = "mandatum_lower"


def _unicode_lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def utcnow() -> datetime:
    """Aware UTC; SQLModel's UTCDateTime columns refuse naive values."""
    return datetime.now(UTC)


def aware_utc(moment: datetime) -> datetime:
    """A stored time as aware UTC: SQLite returns the UTC it was given without its zone."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


PRIVATE_UMASK = 0o077


def keep_files_private(var_dir: Path | None = None) -> None:
    """From now on this process creates files 0600 and directories 0700 (the database, its WAL,
    logs, the outbox: personal data and secrets), and ``var_dir`` is made 0700. Called first by the
    API, the worker, every ``mandatum`` command and ``make run``."""
    os.umask(PRIVATE_UMASK)
    if var_dir is not None:
        var_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        restrict(var_dir, 0o700)


def restrict(path: Path, mode: int) -> None:
    """Take group and other access away from a file or directory of ours made before (by an older
    version, or a wider umask). Never on a shared directory (sticky bit, like /tmp) or another's."""
    info = path.stat()
    if info.st_uid == os.geteuid() and not info.st_mode & stat.S_ISVTX and stat.S_IMODE(info.st_mode) & 0o077:
        path.chmod(mode)


def _private_sqlite_file(database: str) -> None:
    path = Path(database)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # an empty file is an empty database. Never open one that exists: closing any descriptor of
    # a file drops every POSIX lock this process holds on it, and SQLite's connections of this
    # process rely on theirs (without them another process's last close deletes the WAL in use)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for name in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if name.exists():
            restrict(name, 0o600)


def _utc_session(dbapi_conn: Any, _record: Any) -> None:
    """PostgreSQL reads a ``timestamptz`` back in the session's time zone. In UTC every moment we
    take (years 1 to 9999 in UTC, ``wire.dates``) reads back as written; in a server's zone east or
    west of it, the first or last hours of that range would fall outside Python's dates (an error on
    every read of the row). Set outside a transaction, so that no rollback undoes it."""
    autocommit = dbapi_conn.autocommit
    dbapi_conn.autocommit = True
    with dbapi_conn.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'UTC'")
    dbapi_conn.autocommit = autocommit


def make_engine(url: str, **kwargs: Any) -> Engine:
    # a statement's parameters (contacts, hashes, sealed secrets) never in a log line or in the text
    # of a database error, which reaches the logs with its traceback (core.observe.logs)
    kwargs.setdefault("hide_parameters", True)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        kwargs.setdefault("pool_size", 20)
        kwargs.setdefault("max_overflow", 20)
        engine = create_engine(url, **kwargs)
        if engine.dialect.name == "postgresql":
            event.listen(engine, "connect", _utc_session, insert=True)
        ping_when_idle(engine, PING_AFTER_IDLE_SECONDS)
        return engine
    if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
        _private_sqlite_file(parsed.database)
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=20, **kwargs
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see module docstring)
        dbapi_conn.create_function(SQLITE_UNICODE_LOWER, 1, _unicode_lower, deterministic=True)
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("sqlite_immediate", False)
        # on the driver's connection: through Core's execution it cost more than the statement
        conn.connection.driver_connection.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


# A pooled PostgreSQL connection unused this long is checked before it is handed out again.
PING_AFTER_IDLE_SECONDS = 10.0


def ping_when_idle(engine: Engine, after: float) -> None:
    """Before a pooled connection that sat unused ``after`` seconds or more is handed out, ask the
    server ``SELECT 1``; a connection that no longer answers (the server restarted, a proxy
    dropped it) is replaced by a fresh one and the caller never sees it.

    ``pool_pre_ping`` did that on every checkout: a round trip before every statement of the
    verification's hot path, measured on 2026-11-25 as a fifth of its CPU on PostgreSQL (two API
    processes: 159 verifications/s without the pings, 129 with them). A connection in steady use
    is not pinged; if the server goes away under load, the first statement on each connection
    fails, SQLAlchemy recognizes the disconnect and drops the pool's other connections with it,
    which is what the pings would have found a moment later anyway."""

    @event.listens_for(engine, "checkin")
    def _idle_from(_dbapi_conn: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < after:
            return  # new, or in steady use
        try:
            cursor = dbapi_conn.cursor()
            try:
                cursor.execute("SELECT 1")
            finally:
                cursor.close()
            dbapi_conn.rollback()  # the ping's own transaction, not the caller's
        except Exception as exc:  # the pool drops this connection and checks out another
            raise DisconnectionError(f"an idle pooled connection no longer answers: {exc}") from exc


def upsert_insert(dialect_name: str) -> Any:
    """The dialect's INSERT construct, which has ``on_conflict_do_nothing`` (SQLite, PostgreSQL)."""
    return sqlite_insert if dialect_name == "sqlite" else pg_insert


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as session:
        yield session


_write_binds: weakref.WeakKeyDictionary[Engine, tuple[Engine, threading.RLock]] = weakref.WeakKeyDictionary()
_write_binds_lock = threading.Lock()


def _write_bind(engine: Engine) -> tuple[Engine, AbstractContextManager[object]]:
    """The bind and lock for write transactions, made once per engine.

    On SQLite, writers of one process queue on a lock instead of on SQLite's busy handler, which
    sleeps in growing steps and turns contention into long latency tails.
    """
    if not is_sqlite(engine):
        return engine, nullcontext()
    with _write_binds_lock:
        found = _write_binds.get(engine)
        if found is None:
            found = (engine.execution_options(sqlite_immediate=True), threading.RLock())
            _write_binds[engine] = found
    return found


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """A transaction that commits on success and rolls back on any exception."""
    bind, lock = _write_bind(engine)
    with lock, Session(bind, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


@contextmanager
def write_connection(engine: Engine) -> Iterator[Connection]:
    """A Core transaction (no ORM session) with the same locking as ``write_session``: for hot
    single-statement writes that need no unit of work."""
    bind, lock = _write_bind(engine)
    with lock, bind.begin() as conn:
        yield conn


async def run_db(engine: Engine, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a short synchronous call that uses ``engine`` (and pure CPU work around it) from async code.

    On PostgreSQL it goes to a thread, so network round trips never stall the event loop. On SQLite
    it runs on the event loop itself: the database is a local file, a hot call (the replay guard, a
    verification) takes well under a few milliseconds, and a thread hop costs more than that work
    saves: measured on the 2-core machine, about 0.4 ms of CPU per hop, and under the GIL a thread
    brings no parallelism anyway. Writers of this process still queue on the write lock, which
    only calls from other threads (workflow starts, long reads) can hold, and never for long.
    Long work (rendering a PDF, a request creation with its group commit) keeps ``asyncio.to_thread``.
    """
    if is_sqlite(engine):
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)


class WouldBlock(Exception):
    """Work running on the event loop (``on_the_loop``) needed the database: run it on a thread."""


_on_the_loop: ContextVar[bool] = ContextVar("store.db.on_the_loop", default=False)


@contextmanager
def on_the_loop() -> Iterator[None]:
    """Work that must not wait for a database round trip, because it runs on the event loop with
    a network database (PostgreSQL): what would read the database (a cache's miss) raises
    ``WouldBlock`` instead, and the caller runs the work again on a thread (``run_db``)."""
    token = _on_the_loop.set(True)
    try:
        yield
    finally:
        _on_the_loop.reset(token)


def database_allowed() -> None:
    """Called before a cache falls back to the database: ``WouldBlock`` inside ``on_the_loop``."""
    if _on_the_loop.get():
        raise WouldBlock


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def migrate(url: str) -> None:
    """Bring the schema to the newest revision (idempotent)."""
    command.upgrade(alembic_config(url), "head")
