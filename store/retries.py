"""Support's retries of a request (issue 32): a credential whose issuance failed for good made
issuable again (``FAILED`` back to ``PENDING``, with a ``MANDATE_ISSUANCE_RETRIED`` record naming
who and why), once per retry; what a retry reads (the credential, its last acceptance); a
subject's identity checks that errored at the provider closed so that a fresh one can start."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlmodel import col, select

from core.kinds import CredentialStatus, IdentityStatus, SubjectKyc
from store import audit
from store.db import read_session, utcnow, write_session
from store.mandates import move_unissued
from store.tables import Credential, CredentialRequest, Decision, KycCheck, Subject


@dataclass(frozen=True)
class FoundCredential:
    credential_id: str
    request_id: str
    organization_id: str
    status: str
    mandate_id: str | None


@dataclass(frozen=True)
class LastAcceptance:
    """The acceptance that completed a credential's acceptance: the one its issuance followed."""

    decision_id: str
    subject_id: str
    decided_at: datetime


def find_credential(engine: Engine, credential_id: str, org_id: str | None = None) -> FoundCredential | None:
    """The credential with its request's organization (``org_id``: only one of that organization's)."""
    with read_session(engine) as session:
        query = (
            select(Credential, CredentialRequest)
            .join(CredentialRequest, col(CredentialRequest.id) == Credential.request_id)
            .where(Credential.id == credential_id)
        )
        if org_id is not None:
            query = query.where(CredentialRequest.organization_id == org_id)
        row = session.exec(query).first()
    if row is None:
        return None
    cred, request = row
    return FoundCredential(cred.id, request.id, request.organization_id, cred.status, cred.mandate_id)


def last_acceptance(engine: Engine, credential_id: str) -> LastAcceptance | None:
    with read_session(engine) as session:
        decision = session.exec(
            select(Decision)
            .where(Decision.credential_id == credential_id, col(Decision.accepted).is_(True))
            .order_by(col(Decision.decided_at).desc(), col(Decision.id).desc())
        ).first()
    if decision is None:
        return None
    return LastAcceptance(decision.id, decision.subject_id, decision.decided_at)


def reopen_failed(
    engine: Engine, credential_id: str, actor: str, reason: str, now: datetime | None = None
) -> bool:
    """Make a ``FAILED`` credential issuable again (``PENDING``), with its ``MANDATE_ISSUANCE_RETRIED``
    record naming ``actor`` and ``reason``; False (nothing written) when it is not FAILED, as when
    a retried activity runs again after its first run committed."""
    return move_unissued(
        engine,
        credential_id,
        (CredentialStatus.FAILED,),
        CredentialStatus.PENDING,
        audit.MANDATE_ISSUANCE_RETRIED,
        lambda cred: {"credentialId": cred.id, "reason": reason},
        actor,
        now,
    )


# --- an identity check that errored at the provider ----------------------------------------------

# a platform check closed by support as errored at the provider: it was never reported (it stayed
# PENDING), and a late report of it changes nothing (``store.kyc.complete_check`` completes only
# PENDING checks, ``orchestration.identity`` hands the workflow only VERIFIED or FAILED ones)
ERRORED = "ERROR"


def errored_checks(engine: Engine, request_id: str, subject_id: str) -> list[str]:
    """The subject's platform checks in the request the provider never reported (still PENDING)."""
    with read_session(engine) as session:
        return list(
            session.exec(
                select(KycCheck.id).where(
                    KycCheck.request_id == request_id,
                    KycCheck.subject_id == subject_id,
                    KycCheck.status == IdentityStatus.PENDING,
                )
            )
        )


def restart_identity(
    engine: Engine, request_id: str, subject_id: str, actor: str, reason: str, now: datetime | None = None
) -> list[str]:
    """Close the subject's unreported checks as errored (``ERROR``) and their platform standing back
    to NOT_STARTED (unless VERIFIED), so that the approval page offers a fresh check, with one
    ``IDENTITY_CHECK_RESTARTED`` record naming ``actor`` and ``reason`` (and ``kyc`` with its
    ``previous`` value when the standing moved); the checks closed ([] and
    nothing written when none is open, as when a retried activity runs again)."""
    key = audit.signer(engine)
    now = now or utcnow()
    with write_session(engine) as session:
        checks = list(
            session.exec(
                select(KycCheck)
                .where(
                    KycCheck.request_id == request_id,
                    KycCheck.subject_id == subject_id,
                    KycCheck.status == IdentityStatus.PENDING,
                )
                .with_for_update()
            )
        )
        if not checks:
            return []
        for check in checks:
            check.status, check.message, check.completed_at = ERRORED, "errored at the provider", now
            session.add(check)
        ids = [c.id for c in checks]
        data: dict[str, Any] = {"subjectId": subject_id, "checks": ids, "reason": reason}
        subject = session.get(Subject, subject_id)
        if subject is not None and subject.kyc == SubjectKyc.PENDING:
            data.update(kyc=SubjectKyc.NOT_STARTED, previous={"kyc": subject.kyc})
            subject.kyc = SubjectKyc.NOT_STARTED
            session.add(subject)
        request = session.get(CredentialRequest, request_id)
        assert request is not None
        session.flush()
        audit.append(
            session.connection(),
            key,
            audit.Entry(
                audit.IDENTITY_CHECK_RESTARTED,
                request.organization_id,
                request_id=request_id,
                actor=actor,
                data=data,
            ),
            now,
        )
        return ids
