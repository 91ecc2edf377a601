"""PostgreSQL's pooled connections are checked only after they sat idle (``store.db.ping_when_idle``):
an idle connection whose server side went away is replaced before anyone uses it, while one in
steady use is handed out without a round trip."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError

from store import db


@pytest.fixture
def pg_url(db_url: str) -> str:
    if not db_url.startswith("postgresql"):
        pytest.skip("pooled connections are pinged on PostgreSQL only")
    return db_url


def _engine(url: str, idle: float, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    monkeypatch.setattr(db, "PING_AFTER_IDLE_SECONDS", idle)
    engine = db.make_engine(url, pool_size=1, max_overflow=0)
    yield engine
    engine.dispose()


@pytest.fixture
def quick(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    yield from _engine(pg_url, 0.2, monkeypatch)


@pytest.fixture
def patient(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    yield from _engine(pg_url, 3600.0, monkeypatch)


def _backend(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _terminate(url: str, pid: int) -> None:
    plain = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)


def test_an_idle_connection_whose_server_side_ended_is_replaced_unseen(quick: Engine, pg_url: str) -> None:
    first = _backend(quick)
    _terminate(pg_url, first)
    time.sleep(0.3)  # past the idle threshold: the next checkout pings, fails, reconnects
    assert _backend(quick) != first  # no error reached the caller


def test_a_connection_in_steady_use_is_not_pinged(patient: Engine, pg_url: str) -> None:
    """Without the ping the caller meets the dead connection once; the pool then starts afresh.
    (This is what a ping on every checkout used to spare, at a round trip per statement.)"""
    first = _backend(patient)
    _terminate(pg_url, first)
    with pytest.raises(OperationalError), patient.connect() as conn:
        conn.execute(text("SELECT 1"))
    assert _backend(patient) != first
