"""Replay protection and idempotency, both in the database so every API process shares them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, func
from sqlmodel import Session, col, select

from store.db import upsert_insert, utcnow, write_connection, write_session
from store.tables import CredentialRequest, IdempotencyRecord, SeenSignature


def remember_signature(
    engine: Engine, key_id: str, signature: str, is_write: bool, window: timedelta
) -> bool:
    """Record an accepted signature; False when it is a replay.

    A signature may be seen again only when this use and every earlier one are reads: a body-less
    signature covers just the timestamp, so parallel GETs in one millisecond legitimately repeat
    it, while a captured read signature must never authorize a write.
    """
    now = utcnow()
    table = SeenSignature.__table__  # type: ignore[attr-defined]
    with write_connection(engine) as conn:
        stmt = (
            upsert_insert(conn.dialect.name)(table)
            .values(api_key_id=key_id, signature=signature, is_write=is_write, expires_at=now + window)
            .on_conflict_do_nothing()
            .returning(table.c.api_key_id)
        )
        if conn.execute(stmt).first() is not None:  # inserted: first use
            return True
        if is_write:
            return False
        earlier = conn.execute(
            select(table.c.is_write).where(table.c.api_key_id == key_id, table.c.signature == signature)
        ).first()
        return earlier is not None and not earlier.is_write


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
