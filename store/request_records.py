"""What the request workflow (through its activities) and the worker's reconciler record of a
credential request: its workflow started, a cancellation, the expiry, each subject's decision, a
repair of a request whose workflow ended without recording its outcome, and a subject's link
shown. Re-exported by ``store.requests``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from core.actors import TEMPORAL
from core.kinds import OPEN_CREDENTIAL_STATUSES, CredentialStatus, RequestStatus
from store import audit
from store.db import aware_utc, utcnow, write_session
from store.tables import Credential, CredentialRequest, Decision, Subject


@dataclass(frozen=True)
class StoredChoice:
    """A subject's decision on a credential as stored: its id, time and choice, and whether this
    call wrote it."""

    decision_id: str
    decided_at: datetime
    accepted: bool
    written: bool


OPEN_CREDENTIAL_STATES = OPEN_CREDENTIAL_STATUSES
TEMPORAL_ACTOR = str(TEMPORAL)


def mark_workflow_started(engine: Engine, request_id: str) -> None:
    mark_workflows_started(engine, [request_id])


def mark_workflows_started(engine: Engine, request_ids: list[str]) -> None:
    """Record that these requests' workflows exist (one statement for a whole batch)."""
    with write_session(engine) as session:
        session.execute(
            update(CredentialRequest)
            .where(
                col(CredentialRequest.id).in_(request_ids),
                col(CredentialRequest.workflow_started_at).is_(None),
            )
            .values(workflow_started_at=utcnow())
        )


def _close_open_credentials(session: Session, request_id: str, status: str) -> None:
    session.execute(
        update(Credential)
        .where(col(Credential.request_id) == request_id, col(Credential.status).in_(OPEN_CREDENTIAL_STATES))
        .values(status=status)
    )


def record_cancellation(
    engine: Engine, request_id: str, at: datetime, by: str, reason: str | None = None
) -> datetime:
    """Idempotent: a retried call keeps the first cancellation time (and its one audit record, with
    the ``reason`` the canceler gave, if any)."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        req = session.get(CredentialRequest, request_id)
        if req is None:
            raise LookupError(f"request {request_id} not found")
        if req.canceled_at is None:
            req.canceled_at, req.canceled_by, req.status = at, by, RequestStatus.CANCELED
            _close_open_credentials(session, request_id, CredentialStatus.CANCELED)
            audit.append(
                session.connection(),
                key,
                audit.Entry(
                    audit.MANDATE_CANCELED,
                    req.organization_id,
                    request_id=request_id,
                    actor=by,
                    data={
                        "requestId": request_id,
                        "canceledBy": by,
                        "canceledAt": at.isoformat(),
                        **({"reason": reason} if reason else {}),
                    },
                ),
            )
        return req.canceled_at


def record_expiry(engine: Engine, request_id: str) -> None:
    with write_session(engine) as session:
        req = session.get(CredentialRequest, request_id)
        if req is None:
            raise LookupError(f"request {request_id} not found")
        if req.status == RequestStatus.PENDING:
            req.status = RequestStatus.EXPIRED
            _close_open_credentials(session, request_id, CredentialStatus.EXPIRED)


def decision_of(session: Session, credential_id: str, subject_id: str) -> Decision | None:
    """The subject's decision on the credential (at most one: ``uq_decision_once``), None when none."""
    return session.exec(
        select(Decision).where(Decision.credential_id == credential_id, Decision.subject_id == subject_id)
    ).first()


def record_decision(
    engine: Engine,
    decision_id: str,
    request_id: str,
    credential_id: str,
    subject_id: str,
    accepted: bool,
    channel: str | None,
    surface: str | None,
    at: datetime,
    completes: bool,
    reason: str | None = None,
    actor: str | None = None,
    trusted_session_id: str | None = None,
) -> StoredChoice:
    """Store a subject's decision once per subject and credential, with its audit record (channel
    ``trusted`` when a trusted browser session stood in for the code); returns the one stored."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        found = decision_of(session, credential_id, subject_id)
        if found is not None:
            return StoredChoice(found.id, aware_utc(found.decided_at), found.accepted, written=False)
        session.add(
            Decision(
                id=decision_id,
                credential_id=credential_id,
                subject_id=subject_id,
                accepted=accepted,
                channel=channel,
                surface=surface,
                decided_at=at,
            )
        )
        req = _apply_decision(session, request_id, credential_id, accepted, completes)
        subject = session.get(Subject, subject_id)
        session.flush()  # the decision row first, then its record
        audit.append(
            session.connection(),
            key,
            audit.Entry(
                audit.DECISION_ACCEPT if accepted else audit.DECISION_REJECT,
                req.organization_id,
                request_id=request_id,
                credential_id=credential_id,
                actor=actor or f"subject:{subject_id}",
                data={
                    "decisionId": decision_id,
                    "subjectId": subject_id,
                    "contact": subject.contact if subject else None,
                    "credentialId": credential_id,
                    "accepted": accepted,
                    "channel": channel,
                    "surface": surface,
                    "decidedAt": at.isoformat(),
                    **({"reason": reason} if reason else {}),
                    **({"trustedSessionId": trusted_session_id} if trusted_session_id else {}),
                },
            ),
        )
    return StoredChoice(decision_id, at, accepted, written=True)


def _apply_decision(
    session: Session, request_id: str, credential_id: str, accepted: bool, completes: bool
) -> CredentialRequest:
    """A rejection rejects the credential while it is open, and the decision that completes the
    request completes it; the request, for the decision's record."""
    cred = session.get(Credential, credential_id)
    if cred is not None and not accepted and cred.status in OPEN_CREDENTIAL_STATES:
        cred.status = CredentialStatus.REJECTED
    req = session.get(CredentialRequest, request_id)
    if req is None:
        raise LookupError(f"request {request_id} not found")
    if completes and req.status == RequestStatus.PENDING:
        req.status = RequestStatus.COMPLETED
    return req


def repair_closed_workflow(
    engine: Engine, request_id: str, closed_at: datetime, workflow_status: str
) -> str | None:
    """Close a request whose workflow ended without recording an outcome (terminated, timed out,
    failed, or canceled by a version that did not record it): EXPIRED when its expiry has passed
    at ``closed_at``, else CANCELED at ``closed_at``, with an audit record by ``temporal``. Returns
    the new status; None when the row no longer says PENDING (repaired already, or recorded)."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        req = session.get(CredentialRequest, request_id, with_for_update=True)
        if req is None or req.status != RequestStatus.PENDING:
            return None
        data = {
            "requestId": request_id,
            "workflowStatus": workflow_status,
            "workflowClosedAt": closed_at.isoformat(),
        }
        expires_at = aware_utc(req.expires_at)
        if closed_at >= expires_at:
            req.status = RequestStatus.EXPIRED
            _close_open_credentials(session, request_id, CredentialStatus.EXPIRED)
            entry = audit.Entry(
                audit.REQUEST_EXPIRED,
                req.organization_id,
                request_id=request_id,
                actor=TEMPORAL_ACTOR,
                data=data,
            )
        else:
            req.canceled_at, req.canceled_by = closed_at, TEMPORAL_ACTOR
            req.status = RequestStatus.CANCELED
            _close_open_credentials(session, request_id, CredentialStatus.CANCELED)
            entry = audit.Entry(
                audit.MANDATE_CANCELED,
                req.organization_id,
                request_id=request_id,
                actor=TEMPORAL_ACTOR,
                data={**data, "canceledBy": TEMPORAL_ACTOR, "canceledAt": closed_at.isoformat()},
            )
        session.flush()
        audit.append(session.connection(), key, entry)
        return req.status


def record_link_shown(
    engine: Engine, org_id: str, request_id: str, subject_id: str, actor: str, reason: str | None = None
) -> None:
    """``SUBJECT_LINK_SHOWN``: someone was shown a subject's approval link to hand it out (who may
    act as that subject on the request is worth knowing later), with the ``reason`` they gave, if
    any. The link itself is not recorded."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        entry = audit.Entry(
            audit.SUBJECT_LINK_SHOWN,
            org_id,
            request_id=request_id,
            actor=actor,
            data={"subjectId": subject_id, **({"reason": reason} if reason else {})},
        )
        audit.append(session.connection(), key, entry)
