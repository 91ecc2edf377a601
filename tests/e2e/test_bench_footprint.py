"""The footprint benchmark's own parts: the database's counters move by the rows a piece of work
writes, divided per operation; history event types are named."""

from __future__ import annotations

import psycopg
import pytest
from temporalio.api.enums.v1 import EventType

from bench import footprint
from tests.conftest import PG_AVAILABLE, _postgres_database


@pytest.fixture
def pg_url() -> str:  # type: ignore[misc]
    if not PG_AVAILABLE:
        pytest.skip("PostgreSQL is not reachable: the footprint reads its counters")
    with _postgres_database() as url:
        yield url.replace("postgresql+psycopg://", "postgresql://")


async def test_the_counters_see_what_the_work_wrote(pg_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("CREATE TABLE t (n integer, pad text)")

    async def work() -> str:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            for n in range(40):  # 40 commits, 40 rows
                await conn.execute("INSERT INTO t VALUES (%s, repeat('x', 2000))", (n,))
            await conn.execute("UPDATE t SET n = n + 1 WHERE n < 10")
            await conn.execute("DELETE FROM t WHERE n > 35")
        return "done"

    # the work's connection is closed, which flushes its statistics: no need to wait 10 s
    found, result = await footprint.measured(pg_url, "ten", 10, work, settle=1.0)
    assert result == "done"
    assert (found.operation, found.count) == ("ten", 10)
    assert found.rows_inserted == 4.0  # 40 rows over 10 operations
    assert found.rows_updated == 1.0 and found.rows_deleted == 0.4
    assert 4.2 <= found.commits <= 5.0  # 42 of the work's, and a few of the readings' own
    assert found.bytes_grown > 0


def test_history_event_types_are_named() -> None:
    assert footprint.type_name(EventType.EVENT_TYPE_MARKER_RECORDED) == "MARKER_RECORDED"
    assert footprint.type_name(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) == "WORKFLOW_TASK_COMPLETED"
