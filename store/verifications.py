"""The verifications' storage (CONTRACT 5): the presentation a verification reads, and the one
short write transaction that records it.

``record_batch`` writes the verifications decided together in one short transaction: for each,
the request's signature against replays when the middleware left it to this write, the conditional
UPDATE that uses the VP up (``UPDATE presentation SET used_at ... WHERE id = :id AND used_at IS
NULL``: exactly one such statement can change the row; PostgreSQL re-checks the condition after a
concurrent writer commits, SQLite writes are serial), then the ``verification`` row with its
receipt and its audit record naming the verifier. The decision itself is
``services.verification``.

``of_credential`` reads a credential's verifications back for the organization that issued it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, func, select, update

from policy.limits import Bound
from store import audit, guards, limit_use
from store.db import write_connection
from store.prepared import LoopReads, Prepared, pipeline
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
        _C.c.id.label("credential_row"),
        _C.c.usage,
    )
    .join_from(_P, _C, _C.c.id == _P.c.credential_id)
    .where(_P.c.id == bindparam("presentation_id"))
)
# the single-use guarantee: only one statement can find used_at empty (module docstring)
CONSUME = Prepared(
    update(_P)
    .where(_P.c.id == bindparam("presentation_id"), _P.c.used_at.is_(None))
    .values(used_at=bindparam("at"), used_by=bindparam("by"))
    .returning(_P.c.id)  # a row when this statement used the VP up (read in a pipeline too)
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
    # use limits (issue 31, ``store.limit_use``): the credential's row, the mandate's signed bounds,
    # the checked executionParams, and each bound's use as reported (``Use.evaluation``)
    credential_row: str | None = None
    bounds: list[Bound] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    limits: list[dict[str, Any]] = field(default_factory=list)
    exhausted: bool = False  # this allowed use spent an executions bound: the mandate is revoked
    held_usage: dict[str, Any] | None = None  # the row's usage when read, before the write

    def deny(self, reason: str, detail: str | None = None) -> Outcome:
        self.reason, self.detail = reason, detail
        return self


def load(engine: Engine, presentation_id: str) -> Any:
    """The presentation row with its credential's state (a Row), or None. Its own connection,
    released before anything else (key and DID document caches) may need one: never two at once."""
    return LOAD.read_one(engine, {"presentation_id": presentation_id})


async def load_on_loop(reads: LoopReads, presentation_id: str) -> Any:
    """``load`` on the event loop (PostgreSQL)."""
    return await reads.one(LOAD, {"presentation_id": presentation_id})


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
    """A decided verification waiting to be written (``record_batch``), and after the write, the
    receipt it stored, ``replayed`` when its signature was used, or ``failed``."""

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
    failed: Exception | None = None  # its own transaction failed: nothing of it written
    sign_revocation: limit_use.RevocationSigner | None = None
    revocation: limit_use.Revocation | None = None  # the mandate revoked by its last use

    def __post_init__(self) -> None:
        self._drafts: tuple[dict[str, Any], audit.Draft] | None = None
        self._decided_drafts: tuple[dict[str, Any], audit.Draft] | None = None
        self._decided = (self._copy(self.out), self.receipt)

    @staticmethod
    def _copy(out: Outcome) -> Outcome:
        return replace(out, evaluations=list(out.evaluations), limits=list(out.limits))

    def draft(self) -> None:
        """Its verification row and audit record drafted as decided, before the write (on the
        deciding thread): redrafted only if another verification wins the VP."""
        self._drafts = self._drafted()
        self._decided_drafts = self._drafts

    def _undo(self) -> None:
        """Back to what was decided, after a write that was rolled back."""
        out, receipt = self._decided
        self.out, self.receipt, self.replayed = self._copy(out), receipt, False
        self._drafts = self._decided_drafts
        self.revocation = None

    # the steps of its write, run by ``_write_together`` in its transaction; the receipt was
    # signed before it, and is signed again only when another verification won the VP

    def _used_up(self, won: bool) -> None:
        """The VP's single-use UPDATE changed its row (``won``) or found it used."""
        if not won and self.out.at_single_use:
            self.out.evaluations, self.out.limits = [], []
            self.receipt = self.sign(self.out.deny("vp_already_used"))
            self._drafts = None

    def _counted(self, outcome: limit_use.Counted) -> None:
        """Its use limits as the locked row has them (``store.limit_use``): the receipt signed now
        (an allow under limits is signed only here), or again when the outcome changed."""
        out = self.out
        if outcome.reason is not None:
            out.evaluations = out.evaluations if outcome.reason == "limit_exceeded" else []
            out.deny(outcome.reason, outcome.detail)
        out.exhausted = outcome.exhausted
        if outcome.limits != out.limits or outcome.reason is not None or not self.receipt:
            out.limits = outcome.limits
            self.receipt = self.sign(out)
            self._drafts = None

    def _drafts_now(self) -> tuple[dict[str, Any], audit.Draft]:
        if self._drafts is None:
            self._drafts = self._drafted()
        return self._drafts

    def _drafted(self) -> tuple[dict[str, Any], audit.Draft]:
        """Its verification row and its audit record's draft, as decided and written."""
        out, now, receipt = self.out, self.now, self.receipt
        row = {
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
        }
        record = audit.draft(
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
                    **({"limits": out.limits} if out.limits else {}),
                    "reason": out.reason,
                    "receipt": receipt,
                },
            ),
            now,
        )
        return row, record


class _ReplayInBatch(Exception):
    """A batch written without waiting for its signatures held a replay: written again, step by step."""


def _write_together(engine: Engine, batch: list[Pending], *, step_by_step: bool = False) -> None:
    """``batch`` in one transaction, in order: each one's signature against replays (a replayed one
    writes nothing), then the VP used up when it got past its signatures (two of one VP are
    decided as two in a row: the second finds it used), then its verification row and audit record.

    The rows are locked in one order in every transaction, whatever the batch's order, so two
    batches written at the same time (other threads, other API processes on PostgreSQL) wait for
    each other and never deadlock: the signatures first (by key and signature), then the
    presentations (by id), then the chains' heads (by organization). A sort is stable: two uses of
    one signature or one VP keep the batch's order.

    In a pipeline (PostgreSQL) that is three round trips for the whole batch: the signatures with
    the single-use UPDATEs; the verification rows with the heads' locks; the audit records, the
    heads' moves and the COMMIT. The UPDATEs are sent before the signatures' answers are read,
    which is right unless one is a replay (it must write nothing): then ``_ReplayInBatch`` rolls
    the transaction back and the batch is written ``step_by_step``, the UPDATEs sent once the
    signatures are known."""
    with write_connection(engine) as conn, pipeline(conn) as pipelined:
        step_by_step = step_by_step or not pipelined  # unpipelined, nothing to gain from sending early
        signed = sorted((p for p in batch if p.signature is not None), key=_signature_order)
        firsts = guards.send_signatures_in(conn, [(p.signature, p.now) for p in signed])  # type: ignore[misc]
        consuming = sorted((p for p in batch if p.out.consume), key=lambda p: p.out.presentation_id or "")

        def use_up(pendings: list[Pending]) -> list[Any]:
            return [
                CONSUME.send(
                    conn, {"presentation_id": p.out.presentation_id, "at": p.now, "by": p.verifier_org_id}
                )
                for p in pendings
            ]

        used = [] if step_by_step else use_up(consuming)
        for pending, first in zip(signed, firsts, strict=True):
            pending.replayed = not first()
        if any(p.replayed for p in consuming) and not step_by_step:
            raise _ReplayInBatch
        written = [p for p in batch if not p.replayed]
        if step_by_step:
            consuming = [p for p in consuming if not p.replayed]
            used = use_up(consuming)
        for pending, result in zip(consuming, used, strict=True):
            pending._used_up(result.first() is not None)
        _count_limits(conn, written)
        # all but the chain's place and the signature made before the heads are locked: a chain's
        # head is held for as short as can be, since every write of its organization waits for it
        drafts = []
        for pending in written:
            row, record = pending._drafts_now()
            RECORD.send(conn, row)
            drafts.append((pending.key, record))
            if pending.revocation is not None:
                drafts.append((pending.key, pending.revocation.record))
        revoked = [p.revocation.organization_id for p in written if p.revocation is not None]
        chains = audit.Chains(conn)
        chains.lock([*(p.verifier_org_id for p in written), *revoked])  # read: the rows sent go with it
        for key, record in drafts:
            chains.add(key, record)
        chains.write()
        conn.commit()  # in a pipeline: the records, the heads' moves and the COMMIT in one round trip


def _count_limits(conn: Connection, written: list[Pending]) -> None:
    """Use limits (issue 31): the rows of the mandates with bounds locked in id order, after the
    presentations and before the chains' heads; each allowed use counted, in batch order; a
    mandate whose last use was spent revoked (``store.limit_use``)."""
    limited = [p for p in written if p.out.bounds and p.out.reason is None]
    if not limited:
        return
    items = [limit_use.Item(p.out.credential_row or "", p.out.bounds, p.out.values, p.now) for p in limited]
    for pending, counted in zip(limited, limit_use.count(conn, items), strict=True):
        pending._counted(counted)
    for pending in limited:
        if pending.out.exhausted and pending.sign_revocation is not None:
            at = pending.now.replace(microsecond=0)  # revokedAt, receipt and proof: one instant
            credential_row = pending.out.credential_row or ""
            pending.revocation = limit_use.revoke(conn, credential_row, at, pending.sign_revocation)


def _signature_order(pending: Pending) -> tuple[str, str]:
    use = pending.signature
    return (use.key_id, use.signature) if use is not None else ("", "")


def record_batch(engine: Engine, batch: list[Pending]) -> None:
    """Concurrent verifications (``core.group_commit``) written in one transaction
    (``_write_together``). When that transaction fails, nothing of it was written, and each is
    written again in a transaction of its own: a failure is then kept on its own ``Pending``
    (``failed``, which ``verdict`` raises) and the others are written. A failure whose
    transaction did commit (the connection lost with the COMMIT's answer) is told apart by its
    rows (``_landed``): then each answer is the one written."""
    try:
        try:
            _write_together(engine, batch)
        except _ReplayInBatch:
            for pending in batch:
                pending._undo()
            _write_together(engine, batch, step_by_step=True)
    except Exception as exc:
        if _landed(engine, batch):
            return
        if len(batch) == 1:
            batch[0]._undo()
            batch[0].failed = exc
            return
        for pending in batch:
            pending._undo()
            try:
                _write_together(engine, [pending], step_by_step=True)
            except Exception as alone:  # this one's answer; the others are written
                pending._undo()
                pending.failed = alone


def _landed(engine: Engine, batch: list[Pending]) -> bool:
    """Whether the failed transaction of ``batch`` committed after all: every verification row it
    was writing is there (one transaction: all of them or none). A batch of replays only wrote
    nothing, and when even this read fails the batch is taken as not written."""
    ids = [p.receipt.get("id") for p in batch if not p.replayed]
    if not ids or None in ids:  # a receipt still to be signed in the write: it did not get there
        return False
    try:
        with engine.connect() as conn:
            found = conn.execute(select(func.count()).select_from(_V).where(_V.c.id.in_(ids))).scalar_one()
    except Exception:
        return False
    return int(found) == len(ids)
