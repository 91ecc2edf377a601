"""A mandate's use limits counted in the transaction that records its verifications (issue 31).

``count`` runs inside ``store.verifications._write_together``, after the presentations are used
up and before the audit chains' heads are locked: the rows of the batch's mandates with bounds are
locked in id order (PostgreSQL ``FOR NO KEY UPDATE``; SQLite's writes are serial), each allowed
verification is counted against its row's ``usage`` as it is now, in the batch's order, and the
new usage is written. A verification that no longer fits is denied (``limit_exceeded``), one whose
mandate is no longer ACTIVE is denied (``credential_revoked``); both use nothing. So whatever the
concurrency, in one process or several, on either database, the allowed uses never exceed a count
and the allowed amounts never exceed a budget: every count is a read and a write of one locked row.

An allowed use that spends an executions bound (``maxExecutions`` or an action's ``executions``
limit) revokes the mandate in the same transaction (``revoke``): status, ``revoked_at`` (its
status list bit), the signed ``MANDATE_REVOKED`` receipt with reason ``exhausted``, the REVOKE
item of its document form and the audit record naming ``system``. The integrator's event follows
the commit (``services.limit_events``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, and_, bindparam, literal, or_, select, update

from core.actors import SYSTEM
from core.kinds import CredentialStatus
from policy import limits
from policy.limits import Bound, Use
from store import audit
from store.prepared import Prepared
from store.tables import Credential, CredentialRequest, WebhookEvent
from trust.eddsa_jcs import format_datetime

EXHAUSTED = "exhausted"  # the revocation reason of a mandate whose last use was spent
SUBJECT = "subject"  # the revocation reason of a mandate its subject revoked in the portal (issue 32)
_C = Credential.__table__  # type: ignore[attr-defined]
_R = CredentialRequest.__table__  # type: ignore[attr-defined]
LOCK = Prepared(
    select(_C.c.status, _C.c.usage).where(_C.c.id == bindparam("row")).with_for_update(key_share=True)
)
SET_USAGE = Prepared(update(_C).where(_C.c.id == bindparam("row")).values(usage=bindparam("usage")))
# statements of a revocation at the last use: Prepared, as everything in the verification's write
# (a PostgreSQL pipeline reads a result only through store.prepared)
REVOKING = Prepared(
    select(_C.c.mandate_id, _C.c.request_id, _C.c.document_credential, _R.c.organization_id)
    .join_from(_C, _R, _R.c.id == _C.c.request_id)
    .where(_C.c.id == bindparam("row"))
)
REVOKE = Prepared(
    update(_C)
    .where(_C.c.id == bindparam("row"))
    .values(
        status=bindparam("status"),
        revoked_at=bindparam("at"),
        revocation_reason=bindparam("reason"),
        revocation_receipt=bindparam("receipt"),
        document_credential=bindparam("document"),
    )
)


@dataclass(frozen=True)
class Counted:
    """One verification's limits as the locked row had them: ``limits`` as reported, and a
    ``reason`` when it is denied after all."""

    limits: list[dict[str, Any]]
    reason: str | None = None
    detail: str | None = None
    exhausted: bool = False


def denial(uses: list[Use]) -> Counted:
    """The denial of a verification some of whose ``uses`` do not fit: each limit reported as it
    stands, the ones without room marked ``fail``."""
    short = [u.bound.name for u in uses if not u.fits]
    return Counted(
        [u.evaluation(allowed=False) for u in uses],
        "limit_exceeded",
        f"no room left under {', '.join(short)}",
    )


def allowed(uses: list[Use]) -> Counted:
    return Counted([u.evaluation(allowed=True) for u in uses], exhausted=limits.exhausted(uses))


@dataclass(frozen=True)
class Item:
    """An allowed verification to count: its mandate's row, bounds and executionParams."""

    credential_row: str
    bounds: list[Bound]
    values: dict[str, Any]
    now: datetime


def count(conn: Connection, items: list[Item]) -> list[Counted]:
    """Each allowed verification with bounds counted against its mandate's locked row, in order;
    the rows whose usage changed written once. One ``Counted`` per item."""
    rows = sorted({item.credential_row for item in items})
    locking = [LOCK.send(conn, {"row": row}) for row in rows]  # in a pipeline: one round trip
    held: dict[str, Any] = {}
    for row, result in zip(rows, locking, strict=True):
        found = result.first()
        held[row] = None if found is None else {"status": found.status, "usage": found.usage}
    results: list[Counted] = []
    changed: set[str] = set()
    for item in items:
        state = held.get(item.credential_row)
        if state is None or state["status"] != CredentialStatus.ACTIVE:
            results.append(Counted([], "credential_revoked"))
            continue
        uses = limits.assess(item.bounds, state["usage"], item.values, item.now)
        if not all(u.fits for u in uses):
            results.append(denial(uses))
            continue
        counted = allowed(uses)
        state["usage"] = limits.spent(state["usage"], uses)
        if counted.exhausted:
            state["status"] = CredentialStatus.REVOKED
        changed.add(item.credential_row)
        results.append(counted)
    for row in sorted(changed):
        SET_USAGE.send(conn, {"row": row, "usage": held[row]["usage"]})  # sent with the next read
    return results


@dataclass(frozen=True)
class Revocation:
    """A mandate revoked by its last use: what the integrator's event reports."""

    mandate_id: str
    request_id: str
    organization_id: str
    revoked_at: datetime
    receipt: dict[str, Any]
    record: audit.Draft


# (mandate id, request id, document form, now) -> (MANDATE_REVOKED receipt, document form with REVOKE)
RevocationSigner = Callable[[str, str, dict[str, Any], datetime], tuple[dict[str, Any], dict[str, Any]]]


def revoke(conn: Connection, credential_row: str, now: datetime, sign: RevocationSigner) -> Revocation:
    """Revoke the mandate whose last use this transaction counted (its row locked by ``count``)."""
    found = REVOKING.run(conn, {"row": credential_row}).one()
    receipt, document = sign(found.mandate_id, found.request_id, found.document_credential, now)
    REVOKE.send(
        conn,
        {
            "row": credential_row,
            "status": CredentialStatus.REVOKED,
            "at": now,
            "reason": EXHAUSTED,
            "receipt": receipt,
            "document": document,
        },
    )
    record = audit.draft(
        audit.Entry(
            audit.MANDATE_REVOKED,
            found.organization_id,
            request_id=found.request_id,
            credential_id=found.mandate_id,
            actor=str(SYSTEM),
            data={
                "mandateId": found.mandate_id,
                "reason": EXHAUSTED,
                "revokedAt": format_datetime(now),
                "receipt": receipt,
            },
        ),
        now,
    )
    return Revocation(found.mandate_id, found.request_id, found.organization_id, now, receipt, record)


# --- the integrator's event, after the commit --------------------------------------------------

REVOKED_EVENT = "mandate.revoked"
_E = WebhookEvent.__table__  # type: ignore[attr-defined]


def fact_key(mandate_id: str) -> str:
    """The fact a ``mandate.revoked`` event reports (``store.webhooks``: one event per fact)."""
    return f"{REVOKED_EVENT}:{mandate_id}"


@dataclass(frozen=True)
class Unannounced:
    organization_id: str
    request_id: str
    credential_row: str


def unannounced(engine: Engine, since: datetime, before: datetime, limit: int = 100) -> list[Unannounced]:
    """Mandates revoked by their last use (or by their subject in the portal) between ``since``
    and ``before`` whose event was never made, or made and never started (still pending with no
    attempt): the API's start after the commit did not happen (the process died, Temporal was
    away)."""
    event = _E.c.fact_key == literal(REVOKED_EVENT + ":") + _C.c.mandate_id
    query = (
        select(_R.c.organization_id, _C.c.request_id, _C.c.id)
        .join_from(_C, _R, _R.c.id == _C.c.request_id)
        .outerjoin(_E, event)
        .where(
            _C.c.revoked_at >= since,
            _C.c.revoked_at < before,
            _C.c.revocation_reason.in_((EXHAUSTED, SUBJECT)),
            or_(
                _E.c.id.is_(None), and_(_E.c.state == "pending", _E.c.attempts == 0, _E.c.created_at < before)
            ),
        )
        .order_by(_C.c.revoked_at)
        .limit(limit)
    )
    with engine.connect() as conn:
        return [Unannounced(*row) for row in conn.execute(query)]
