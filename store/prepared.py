"""Hot statements on the DBAPI cursor: a Core statement compiled once per dialect, then run with
nothing of SQLAlchemy's execution machinery around it.

Executing a Core statement costs about 50 µs of CPU before the database sees it (the execution
context, events, cache lookups, result set-up), several times what SQLite then takes to run a
short statement: measured on the 2-core machine, six short statements in one transaction took
0.40 ms through ``Connection.execute`` and 0.12 ms on the cursor, the transaction's own 0.10 ms
included. The verification's hot path (``store.verifications``, ``store.audit``,
``store.guards``) runs its statements through ``Prepared``.

A ``Prepared`` keeps the statement as built with Core (so the SQL, the dialect's quoting, its
``ON CONFLICT``, ``RETURNING`` and ``FOR UPDATE`` stay SQLAlchemy's) and, per dialect, what
executing it needs: the SQL text, which parameter goes where (SQLite's ``?`` in order,
psycopg's ``%(name)s`` by name), each parameter's bind processor (a JSON column's encoding, a
datetime's form on SQLite) and, for a SELECT, each column's result processor. It runs on the
DBAPI connection of a SQLAlchemy ``Connection``, so inside that connection's transaction (the
write lock and ``BEGIN IMMEDIATE`` of ``store.db.write_connection`` included), or on a pooled
DBAPI connection of its own (``read_one``).

A JSON column's value may be given already encoded (``Encoded``, JSON text such as the JCS bytes
an audit record's data was signed over): it is stored as it is instead of encoded again.

What it refuses at compile time, rather than run differently from Core: a statement whose
parameters SQLAlchemy would fill from Python-side column defaults (every value must be given), an
expanding ``IN`` parameter, and a paramstyle other than ``qmark`` and ``pyformat``. Errors are
the driver's own (``sqlite3`` or ``psycopg`` exceptions), not SQLAlchemy's wrappers: no caller
on these paths tells them apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, Connection, Engine
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.sql.elements import ClauseElement

_MISSING = object()


class Encoded(str):
    """A JSON column's value as JSON text already, stored as it is (see the module docstring)."""


def _or_encoded(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A JSON column's bind processor that passes an ``Encoded`` value through unchanged."""

    def bind(value: Any) -> Any:
        return str(value) if type(value) is Encoded else process(value)

    return bind


@dataclass(frozen=True)
class _Param:
    name: str  # in the SQL text
    key: str  # in the caller's mapping
    default: Any  # the bound value when the statement carries one, else _MISSING
    process: Callable[[Any], Any] | None


class _Compiled:
    def __init__(self, statement: ClauseElement, dialect: Dialect, column_keys: list[str] | None) -> None:
        compiled: Any = statement.compile(dialect=dialect, column_keys=column_keys)
        if getattr(compiled, "insert_prefetch", None) or getattr(compiled, "update_prefetch", None):
            raise ValueError("a prepared statement takes every value from its caller: no column defaults")
        style = dialect.paramstyle
        if style not in ("qmark", "pyformat"):
            raise ValueError(f"paramstyle {style!r} is not supported by store.prepared")
        self.sql: str = compiled.string
        self.positional = style == "qmark"
        names = list(compiled.positiontup) if self.positional else list(compiled.binds)
        processors = compiled._bind_processors
        params = []
        for name in names:
            bind = compiled.binds[name]
            if bind.expanding:
                raise ValueError(f"parameter {name!r} expands (IN): not supported by store.prepared")
            default = _MISSING if bind.required else bind.effective_value  # a value built in
            process = processors.get(name)
            if process is not None and isinstance(bind.type, JSON):
                process = _or_encoded(process)
            params.append(_Param(name, bind.key, default, process))
        self.params = tuple(params)
        columns = getattr(compiled, "_result_columns", None) or []
        self.row: Any = None
        self.result_processors: tuple[Callable[[Any], Any] | None, ...] = ()
        if columns:
            self.row = namedtuple("Row", [c.keyname for c in columns], rename=True)  # type: ignore[misc]
            self.result_processors = tuple(c.type._cached_result_processor(dialect, None) for c in columns)

    def arguments(self, values: Mapping[str, Any]) -> Any:
        out = []
        for param in self.params:
            value = values.get(param.key, param.default)
            if value is _MISSING:
                raise KeyError(f"no value for parameter {param.key!r}")
            out.append(param.process(value) if param.process is not None else value)
        if self.positional:
            return tuple(out)
        return {param.name: value for param, value in zip(self.params, out, strict=True)}

    def row_of(self, raw: Any) -> Any:
        values = [p(v) if p is not None else v for p, v in zip(self.result_processors, raw, strict=True)]
        return self.row(*values)


class Prepared:
    """A Core statement run on the DBAPI cursor (module docstring). ``column_keys`` names the
    columns an ``insert()`` without values takes."""

    def __init__(self, statement: ClauseElement, *, column_keys: list[str] | None = None) -> None:
        self.statement = statement
        self.column_keys = column_keys
        self._by_dialect: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _compiled(self, dialect: Dialect) -> _Compiled:
        found = self._by_dialect.get(dialect.name)
        if found is None:
            with self._lock:
                found = self._by_dialect.get(dialect.name)
                if found is None:
                    found = self._by_dialect[dialect.name] = _Compiled(
                        self.statement, dialect, self.column_keys
                    )
        return found

    def send(self, conn: Connection, values: Mapping[str, Any] | None = None) -> Result:
        """Execute in ``conn``'s transaction (begun here if it has none yet, as Core's ``execute``
        would begin it); what it returned is read when first asked for. In a ``pipeline`` the
        statement is only queued: asking for its rows sends everything queued so far and waits for
        them (one round trip), and only a statement that returns rows can be read there."""
        compiled = self._compiled(conn.dialect)
        if not conn.in_transaction():
            conn.begin()
        cursor = conn.connection.cursor()
        try:
            cursor.execute(compiled.sql, compiled.arguments(values or {}))
        except BaseException:
            cursor.close()
            raise
        result = Result(compiled, cursor)
        if not conn.info.get(_PIPELINED):
            result.read()  # nothing left in progress on the connection (SQLite's statements)
        return result

    def run(self, conn: Connection, values: Mapping[str, Any] | None = None) -> Result:
        """``send``, and what it returned read at once."""
        result = self.send(conn, values)
        result.read()
        return result

    def read_one(self, engine: Engine, values: Mapping[str, Any] | None = None) -> Any:
        """The first row of a SELECT (or None), on a pooled connection of its own, released before
        returning: for a read outside any transaction of the caller."""
        compiled = self._compiled(engine.dialect)
        raw = engine.raw_connection()
        # one statement needs no transaction: on PostgreSQL, autocommit saves the BEGIN and the
        # ROLLBACK around it (two round trips of three); psycopg sets it on its side only
        autocommit = engine.dialect.name == "postgresql"
        try:
            if autocommit:
                raw.dbapi_connection.autocommit = True  # type: ignore[union-attr]
            cursor = raw.cursor()
            try:
                cursor.execute(compiled.sql, compiled.arguments(values or {}))
                found = cursor.fetchone()
            finally:
                cursor.close()
        finally:
            if autocommit:
                try:
                    raw.dbapi_connection.autocommit = False  # type: ignore[union-attr]
                except Exception:  # a broken connection: never back to the pool as it is
                    raw.invalidate()
            raw.close()  # back to the pool, which ends any transaction the read began
        return compiled.row_of(found) if found is not None else None


class Result:
    """What a statement returned: its rows (processed, with their columns' names) and rowcount,
    read from its cursor when first asked for (``Prepared.send``)."""

    def __init__(self, compiled: _Compiled, cursor: Any) -> None:
        self._compiled, self._cursor = compiled, cursor
        self._rows: Sequence[Any] = ()
        self._rowcount = -1

    def read(self) -> None:
        cursor = self._cursor
        if cursor is None:
            return
        self._cursor = None
        try:
            # a statement that returns rows (a SELECT, a RETURNING) is read by what it compiled
            # to: in a psycopg pipeline its cursor has no description until it is fetched
            self._rows = cursor.fetchall() if self._compiled.row is not None else []
            self._rowcount = cursor.rowcount
        finally:
            cursor.close()

    @property
    def rowcount(self) -> int:
        self.read()
        return self._rowcount

    def first(self) -> Any:
        self.read()
        return self._compiled.row_of(self._rows[0]) if self._rows else None

    def one(self) -> Any:
        self.read()
        if len(self._rows) != 1:
            raise LookupError(f"expected one row, got {len(self._rows)}")
        return self._compiled.row_of(self._rows[0])


@contextmanager
def pipeline(conn: Connection) -> Iterator[bool]:
    """``conn``'s transaction in psycopg's pipeline mode, on PostgreSQL: statements ``send`` are
    queued and go to the server together when a result is first read or the transaction commits
    (``conn.commit()`` inside the block: the queued statements and the COMMIT in one round trip).
    Elsewhere nothing changes: each statement runs, and is read, when sent. Yields whether it
    pipelines."""
    if conn.dialect.name != "postgresql":
        yield False
        return
    if not conn.in_transaction():
        conn.begin()
    with conn.connection.dbapi_connection.pipeline():  # type: ignore[union-attr]
        conn.info[_PIPELINED] = True
        try:
            yield True
        finally:
            conn.info.pop(_PIPELINED, None)


_PIPELINED = "store.prepared.pipelined"


class LoopReads:
    """One-statement reads made on the event loop itself, over psycopg's async connections
    (PostgreSQL): no thread hop and no pooled connection's check-out for the verification's first
    read. ``size`` connections in autocommit per event loop, opened on first use and kept; a read
    waits for a free one. A connection that fails is closed, and the error is the caller's (which
    can read through the engine instead). Connections belong to the loop that opened them: on
    another loop (a test's next one) a fresh set is opened."""

    def __init__(self, engine: Engine, size: int = 8) -> None:
        self._dialect = engine.dialect
        self._conninfo = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._size = size
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: list[Any] = []
        self._free: asyncio.Semaphore | None = None

    async def one(self, prepared: Prepared, values: Mapping[str, Any]) -> Any:
        """The first row of ``prepared`` (a SELECT) with ``values``, or None."""
        import psycopg  # only PostgreSQL's processes load it

        compiled = prepared._compiled(self._dialect)
        loop = asyncio.get_running_loop()
        if loop is not self._loop or self._free is None:
            self._loop, self._idle, self._free = loop, [], asyncio.Semaphore(self._size)
        async with self._free:
            conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
            try:
                async with conn.cursor() as cursor:
                    await cursor.execute(compiled.sql, compiled.arguments(values))
                    found = await cursor.fetchone()
            except BaseException:
                with contextlib.suppress(Exception):
                    await conn.close()
                raise
            self._idle.append(conn)
        return compiled.row_of(found) if found is not None else None
