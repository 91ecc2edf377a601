"""store.db's connections to PostgreSQL.

- Pooled connections are checked only after they sat idle (``store.db.ping_when_idle``): an idle
  connection whose server side went away is replaced before anyone uses it, while one in steady use
  is handed out without a round trip.
- A server whose time zone is not UTC still reads back every moment the API takes (issue 30, item
  4): ``timestamptz`` values come back in the session's zone, where the first and last hours of
  Python's dates (years 1 to 9999 in UTC) would fall outside them, an error on every read of the
  row. ``store.db`` sets each session to UTC."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError

from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit, db
from store import request_queries as queries
from store import requests as store
from tests.conftest import new_org

# --- pooled connections pinged when idle ---------------------------------------------------------


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


# --- sessions in UTC -----------------------------------------------------------------------------


FIRST = datetime(1, 1, 1, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)


@pytest.fixture(params=["Asia/Tokyo", "America/New_York"])
def zoned(
    request: pytest.FixtureRequest, db_url: str, cipher: SecretCipher, settings: Settings
) -> Iterator[Engine]:
    """An engine on a server session whose time zone is ``request.param`` (as a server configured
    for it, or a connection string asking for it, would give)."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite stores date-times as UTC text")
    engine = db.make_engine(f"{db_url}?options=-c%20TimeZone%3D{request.param}")
    audit.use_service_key(engine, cipher, settings)
    yield engine
    engine.dispose()


def test_sessions_are_in_utc_whatever_the_server_says(zoned: Engine) -> None:
    with zoned.connect() as conn:
        assert conn.execute(text("SHOW TIME ZONE")).scalar_one() == "UTC"
        conn.rollback()  # a rolled-back transaction does not undo it
        assert conn.execute(text("SHOW TIME ZONE")).scalar_one() == "UTC"


def test_the_first_and_last_moments_read_back_as_written(
    zoned: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    org = new_org(zoned, cipher, settings)
    credential = store.NewCredential("DOCUMENT", "Lease", data=[], valid_from=FIRST, valid_until=LAST)
    new = store.NewRequest(
        security_level="CONTACT",
        contacts=[store.NewContact("ana@example.com", "email")],
        credentials=[credential],
    )
    made = store.create_request(zoned, org.organization_id, new, timedelta(days=1), 1000, None, None)
    assert isinstance(made, store.RequestBundle)
    found = queries.get_request(zoned, org.organization_id, made.request.id)
    assert found is not None
    [read] = found.credentials
    assert (read.valid_from, read.valid_until) == (FIRST, LAST)
