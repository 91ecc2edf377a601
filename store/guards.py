"""Replay protection and idempotency, both in the database so every API process shares them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, func
from sqlmodel import Session, col, select

from store.db import upsert_insert, utcnow, write_connection, write_session
from store.prepared import Prepared, Result
from store.tables import CredentialRequest, IdempotencyRecord, SeenSignature


@dataclass(frozen=True)
class SignatureUse:
    """One accepted signature to remember: the key, the signature (lower-case hex), whether the
    request writes, and how long to keep it (until its timestamp leaves the acceptance window)."""

    key_id: str
    signature: str
    is_write: bool
    keep: timedelta


_SEEN = SeenSignature.__table__  # type: ignore[attr-defined]
_EARLIER_USE = Prepared(
    select(_SEEN.c.is_write).where(
        _SEEN.c.api_key_id == bindparam("key"), _SEEN.c.signature == bindparam("signature")
    )
)
_first_use: dict[str, Prepared] = {}  # the INSERT ... ON CONFLICT DO NOTHING of each dialect, built once


def _first_use_statement(dialect: str) -> Prepared:
    found = _first_use.get(dialect)
    if found is None:
        found = _first_use[dialect] = Prepared(
            upsert_insert(dialect)(_SEEN)
            .values(
                api_key_id=bindparam("key"),
                signature=bindparam("signature"),
                is_write=bindparam("is_write"),
                expires_at=bindparam("expires_at"),
            )
            .on_conflict_do_nothing()
            .returning(_SEEN.c.api_key_id)
        )
    return found


def remember_signature_in(conn: Connection, use: SignatureUse, now: datetime | None = None) -> bool:
    """Record an accepted signature in the caller's transaction; False when it is a replay.

    A signature may be seen again only when this use and every earlier one are reads: a body-less
    signature covers just the timestamp, so parallel GETs in one millisecond legitimately repeat
    it, while a captured read signature must never authorize a write.
    """
    return send_signatures_in(conn, [(use, now or utcnow())])[0]()


def send_signatures_in(
    conn: Connection, uses: list[tuple[SignatureUse, datetime]]
) -> list[Callable[[], bool]]:
    """``remember_signature_in`` for several (each with its time): their inserts are all sent
    first, and each answer (False for a replay) is read when its function is called (in a
    pipeline, ``store.prepared.pipeline``, the first call sends them, with whatever else was sent
    by then, in one round trip)."""
    insert = _first_use_statement(conn.dialect.name)

    def answer(use: SignatureUse, sent: Result) -> Callable[[], bool]:
        def first_use() -> bool:
            if sent.first() is not None:
                return True  # inserted: first use
            if use.is_write:
                return False
            earlier = _EARLIER_USE.run(conn, {"key": use.key_id, "signature": use.signature}).first()
            return earlier is not None and not earlier.is_write

        return first_use

    return [
        answer(
            use,
            insert.send(
                conn,
                {
                    "key": use.key_id,
                    "signature": use.signature,
                    "is_write": use.is_write,
                    "expires_at": at + use.keep,
                },
            ),
        )
        for use, at in uses
    ]


def remember_signature(engine: Engine, use: SignatureUse) -> bool:
    """``remember_signature_in`` in a transaction of its own."""
    with write_connection(engine) as conn:
        return remember_signature_in(conn, use)


def purge_expired(engine: Engine, idempotency_window: timedelta) -> int:
    """Drop replay entries past their window and idempotency records past theirs."""
    now = utcnow()
    with write_session(engine) as session:
        n = session.execute(delete(SeenSignature).where(col(SeenSignature.expires_at) < now)).rowcount  # type: ignore[attr-defined]
        old = col(IdempotencyRecord.created_at) < now - idempotency_window
        n += session.execute(delete(IdempotencyRecord).where(old)).rowcount  # type: ignore[attr-defined]
    return int(n)


def body_digest(body: Any) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class StoredResponse:
    body_hash: str
    status_code: int
    response: dict[str, Any]


def find_idempotent(session: Session, org_id: str, key: str, window: timedelta) -> StoredResponse | None:
    row = session.get(IdempotencyRecord, (org_id, key))
    if row is None or row.created_at < utcnow() - window:
        return None
    return StoredResponse(row.body_hash, row.status_code, row.response)


def save_idempotent(
    session: Session,
    org_id: str,
    key: str,
    body_hash: str,
    status: int,
    response: dict[str, Any],
    window: timedelta,
) -> None:
    """Store (or replace an expired) record; a concurrent twin makes the transaction fail."""
    existing = session.get(IdempotencyRecord, (org_id, key))
    if existing is not None and existing.created_at < utcnow() - window:
        session.delete(existing)
        session.flush()
    session.add(
        IdempotencyRecord(
            organization_id=org_id,
            key=key,
            body_hash=body_hash,
            status_code=status,
            response=response,
            created_at=utcnow(),
        )
    )


def requests_created_since(session: Session, org_id: str, since: datetime) -> int:
    stmt = (
        select(func.count())
        .select_from(CredentialRequest)
        .where(CredentialRequest.organization_id == org_id, CredentialRequest.created_at >= since)
    )
    return int(session.exec(stmt).one())
