"""Failed logins counted per key, atomically and before the password is checked (issue 30, item 3).

``take`` counts one attempt against every key it is given, in one transaction that holds the
keys' rows (``SELECT ... FOR UPDATE`` in key order on PostgreSQL, so two takes never deadlock; the
one write transaction of SQLite, ``BEGIN IMMEDIATE``, elsewhere), unless one of them is locked:
then nothing is counted and the caller is told until when. So of any number of attempts at once,
only as many as the threshold allows get to have their password checked; the others wait for the
lock, checked or not. ``give_back`` takes an attempt's count back when it was no failure (the
right password, or no check made).

What a key names, and each threshold, is the caller's (``services.logins``); here a key is a
string, and a row of an e-mail address carries the address's keyed hash only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, delete, select, update

from store.db import upsert_insert, write_connection
from store.tables import LoginThrottle

_T = LoginThrottle.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Limit:
    key: str
    threshold: int  # failures counted before the key is locked
    address: str | None = None  # the keyed hash of the e-mail address the key is about


@dataclass(frozen=True)
class Backoff:
    """How a count becomes a lock, and how it is forgiven: from the ``threshold``-th failure on,
    every failure locks the key for ``first_lock``, then twice that, ... at most ``max_lock``; one
    failure is forgiven for each ``forgive_every`` without one, and all after ``forget_after``."""

    first_lock: timedelta
    max_lock: timedelta
    forgive_every: timedelta
    forget_after: timedelta

    def current(self, failures: int, last_failure_at: datetime, now: datetime) -> int:
        quiet = now - last_failure_at
        if quiet >= self.forget_after:
            return 0
        return max(0, failures - int(quiet / self.forgive_every)) if quiet > timedelta(0) else failures

    def lock(self, failures: int, threshold: int) -> timedelta | None:
        if failures < threshold:
            return None
        return min(self.first_lock * 2 ** min(failures - threshold, 30), self.max_lock)


def take(engine: Engine, limits: Sequence[Limit], now: datetime, backoff: Backoff) -> datetime | None:
    """Count one attempt against every limit, or, when any of them is locked, count nothing (and
    store nothing: a locked client cannot fill the table) and answer the end of the longest lock."""
    ordered = sorted({limit.key: limit for limit in limits}.values(), key=lambda limit: limit.key)
    with write_connection(engine) as conn:
        rows = _held(conn, ordered)
        if len(rows) < len(ordered) and _lock_end(rows, now) is None:
            _add_missing(conn, [limit for limit in ordered if limit.key not in rows], now)
            rows = _held(conn, ordered)
        until = _lock_end(rows, now)
        if until is not None:
            return until
        for limit in ordered:
            row = rows[limit.key]
            failures = backoff.current(row.failures, row.last_failure_at, now) + 1
            lock = backoff.lock(failures, limit.threshold)
            conn.execute(
                update(_T)
                .where(_T.c.key == limit.key)
                .values(failures=failures, last_failure_at=now, locked_until=now + lock if lock else None)
            )
    return None


def _held(conn: Connection, limits: Sequence[Limit]) -> dict[str, Any]:
    """The limits' rows that exist, locked to the transaction's end, in key order."""
    keys = [limit.key for limit in limits]
    found = conn.execute(select(_T).where(_T.c.key.in_(keys)).order_by(_T.c.key).with_for_update())
    return {row.key: row for row in found}


def _add_missing(conn: Connection, limits: Sequence[Limit], now: datetime) -> None:
    """Rows for the limits first counted now (another take may add one at the same moment)."""
    fresh = [
        {
            "key": limit.key,
            "address": limit.address,
            "failures": 0,
            "last_failure_at": now,
            "locked_until": None,
        }
        for limit in limits
    ]
    conn.execute(upsert_insert(conn.dialect.name)(_T).values(fresh).on_conflict_do_nothing())


def _lock_end(rows: dict[str, Any], now: datetime) -> datetime | None:
    locks = [r.locked_until for r in rows.values() if r.locked_until is not None and r.locked_until > now]
    return max(locks) if locks else None


def give_back(engine: Engine, keys: Sequence[str]) -> None:
    """An attempt that was no failure: its count taken back and the keys' locks lifted (while it
    was being checked its own count is what locked them: nobody else was counted meanwhile)."""
    with write_connection(engine) as conn:
        conn.execute(
            update(_T)
            .where(_T.c.key.in_(sorted(set(keys))), _T.c.failures > 0)
            .values(failures=_T.c.failures - 1, locked_until=None)
        )


def forget_address(conn: Connection, address: str) -> None:
    """Every count about the e-mail address (its password was just set from a link it was sent)."""
    conn.execute(delete(_T).where(_T.c.address == address))


def purge(engine: Engine, now: datetime, backoff: Backoff) -> int:
    """Drop the rows whose failures are all forgotten and that lock nothing."""
    quiet_since = now - backoff.forget_after
    with write_connection(engine) as conn:
        gone = conn.execute(
            delete(_T).where(
                _T.c.last_failure_at <= quiet_since,
                (_T.c.locked_until.is_(None)) | (_T.c.locked_until <= now),
            )
        )
        return int(gone.rowcount)
