"""A PostgreSQL server whose time zone is not UTC still reads back every moment the API takes
(issue 30, item 4): ``timestamptz`` values come back in the session's zone, where the first and
last hours of Python's dates (years 1 to 9999 in UTC) would fall outside them, an error on every
read of the row. ``store.db`` sets each session to UTC."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, text

from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit, db
from store import request_queries as queries
from store import requests as store
from tests.conftest import new_org

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
