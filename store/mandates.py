"""Issuing a credential once every subject has accepted it (CONTRACT 3 and 9).

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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from core.ids import urn
from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit, keys
from store.db import utcnow, write_session
from store.tables import (
    ActionVersion,
    Credential,
    CredentialRequest,
    Decision,
    RequestSubject,
    StatusList,
    Subject,
)
from trust import credentials as vc
from trust import jcs
from trust.eddsa_jcs import MalformedProof
from trust.jcs import CanonicalizationError
from trust.keys import Ed25519KeyPair

OPEN_STATES = ("DRAFT", "PENDING")
ACTIVE = "ACTIVE"
FAILED = "FAILED"  # every subject accepted, but the content can never be signed
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


# what signing raises for content that can never be signed (CanonicalizationError is a ValueError)
UNSIGNABLE = (ValueError, TypeError, OverflowError, RecursionError, MalformedProof)


def issue(
    engine: Engine, cipher: SecretCipher, settings: Settings, credential_id: str, now: datetime | None = None
) -> Issued:
    """Issue ``credential_id`` if it is not issued yet; return what it is issued as."""
    issuer_key = keys.service_signing_key(engine, cipher, settings)  # before the write lock
    now = now or utcnow()
    with write_session(engine) as session:
        cred = session.exec(
            select(Credential).where(Credential.id == credential_id).with_for_update()
        ).one_or_none()
        if cred is None:
            raise NotIssuable(f"credential {credential_id} does not exist")
        if cred.mandate_id is not None and cred.w3c_credential is not None:
            return Issued(cred.id, cred.mandate_id, cred.resource_type, newly_issued=False)
        if cred.status not in OPEN_STATES:
            raise NotIssuable(f"credential {credential_id} is {cred.status}")
        request = session.get(CredentialRequest, cred.request_id)
        assert request is not None
        grantors, evidences = _acceptances(session, settings, request, cred)
        list_id, index = _allocate_status_entry(session, now)
        try:
            _sign_into(
                cred,
                settings,
                issuer_key,
                request,
                grantors,
                evidences,
                _status_entry(settings, list_id, index),
                _action_name(session, cred),
                now,
            )
        except UNSIGNABLE as exc:  # the transaction rolls back: no status entry is spent
            reason = "not_canonicalizable" if isinstance(exc, CanonicalizationError) else "malformed_content"
            raise IssuanceFailed(cred.id, reason) from exc
        cred.status_list_id, cred.status_list_index = list_id, index
        cred.status, cred.issued_at = ACTIVE, now
        session.add(cred)
        assert cred.mandate_id is not None
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
    engine: Engine, credential_id: str, reason: str, now: datetime | None = None
) -> bool:
    """Mark an accepted credential that can never be signed ``FAILED``, with its
    ``MANDATE_ISSUANCE_FAILED`` audit record, once; False when it is no longer open (failed
    already, or issued)."""
    key = audit.signer(engine)
    now = now or utcnow()
    with write_session(engine) as session:
        cred = session.exec(
            select(Credential).where(Credential.id == credential_id).with_for_update()
        ).one_or_none()
        if cred is None or cred.status not in OPEN_STATES or cred.mandate_id is not None:
            return False
        request = session.get(CredentialRequest, cred.request_id)
        assert request is not None
        cred.status = FAILED
        session.add(cred)
        session.flush()
        audit.append(
            session.connection(),
            key,
            audit.Entry(
                audit.MANDATE_ISSUANCE_FAILED,
                request.organization_id,
                request_id=request.id,
                credential_id=cred.id,
                data={"credentialId": cred.id, "resourceType": cred.resource_type, "reason": reason},
            ),
            now,
        )
        return True


def _acceptances(
    session: Session, settings: Settings, request: CredentialRequest, cred: Credential
) -> tuple[list[str], list[dict[str, str]]]:
    """The accepting subjects' DIDs (request order) and one evidence item per decision; raises
    NotIssuable unless every subject of the request accepted."""
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
    location = f"{settings.public_url.rstrip('/')}/request/{request.id}"
    evidences = []
    for _, subject in subjects:
        decision = decisions[subject.id]
        record = {
            "id": decision.id,
            "subject": settings.subject_did(subject.id),
            "credential": cred.id,
            "accepted": True,
            "channel": decision.channel,
            "surface": decision.surface,
            "decidedAt": decision.decided_at.isoformat().replace("+00:00", "Z"),
        }
        evidences.append(vc.evidence_entry(decision.id, jcs.canonicalize(record), location))
    return [settings.subject_did(s.id) for _, s in subjects], evidences


def _action_name(session: Session, cred: Credential) -> str | None:
    version_id = (cred.action or {}).get("version")
    version = session.get(ActionVersion, version_id) if version_id else None
    return None if version is None else str(version.content.get("name"))


def _sign_into(
    cred: Credential,
    settings: Settings,
    key: Ed25519KeyPair,
    request: CredentialRequest,
    grantors: list[str],
    evidences: list[dict[str, str]],
    status: dict[str, Any],
    action_name: str | None,
    now: datetime,
) -> None:
    org_did = settings.organization_did(request.organization_id)
    mandate_id = urn("credential")
    valid_from = cred.valid_from or now
    document = vc.document_credential(
        credential_id=mandate_id,
        issuer_key=key,
        context_url=settings.context_url,
        organization_did=org_did,
        data=_document_data(cred, action_name),
        valid_from=valid_from,
        valid_until=cred.valid_until,
        issuance_date=now,
        evidences=evidences,
        credential_status=status,
    )
    if cred.resource_type == "POLICY":
        authorized = list(dict.fromkeys([org_did, *request.authorized_dids]))
        cred.w3c_credential = vc.mandate_credential(
            credential_id=mandate_id,
            issuer_key=key,
            context_url=settings.context_url,
            organization_did=org_did,
            grantors=grantors,
            scope=cred.scope or "",
            authorized_dids=authorized,
            valid_from=valid_from,
            valid_until=cred.valid_until,
            created=now,
            action=cred.action,
            evidences=evidences,
            credential_status=status,
        )
    else:
        cred.w3c_credential = document
    cred.document_credential = document
    cred.mandate_id = mandate_id


def _document_data(cred: Credential, action_name: str | None) -> list[dict[str, Any]]:
    """What the subject approved, as document items: the data of a DOCUMENT, or for a mandate the
    action and each approved userParam."""
    if cred.resource_type != "POLICY":
        return [dict(item) for item in cred.data or []]
    action = cred.action or {}
    items = [
        _item("Action", action_name or str(action.get("id", ""))),
        _item("Action version", str(action.get("version", ""))),
    ]
    if cred.scope:
        items.append(_item("Scope", cred.scope))
    for name, value in (action.get("userParams") or {}).items():
        items.append(_item(name, value if isinstance(value, str) else jcs.canonicalize(value).decode()))
    return items


def _item(label: str, value: str) -> dict[str, Any]:
    return {"label": label, "type": "text", "value": value, "hidden": False, "fields": []}


# --- status lists -----------------------------------------------------------------------------


def _status_entry(settings: Settings, list_id: str, index: int) -> dict[str, Any]:
    url = settings.status_list_url(list_id)
    return {
        "id": f"{url}#{index}",
        "type": "BitstringStatusListEntry",
        "statusPurpose": REVOCATION,
        "statusListIndex": str(index),
        "statusListCredential": url,
    }


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
