"""Statements on the DBAPI cursor (``store.prepared``) write and read exactly what Core would, in
the caller's transaction, on SQLite and PostgreSQL; what they cannot run as Core would is refused
when compiled."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite

from store.db import make_engine, read_session, write_connection
from store.prepared import Encoded, Prepared, pipeline
from store.tables import IdempotencyRecord

_T = IdempotencyRecord.__table__  # type: ignore[attr-defined]
INSERT = Prepared(_T.insert(), column_keys=[c.key for c in _T.columns])
READ = Prepared(select(_T).where(_T.c.organization_id == bindparam("org"), _T.c.key == bindparam("key")))
RESTATUS = Prepared(
    update(_T)
    .where(_T.c.organization_id == bindparam("org"), _T.c.status_code == bindparam("was"))
    .values(status_code=bindparam("now"))
)


def _values(org: str) -> dict[str, object]:
    return {
        "organization_id": org,
        "key": "k-1",
        "body_hash": "0" * 64,
        "status_code": 201,
        # a JSON column: nested, non-ASCII, a null, a float and a big integer
        "response": {"data": {"name": "Zoë ✓", "n": [1, 2.5, None], "big": 2**60}, "ok": True},
        "created_at": datetime(2026, 11, 25, 7, 5, 21, 123456, tzinfo=UTC),
    }


def test_a_prepared_insert_writes_what_the_orm_reads_back(engine: Engine) -> None:
    org = uuid.uuid4().hex[:24]
    values = _values(org)
    with write_connection(engine) as conn:
        assert INSERT.run(conn, values).rowcount == 1
    with read_session(engine) as session:
        row = session.get(IdempotencyRecord, (org, "k-1"))
    assert row is not None
    assert row.response == values["response"]
    assert row.created_at == values["created_at"]
    assert row.status_code == 201


def test_an_encoded_json_value_is_stored_as_given(engine: Engine) -> None:
    """A JSON column's ``Encoded`` text is stored as it is (not encoded again, so not as a JSON
    string either) and reads back as the value it encodes; a plain ``str`` is still a JSON string."""
    org = uuid.uuid4().hex[:24]
    text = '{"data":{"n":[1,2.5,null],"name":"Zoë ✓"},"ok":true}'
    with write_connection(engine) as conn:
        INSERT.run(conn, {**_values(org), "response": Encoded(text)})
        INSERT.run(conn, {**_values(org), "key": "k-2", "response": text})
    with engine.connect() as conn:
        raw = conn.execute(
            select(_T.c.response.cast(String)).where(_T.c.organization_id == org).order_by(_T.c.key)
        ).scalars()
        assert raw.first() == text
    with read_session(engine) as session:
        encoded, plain = (session.get(IdempotencyRecord, (org, key)) for key in ("k-1", "k-2"))
    assert encoded is not None and encoded.response == {
        "data": {"n": [1, 2.5, None], "name": "Zoë ✓"},
        "ok": True,
    }
    assert plain is not None and plain.response == text


def test_a_prepared_select_reads_what_core_reads(engine: Engine) -> None:
    org = uuid.uuid4().hex[:24]
    with write_connection(engine) as conn:
        INSERT.run(conn, _values(org))
    with engine.connect() as conn:
        core = conn.execute(READ.statement, {"org": org, "key": "k-1"}).one()  # type: ignore[call-overload]
    found = READ.read_one(engine, {"org": org, "key": "k-1"})
    assert tuple(found) == tuple(core)
    assert found.created_at == datetime(2026, 11, 25, 7, 5, 21, 123456, tzinfo=UTC)
    assert found.response["data"]["big"] == 2**60
    assert READ.read_one(engine, {"org": org, "key": "absent"}) is None


def test_prepared_statements_run_in_the_callers_transaction(engine: Engine) -> None:
    org = uuid.uuid4().hex[:24]
    with pytest.raises(RuntimeError), write_connection(engine) as conn:
        INSERT.run(conn, _values(org))
        assert READ.run(conn, {"org": org, "key": "k-1"}).one().status_code == 201  # seen inside
        raise RuntimeError("roll back")
    assert READ.read_one(engine, {"org": org, "key": "k-1"}) is None  # rolled back with it
    with write_connection(engine) as conn:
        INSERT.run(conn, _values(org))
        assert RESTATUS.run(conn, {"org": org, "was": 201, "now": 409}).rowcount == 1
        assert RESTATUS.run(conn, {"org": org, "was": 201, "now": 410}).rowcount == 0
    assert READ.read_one(engine, {"org": org, "key": "k-1"}).status_code == 409


def test_a_missing_value_is_refused_before_the_database_sees_it(engine: Engine) -> None:
    values = _values(uuid.uuid4().hex[:24])
    del values["body_hash"]
    with pytest.raises(KeyError, match="body_hash"), write_connection(engine) as conn:
        INSERT.run(conn, values)


_META = MetaData()
_DEFAULTED = Table(
    "defaulted",
    _META,
    Column("id", String, primary_key=True),
    Column("n", Integer, default=lambda: 7),  # filled by SQLAlchemy's execution, which we skip
)


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.psycopg.dialect()], ids=["sqlite", "pg"])
def test_what_only_core_would_fill_in_is_refused_when_compiled(dialect: object) -> None:
    insert = Prepared(_DEFAULTED.insert(), column_keys=["id"])
    with pytest.raises(ValueError, match="column defaults"):
        insert._compiled(dialect)  # type: ignore[arg-type]
    expanding = Prepared(select(_DEFAULTED).where(_DEFAULTED.c.id.in_(bindparam("ids", expanding=True))))
    with pytest.raises(ValueError, match="expands"):
        expanding._compiled(dialect)  # type: ignore[arg-type]


def test_values_built_into_a_statement_are_bound_with_it(engine: Engine) -> None:
    org = uuid.uuid4().hex[:24]
    with write_connection(engine) as conn:
        INSERT.run(conn, _values(org))
    later = Prepared(
        select(_T.c.key).where(
            _T.c.organization_id == bindparam("org"),
            _T.c.created_at < datetime(2026, 11, 25, 8, tzinfo=UTC) + timedelta(days=1),  # a literal
        )
    )
    assert later.read_one(engine, {"org": org}).key == "k-1"


def test_statements_sent_in_a_pipeline_commit_and_roll_back_with_it(engine: Engine) -> None:
    """``send`` in a ``pipeline`` (psycopg's pipeline mode on PostgreSQL; plain execution elsewhere):
    the rows written are the transaction's, rolled back with it or committed by ``conn.commit()``
    inside the block, and a row-returning statement sent among them reads its own rows."""
    org = uuid.uuid4().hex[:24]
    rows = [{**_values(org), "key": f"k-{i}", "status_code": 200 + i} for i in range(5)]
    with pytest.raises(RuntimeError), write_connection(engine) as conn, pipeline(conn):
        for row in rows:
            INSERT.send(conn, row)
        raise RuntimeError("rolled back")
    assert READ.read_one(engine, {"org": org, "key": "k-0"}) is None
    with write_connection(engine) as conn, pipeline(conn):
        for row in rows[:3]:
            INSERT.send(conn, row)
        seen = READ.send(conn, {"org": org, "key": "k-2"})
        for row in rows[3:]:
            INSERT.send(conn, row)
        assert seen.one().status_code == 202  # read back inside, before the commit
        conn.commit()
    found = [READ.read_one(engine, {"org": org, "key": f"k-{i}"}) for i in range(5)]
    assert [r.status_code for r in found] == [200, 201, 202, 203, 204]
    assert all(r.response == rows[0]["response"] for r in found)


def test_a_read_leaves_its_pooled_connection_transactional(engine: Engine) -> None:
    """``read_one`` runs its statement without a transaction (autocommit on PostgreSQL) and gives
    the connection back as it found it: a write on that same connection still rolls back."""
    if engine.dialect.name != "postgresql":
        pytest.skip("autocommit is set for PostgreSQL's reads only")
    one = make_engine(engine.url.render_as_string(hide_password=False), pool_size=1, max_overflow=0)
    org = uuid.uuid4().hex[:24]
    try:
        assert READ.read_one(one, {"org": org, "key": "k-1"}) is None
        with pytest.raises(RuntimeError), write_connection(one) as conn:
            INSERT.run(conn, _values(org))
            raise RuntimeError("rolled back")
        assert READ.read_one(one, {"org": org, "key": "k-1"}) is None
    finally:
        one.dispose()
