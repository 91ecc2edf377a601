"""The verifications' storage (CONTRACT 5): the presentation a verification reads, and the one
short write transaction that records it.

``record`` runs the conditional UPDATE that uses the VP up (``UPDATE presentation SET used_at ...
WHERE id = :id AND used_at IS NULL``: exactly one such statement can change the row; PostgreSQL
re-checks the condition after a concurrent writer commits, SQLite writes are serial), then the
``verification`` row with its receipt and its audit record naming the verifier, all in the caller's
transaction. The decision itself is ``services.verification``.

``of_credential`` reads a credential's verifications back for the organization that issued it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, func, select, update

from store import audit
from store.tables import Credential, Presentation, Verification
from trust.keys import Ed25519KeyPair

ALLOW, DENY = "allow", "deny"
# Statements built once: building them per call costs more than running them on SQLite.
_P = Presentation.__table__  # type: ignore[attr-defined]
_C = Credential.__table__  # type: ignore[attr-defined]
_V = Verification.__table__  # type: ignore[attr-defined]
LOAD = (
    select(
        _P.c.challenge,
        _P.c.expires_at,
        _P.c.used_at,
        _C.c.mandate_id,
        _C.c.status,
        _C.c.revoked_at,
        _C.c.request_id,
    )
    .join_from(_P, _C, _C.c.id == _P.c.credential_id)
    .where(_P.c.id == bindparam("presentation_id"))
)
# the single-use guarantee: only one statement can find used_at empty (module docstring)
CONSUME = (
    update(_P)
    .where(_P.c.id == bindparam("presentation_id"), _P.c.used_at.is_(None))
    .values(used_at=bindparam("at"), used_by=bindparam("by"))
)
RECORD = Verification.__table__.insert()  # type: ignore[attr-defined]


@dataclass
class Outcome:
    credential_id: str = ""
    presentation_id: str | None = None
    request_id: str | None = None
    consume: bool = False  # past the signature checks, on a VP still unused, by a verifier it may
    # be shown to
    at_single_use: bool = False  # every check before single use passed
    reason: str | None = None
    detail: str | None = None
    evaluations: list[dict[str, Any]] = field(default_factory=list)

    def deny(self, reason: str, detail: str | None = None) -> Outcome:
        self.reason, self.detail = reason, detail
        return self


def load(engine: Engine, presentation_id: str) -> Any:
    """The presentation row with its credential's state (a Row), or None. Its own connection,
    released before anything else (key and DID document caches) may need one: never two at once."""
    with engine.connect() as conn:
        return conn.execute(LOAD, {"presentation_id": presentation_id}).first()


def of_credential(
    engine: Engine, credential_id: str, mandate_id: str, limit: int
) -> tuple[list[Verification], int]:
    """The newest ``limit`` verifications of the credential's VPs, and how many there are.

    A verification counts when it names the mandate *and* one of the VPs this service issued of the
    credential: a verifier can send any presentation claiming any mandate id, and what a stranger
    made up (its executionParams, its outcome) is not the issuer's to read as its mandate's use."""
    ours = select(_P.c.id).where(_P.c.credential_id == credential_id)
    conds = (_V.c.mandate_id == mandate_id, _V.c.presentation_id.in_(ours))
    with engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(_V).where(*conds)).scalar_one()
        rows = conn.execute(
            select(_V).where(*conds).order_by(_V.c.created_at.desc(), _V.c.id.desc()).limit(limit)
        ).all()
    return [Verification.model_validate(dict(r._mapping)) for r in rows], int(total)


def record(
    conn: Connection,
    out: Outcome,
    receipt: dict[str, Any],
    sign: Callable[[Outcome], dict[str, Any]],
    key: Ed25519KeyPair,
    verifier_org_id: str,
    presentation: Mapping[str, Any],
    execution_params: dict[str, Any] | None,
    now: datetime,
    actor: str | None = None,
) -> dict[str, Any]:
    """Inside the write transaction: use the VP up (when this verification got past its
    signatures), then store the verification with its receipt, which it returns, and its audit
    record. The receipt is signed before the transaction, and again in it only when another
    verification won the VP."""
    if out.consume:
        used = conn.execute(
            CONSUME, {"presentation_id": out.presentation_id, "at": now, "by": verifier_org_id}
        )
        if used.rowcount != 1 and out.at_single_use:
            out.evaluations = []
            receipt = sign(out.deny("vp_already_used"))
    conn.execute(
        RECORD,
        {
            "id": receipt["id"],
            "organization_id": verifier_org_id,
            "presentation_id": out.presentation_id,
            "mandate_id": out.credential_id or None,
            "decision": DENY if out.reason else ALLOW,
            "reason": out.reason,
            "evaluations": out.evaluations,
            "execution_params": execution_params,
            "receipt": receipt,
            "created_at": now,
        },
    )
    audit.append(
        conn,
        key,
        audit.Entry(
            audit.VERIFY_DENY if out.reason else audit.VERIFY_ACCEPT,
            verifier_org_id,
            request_id=out.request_id,
            credential_id=out.credential_id or None,
            actor=actor,
            data={
                "presentation": dict(presentation),
                "executionParams": execution_params,
                "evaluations": out.evaluations,
                "reason": out.reason,
                "receipt": receipt,
            },
        ),
        now,
    )
    return receipt
