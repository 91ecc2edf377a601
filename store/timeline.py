"""What the database knows of one request, for the operators' timeline (``services.operators``):
everything that happened to it in one read, each family ordered by time. The caller has found the
request (its organization is the request's own).

Also the operators' lookups that cross organizations: requests by ``internalId`` and by a
subject's contact, through its keyed hash (``Subject.contact_hash``), never the contact itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine, or_, update
from sqlmodel import col, select

from store.db import read_session, write_session
from store.tables import (
    AuditRecord,
    Credential,
    CredentialRequest,
    KycCheck,
    OtpChallenge,
    Presentation,
    RequestSubject,
    Subject,
    Verification,
    WebhookAttempt,
    WebhookEvent,
)


@dataclass(frozen=True)
class RequestFacts:
    codes: Sequence[OtpChallenge]  # each subject's current code (sends, wrong tries, lock)
    checks: Sequence[KycCheck]
    events: Sequence[WebhookEvent]
    attempts: dict[str, list[WebhookAttempt]]  # by event id, in order
    presentations: Sequence[Presentation]
    verifications: Sequence[Verification]
    records: Sequence[AuditRecord]  # oldest first


MAX_ROWS = 500  # per family: a request with more is shown with its first 500 of each


def facts_of(engine: Engine, org_id: str, request_id: str) -> RequestFacts:
    with read_session(engine) as session:
        codes = session.exec(select(OtpChallenge).where(OtpChallenge.request_id == request_id)).all()
        checks = session.exec(
            select(KycCheck).where(KycCheck.request_id == request_id).order_by(col(KycCheck.created_at))
        ).all()
        events = session.exec(
            select(WebhookEvent)
            .where(WebhookEvent.organization_id == org_id, WebhookEvent.request_id == request_id)
            .order_by(col(WebhookEvent.created_at))
            .limit(MAX_ROWS)
        ).all()
        attempts: dict[str, list[WebhookAttempt]] = {e.id: [] for e in events}
        if events:
            for attempt in session.exec(
                select(WebhookAttempt)
                .where(col(WebhookAttempt.event_id).in_(list(attempts)))
                .order_by(col(WebhookAttempt.event_id), col(WebhookAttempt.number))
            ):
                attempts[attempt.event_id].append(attempt)
        credential_ids = select(Credential.id).where(Credential.request_id == request_id)
        mandate_ids = select(Credential.mandate_id).where(
            Credential.request_id == request_id, col(Credential.mandate_id).is_not(None)
        )
        presentations = session.exec(
            select(Presentation)
            .where(col(Presentation.credential_id).in_(credential_ids))
            .order_by(col(Presentation.created_at))
            .limit(MAX_ROWS)
        ).all()
        presentation_ids = [p.id for p in presentations]
        verifications = session.exec(
            select(Verification)
            .where(
                or_(
                    col(Verification.mandate_id).in_(mandate_ids),
                    col(Verification.presentation_id).in_(presentation_ids),
                )
            )
            .order_by(col(Verification.created_at))
            .limit(MAX_ROWS)
        ).all()
        records = session.exec(
            select(AuditRecord)
            .where(AuditRecord.organization_id == org_id, AuditRecord.request_id == request_id)
            .order_by(col(AuditRecord.seq))
            .limit(MAX_ROWS)
        ).all()
    return RequestFacts(codes, checks, events, attempts, presentations, verifications, records)


def requests_by_internal_id(engine: Engine, internal_id: str, limit: int) -> list[tuple[str, str]]:
    """(organization, request) of the requests, in every organization, whose ``internalId`` or a
    subject's ``internalId`` is ``internal_id``; newest first."""
    with read_session(engine) as session:
        by_subject = select(RequestSubject.request_id).where(RequestSubject.internal_id == internal_id)
        rows = session.exec(
            select(CredentialRequest.organization_id, CredentialRequest.id)
            .where(
                or_(
                    col(CredentialRequest.internal_id) == internal_id,
                    col(CredentialRequest.id).in_(by_subject),
                )
            )
            .order_by(col(CredentialRequest.created_at).desc())
            .limit(limit)
        ).all()
    return [(org_id, request_id) for org_id, request_id in rows]


def requests_by_contact_hash(engine: Engine, contact_hash: str, limit: int) -> list[tuple[str, str]]:
    """(organization, request) of the requests, in every organization, asking the subject(s) whose
    keyed contact hash is ``contact_hash``; newest first."""
    with read_session(engine) as session:
        subjects = select(Subject.id).where(Subject.contact_hash == contact_hash)
        asked = select(RequestSubject.request_id).where(col(RequestSubject.subject_id).in_(subjects))
        rows = session.exec(
            select(CredentialRequest.organization_id, CredentialRequest.id)
            .where(col(CredentialRequest.id).in_(asked))
            .order_by(col(CredentialRequest.created_at).desc())
            .limit(limit)
        ).all()
    return [(org_id, request_id) for org_id, request_id in rows]


def fill_contact_hashes(engine: Engine, hash_of: Callable[[str], str], batch: int = 500) -> int:
    """Give every subject created before migration 0014 its keyed contact hash, ``batch`` rows per
    transaction; how many were filled. Idempotent (a concurrent filler writes the same value)."""
    filled = 0
    while True:
        with write_session(engine) as session:
            rows = session.exec(
                select(Subject.id, Subject.contact).where(col(Subject.contact_hash).is_(None)).limit(batch)
            ).all()
            for subject_id, contact in rows:
                session.execute(
                    update(Subject)
                    .where(col(Subject.id) == subject_id, col(Subject.contact_hash).is_(None))
                    .values(contact_hash=hash_of(contact))
                )
        filled += len(rows)
        if len(rows) < batch:
            return filled
