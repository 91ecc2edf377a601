"""Identity checks of subjects (CONTRACT 8): platform KYC checks, the organization's own checks,
and the identity result each request required of its subjects, with its audit record.

Statuses on the subject: ``kyc`` is the platform check (NOT_STARTED, PENDING, VERIFIED, FAILED);
``identityStatus`` is the last identity result of any kind (UNVERIFIED, VERIFIED, FAILED).
"""

from __future__ import annotations

import hmac
import uuid
from datetime import datetime

from sqlalchemy import Engine
from sqlmodel import col, select

from core.kinds import IdentitySource, IdentityStatus, RequestStatus, SecurityLevel
from store import audit
from store.db import read_session, write_session
from store.tables import CredentialRequest, KycCheck, RequestSubject, Subject

PENDING, VERIFIED, FAILED = IdentityStatus.PENDING, IdentityStatus.VERIFIED, IdentityStatus.FAILED


def new_check_id() -> str:
    """A check's id: random and unguessable (the provider's page and the return are reached by it)."""
    return str(uuid.uuid4())


def start_check(
    engine: Engine,
    request_id: str,
    subject_id: str,
    provider: str,
    now: datetime,
    check_id: str | None = None,
    browser_hash: str | None = None,
) -> KycCheck:
    """A new PENDING check; ``browser_hash`` binds its return to the browser that started it."""
    check = KycCheck(
        id=check_id or new_check_id(),
        request_id=request_id,
        subject_id=subject_id,
        provider=provider,
        status=PENDING,
        created_at=now,
        browser_hash=browser_hash,
    )
    with write_session(engine) as session:
        session.add(check)
        subject = session.get(Subject, subject_id)
        if subject is not None and subject.kyc != VERIFIED:
            subject.kyc = PENDING
            session.add(subject)
    return check


def get_check(engine: Engine, check_id: str) -> KycCheck | None:
    with read_session(engine) as session:
        return session.get(KycCheck, check_id)


def complete_check(
    engine: Engine, check_id: str, success: bool, message: str | None, now: datetime
) -> KycCheck:
    """The provider's result; the first one wins (a provider calling back twice changes nothing)."""
    with write_session(engine) as session:
        check = session.exec(select(KycCheck).where(KycCheck.id == check_id).with_for_update()).first()
        if check is None:
            raise LookupError(f"identity check {check_id} not found")
        if check.status == PENDING:
            check.status, check.message, check.completed_at = (VERIFIED if success else FAILED), message, now
            session.add(check)
        return check


def take_return(
    engine: Engine,
    check_id: str,
    request_id: str,
    subject_id: str,
    browser_hash: str,
    now: datetime,
    started_after: datetime,
) -> bool:
    """The subject's return from the provider, taken once: true only for the check of this subject
    of this request, started after ``started_after``, from the browser whose hash is given, and not
    returned through before. Anything else changes nothing (so a stranger holding the return URL
    cannot use it up either)."""
    with write_session(engine) as session:
        check = session.exec(select(KycCheck).where(KycCheck.id == check_id).with_for_update()).first()
        if (
            check is None
            or check.request_id != request_id
            or check.subject_id != subject_id
            or check.browser_hash is None
            or check.returned_at is not None
            or check.created_at <= started_after
            or not hmac.compare_digest(check.browser_hash, browser_hash)
        ):
            return False
        check.returned_at = now
        session.add(check)
        return True


def record_identity(
    engine: Engine,
    request_id: str,
    subject_id: str,
    success: bool,
    source: str,
    message: str | None,
    check_id: str | None,
    at: datetime,
    actor: str,
) -> None:
    """The identity result a request required of a subject, once: on the request's link, on the
    subject, and in the audit trail naming ``actor`` (with the subject's standing before and after:
    ``identityStatus``, and ``kyc`` for the platform's check), in one transaction."""
    key = audit.signer(engine)
    result = VERIFIED if success else FAILED
    with write_session(engine) as session:
        link = session.exec(
            select(RequestSubject)
            .where(
                RequestSubject.request_id == request_id,
                RequestSubject.subject_id == subject_id,
            )
            .with_for_update()
        ).first()
        req = session.get(CredentialRequest, request_id)
        subject = session.get(Subject, subject_id)
        if link is None or req is None or subject is None:
            raise LookupError(f"request {request_id} has no subject {subject_id}")
        if link.identity_result is not None:  # a retried activity
            return
        link.identity_result = result
        standing = _standing(subject, source)
        previous = dict(standing)
        if source == IdentitySource.PLATFORM:
            subject.kyc = standing["kyc"] = result
        subject.identity_status = standing["identityStatus"] = result
        session.add(link)
        session.add(subject)
        session.flush()
        data = {
            "subjectId": subject_id,
            "contact": subject.contact,
            "source": source,
            "checkId": check_id,
            "message": message,
            "securityLevel": req.security_level,
            "date": at.isoformat(),
            **standing,
            "previous": previous,
        }
        kind = audit.IDENTITY_VERIFIED if success else audit.IDENTITY_FAILED
        entry = audit.Entry(kind, req.organization_id, request_id=request_id, actor=actor, data=data)
        audit.append(session.connection(), key, entry, at)


def _standing(subject: Subject, source: str) -> dict[str, str]:
    """What an identity result changes on the subject: ``identityStatus``, and ``kyc`` for the
    platform's check."""
    standing = {"identityStatus": subject.identity_status}
    if source == IdentitySource.PLATFORM:
        standing["kyc"] = subject.kyc
    return standing


def prior_identity(engine: Engine, subject_id: str) -> tuple[str, str]:
    """(kyc, identityStatus) of the subject as they stand."""
    with read_session(engine) as session:
        subject = session.get(Subject, subject_id)
        if subject is None:
            raise LookupError(f"subject {subject_id} not found")
        return subject.kyc, subject.identity_status


def find_subject(
    engine: Engine, org_id: str, *, contact: str | None = None, subject_id: str | None = None
) -> Subject | None:
    """The organization's subject with that (normalized) contact, or that id; None for another
    organization's subject."""
    with read_session(engine) as session:
        if contact is not None:
            return session.exec(
                select(Subject).where(Subject.organization_id == org_id, Subject.contact == contact)
            ).first()
        found = session.get(Subject, subject_id) if subject_id else None
        return found if found is not None and found.organization_id == org_id else None


def report_organization_check(engine: Engine, org_id: str, subject_id: str, success: bool) -> list[str]:
    """The organization's own identity check of its subject: the subject's status, and the open
    ORGANIZATION_KYC requests that were waiting for it (their workflows are told next)."""
    with write_session(engine) as session:
        subject = session.get(Subject, subject_id)
        if subject is None or subject.organization_id != org_id:
            raise LookupError(f"subject {subject_id} not found")
        subject.identity_status = VERIFIED if success else FAILED
        session.add(subject)
        rows = session.exec(
            select(CredentialRequest.id)
            .join(
                RequestSubject,
                col(RequestSubject.request_id) == CredentialRequest.id,
            )
            .where(
                RequestSubject.subject_id == subject_id,
                col(RequestSubject.identity_result).is_(None),
                CredentialRequest.organization_id == org_id,
                CredentialRequest.status == RequestStatus.PENDING,
                CredentialRequest.security_level == SecurityLevel.ORGANIZATION_KYC,
            )
        )
        return list(rows)
