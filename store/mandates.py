"""Storing an issued credential once every subject has accepted it (CONTRACT 3 and 9); the
credential's forms are built and signed by ``services.mandates``, called back inside the
transaction.

``issue`` is the body of the workflow's issuance activity. It is idempotent: the credential row is
locked, and a credential that already has its ``mandate_id`` is returned as it is, so an activity
retried after a worker died mid-way (before or after the commit) never yields a second credential.
Everything is written in one transaction: the signed mandate (POLICY) or document (DOCUMENT), the
document form of it, the status list entry and the ACTIVE status.

Status list indices come from a list shared by all organizations; the n-th entry of a list gets
index ``n * STRIDE mod LENGTH`` (STRIDE odd, LENGTH a power of two: a permutation), so neighbouring
mandates do not sit at neighbouring bits and a list tells nothing about issuance order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from core.kinds import OPEN_CREDENTIAL_STATUSES, CredentialStatus
from store import audit
from store.db import read_session, utcnow, write_session
from store.tables import (
    ActionVersion,
    Credential,
    CredentialRequest,
    Decision,
    RequestSubject,
    StatusList,
    Subject,
)
from trust.keys import Ed25519KeyPair

REVOCATION = "revocation"
STATUS_LIST_LENGTH = 131_072  # 16 KiB: the Bitstring Status List minimum, for herd privacy
STRIDE = 40_503  # odd, so n -> n * STRIDE mod 2**17 is a permutation


@dataclass(frozen=True)
class Issued:
    credential_id: str
    mandate_id: str
    resource_type: str
    newly_issued: bool


class NotIssuable(Exception):
    """The credential cannot be issued (not every subject accepted, or it is no longer open)."""


class IssuanceFailed(Exception):
    """The credential's stored content cannot be signed (a value JCS cannot hold, a malformed
    item): no retry can change that. ``reason`` is a fixed code, never a stored value."""

    def __init__(self, credential_id: str, reason: str) -> None:
        super().__init__(f"credential {credential_id} cannot be issued: {reason}")
        self.reason = reason


@dataclass(frozen=True)
class Draft:
    """What the signer of an accepted credential is given, inside the issuing transaction."""

    credential: Credential
    request: CredentialRequest
    acceptances: list[tuple[Subject, Decision]]  # every subject with their decision, request order
    status_list_id: str
    status_list_index: int
    action_name: str | None  # the pinned action's name, for a mandate
    # each subject's signer quality in this request, by subject id, when they have one (issue 36)
    signer_qualities: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Signed:
    mandate_id: str
    w3c_credential: dict[str, Any]  # the mandate (POLICY) or the document (DOCUMENT)
    document_credential: dict[str, Any]


def issue(
    engine: Engine,
    issuer_key: Ed25519KeyPair,
    credential_id: str,
    now: datetime,
    sign: Callable[[Draft], Signed],
    actor: str | None = None,
) -> Issued:
    """Issue ``credential_id`` if it is not issued yet, with what ``sign`` makes of it (an exception
    from ``sign`` rolls everything back: no status entry is spent); return what it is issued as.
    The ``MANDATE_ISSUED`` record names ``actor``."""
    with write_session(engine) as session:
        cred = session.exec(
            select(Credential).where(Credential.id == credential_id).with_for_update()
        ).one_or_none()
        if cred is None:
            raise NotIssuable(f"credential {credential_id} does not exist")
        if cred.mandate_id is not None and cred.w3c_credential is not None:
            return Issued(cred.id, cred.mandate_id, cred.resource_type, newly_issued=False)
        if cred.status not in OPEN_CREDENTIAL_STATUSES:
            raise NotIssuable(f"credential {credential_id} is {cred.status}")
        request = session.get(CredentialRequest, cred.request_id)
        assert request is not None
        acceptances, qualities = _acceptances(session, request, cred)
        list_id, index = _allocate_status_entry(session, now)
        signed = sign(
            Draft(cred, request, acceptances, list_id, index, _action_name(session, cred), qualities)
        )
        cred.mandate_id = signed.mandate_id
        cred.w3c_credential, cred.document_credential = signed.w3c_credential, signed.document_credential
        cred.status_list_id, cred.status_list_index = list_id, index
        cred.status, cred.issued_at = CredentialStatus.ACTIVE, now
        session.add(cred)
        session.flush()
        action = cred.action or {}
        audit.append(
            session.connection(),
            issuer_key,
            audit.Entry(
                audit.MANDATE_ISSUED,
                request.organization_id,
                request_id=request.id,
                credential_id=cred.mandate_id,
                actor=actor,
                data={
                    "credentialId": cred.id,
                    "resourceType": cred.resource_type,
                    "actionId": action.get("id"),
                    "actionVersion": action.get("version"),
                    "userParams": action.get("userParams"),
                    "credential": cred.w3c_credential,
                },
            ),
            now,
        )
        return Issued(cred.id, cred.mandate_id, cred.resource_type, newly_issued=True)


def record_issuance_failure(
    engine: Engine, credential_id: str, reason: str, now: datetime | None = None, actor: str | None = None
) -> bool:
    """Mark an accepted credential that can never be signed ``FAILED``, with its
    ``MANDATE_ISSUANCE_FAILED`` audit record, once; False when it is no longer open (failed
    already, or issued)."""
    return move_unissued(
        engine,
        credential_id,
        OPEN_CREDENTIAL_STATUSES,
        CredentialStatus.FAILED,
        audit.MANDATE_ISSUANCE_FAILED,
        lambda cred: {"credentialId": cred.id, "resourceType": cred.resource_type, "reason": reason},
        actor,
        now,
    )


def move_unissued(
    engine: Engine,
    credential_id: str,
    from_statuses: Iterable[str],
    to_status: str,
    record: str,
    data: Callable[[Credential], dict[str, Any]],
    actor: str | None,
    now: datetime | None = None,
) -> bool:
    """Move a credential that has no mandate from one of ``from_statuses`` to ``to_status``, with
    its ``record`` audit record (``data`` of the credential) naming ``actor``, in one transaction
    that holds the credential's row; False (nothing written) when it is in no such state."""
    key = audit.signer(engine)
    now = now or utcnow()
    with write_session(engine) as session:
        cred = session.exec(
            select(Credential).where(Credential.id == credential_id).with_for_update()
        ).one_or_none()
        if cred is None or cred.status not in tuple(from_statuses) or cred.mandate_id is not None:
            return False
        request = session.get(CredentialRequest, cred.request_id)
        assert request is not None
        cred.status = to_status
        session.add(cred)
        session.flush()
        entry = audit.Entry(
            record,
            request.organization_id,
            request_id=request.id,
            credential_id=cred.id,
            actor=actor,
            data=data(cred),
        )
        audit.append(session.connection(), key, entry, now)
        return True


def _acceptances(
    session: Session, request: CredentialRequest, cred: Credential
) -> tuple[list[tuple[Subject, Decision]], dict[str, str]]:
    """Every subject of the request (request order) with their decision on ``cred``, and their
    signer qualities; raises NotIssuable unless every one of them accepted."""
    subjects = list(
        session.exec(
            select(RequestSubject, Subject)
            .join(Subject, col(Subject.id) == RequestSubject.subject_id)
            .where(RequestSubject.request_id == request.id)
            .order_by(col(RequestSubject.position))
        )
    )
    decisions = {
        d.subject_id: d for d in session.exec(select(Decision).where(Decision.credential_id == cred.id))
    }
    missing = [s.contact for _, s in subjects if s.id not in decisions or not decisions[s.id].accepted]
    if missing:
        raise NotIssuable(f"credential {cred.id} is not accepted by {', '.join(missing)}")
    qualities = {subject.id: link.signer_quality for link, subject in subjects if link.signer_quality}
    return [(subject, decisions[subject.id]) for _, subject in subjects], qualities


def _action_name(session: Session, cred: Credential) -> str | None:
    version_id = (cred.action or {}).get("version")
    version = session.get(ActionVersion, version_id) if version_id else None
    return None if version is None else str(version.content.get("name"))


# --- status lists -----------------------------------------------------------------------------


def _allocate_status_entry(session: Session, now: datetime) -> tuple[str, int]:
    """The next free entry of the open revocation list (a new list when all are full)."""
    current = session.exec(
        select(StatusList)
        .where(StatusList.purpose == REVOCATION, col(StatusList.allocated) < col(StatusList.length))
        .order_by(col(StatusList.created_at))
        .limit(1)
        .with_for_update()
    ).first()
    if current is None:
        current = StatusList(
            id=str(uuid.uuid4()), purpose=REVOCATION, length=STATUS_LIST_LENGTH, allocated=0, created_at=now
        )
    position = current.allocated
    current.allocated = position + 1
    session.add(current)
    session.flush()
    return current.id, (position * STRIDE) % current.length


def accepted_decision(engine: Engine, org_id: str, decision_id: str) -> Decision | None:
    """An acceptance of a credential of the organization's requests, by its id."""
    with read_session(engine) as session:
        row = session.execute(
            select(Decision)
            .join(Credential, col(Credential.id) == col(Decision.credential_id))
            .join(CredentialRequest, col(CredentialRequest.id) == col(Credential.request_id))
            .where(
                col(Decision.id) == decision_id,
                col(Decision.accepted).is_(True),
                col(CredentialRequest.organization_id) == org_id,
            )
        ).scalar_one_or_none()
        if row is not None:
            session.expunge(row)
        return row
