"""The verifications' storage (CONTRACT 5): the presentation a verification reads, and the one
short write transaction that records it.

``Pending.record_in`` runs the conditional UPDATE that uses the VP up (``UPDATE presentation SET
used_at ... WHERE id = :id AND used_at IS NULL``: exactly one such statement can change the row;
PostgreSQL re-checks the condition after a concurrent writer commits, SQLite writes are serial),
then the ``verification`` row with its receipt and its audit record naming the verifier, all in the caller's
transaction; ``record_batch`` writes several in one transaction, one after another. The decision
itself is ``services.verification``.

``of_credential`` reads a credential's verifications back for the organization that issued it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, func, select, update

from store import audit, guards
from store.db import write_connection
from store.prepared import Prepared
from store.tables import Credential, Presentation, Verification
from trust.keys import Ed25519KeyPair

ALLOW, DENY = "allow", "deny"
# Statements built once and run on the DBAPI cursor (store.prepared): Core's execution costs more
# than running them on SQLite.
_P = Presentation.__table__  # type: ignore[attr-defined]
_C = Credential.__table__  # type: ignore[attr-defined]
_V = Verification.__table__  # type: ignore[attr-defined]
LOAD = Prepared(
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
CONSUME = Prepared(
    update(_P)
    .where(_P.c.id == bindparam("presentation_id"), _P.c.used_at.is_(None))
    .values(used_at=bindparam("at"), used_by=bindparam("by"))
)
RECORD = Prepared(_V.insert(), column_keys=[c.key for c in _V.columns])


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
    return LOAD.read_one(engine, {"presentation_id": presentation_id})


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


@dataclass
class Pending:
    """A decided verification waiting to be written (``record_in``, ``record_batch``), and after
    the write, the receipt it stored or ``replayed`` when its signature was used."""

    out: Outcome
    receipt: dict[str, Any]
    sign: Callable[[Outcome], dict[str, Any]]
    key: Ed25519KeyPair
    verifier_org_id: str
    presentation: Mapping[str, Any]
    execution_params: dict[str, Any] | None
    now: datetime
    actor: str | None = None
    signature: guards.SignatureUse | None = None
    replayed: bool = False
    failed: Exception | None = None  # its own transaction failed (``record_each``): nothing written

    def record_in(self, conn: Connection) -> None:
        """Inside the write transaction: first the request's ``signature`` against replays, when
        the signature middleware left it to this transaction (``replayed`` when it was used: then
        nothing is written); then use the VP up (when this verification got past its signatures),
        store the verification with its receipt and its audit record. The receipt was signed before
        the transaction, and is signed again here only when another verification won the VP."""
        out, now, receipt = self.out, self.now, self.receipt
        if self.signature is not None and not guards.remember_signature_in(conn, self.signature, now):
            self.replayed = True
            return
        if out.consume:
            used = CONSUME.run(
                conn, {"presentation_id": out.presentation_id, "at": now, "by": self.verifier_org_id}
            )
            if used.rowcount != 1 and out.at_single_use:
                out.evaluations = []
                receipt = self.sign(out.deny("vp_already_used"))
        RECORD.run(
            conn,
            {
                "id": receipt["id"],
                "organization_id": self.verifier_org_id,
                "presentation_id": out.presentation_id,
                "mandate_id": out.credential_id or None,
                "decision": DENY if out.reason else ALLOW,
                "reason": out.reason,
                "evaluations": out.evaluations,
                "execution_params": self.execution_params,
                "receipt": receipt,
                "created_at": now,
            },
        )
        audit.append(
            conn,
            self.key,
            audit.Entry(
                audit.VERIFY_DENY if out.reason else audit.VERIFY_ACCEPT,
                self.verifier_org_id,
                request_id=out.request_id,
                credential_id=out.credential_id or None,
                actor=self.actor,
                data={
                    "presentation": dict(self.presentation),
                    "executionParams": self.execution_params,
                    "evaluations": out.evaluations,
                    "reason": out.reason,
                    "receipt": receipt,
                },
            ),
            now,
        )
        self.receipt = receipt


def record_batch(engine: Engine, batch: list[Pending]) -> None:
    """Concurrent verifications in one write transaction (``core.group_commit``), each as
    ``record_in`` writes it alone, in order: a replayed one writes nothing and the others go on; two of
    one VP in a batch are decided as two in a row (the second finds it used). Any other failure
    fails the whole batch, and nothing of it is written."""
    with write_connection(engine) as conn:
        for pending in batch:
            pending.record_in(conn)


def record_each(engine: Engine, batch: list[Pending]) -> None:
    """Concurrent verifications one after another, each in a transaction of its own, a failure
    kept on its own ``Pending`` (``failed``). For PostgreSQL, where batches of other threads and
    processes run at the same time: a transaction of several verifications would take their row
    locks (signatures, presentations, the chains' heads of several organizations) in its batch's
    order, and two batches in other orders deadlock, failing every verification in both; a
    replayed signature racing its original would be enough. One verification per transaction
    keeps the order each takes its locks in: signature, presentation, then one head."""
    for pending in batch:
        try:
            record_batch(engine, [pending])
        except Exception as exc:  # this one's answer; the others are written
            pending.failed = exc
