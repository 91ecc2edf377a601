"""An organization's credentials by id or mandate URN, a filtered page of them (the dashboard's
list), and revoking a mandate (CONTRACT 4, 5, 9).

Revocation is one transaction whose first statement is a conditional UPDATE (``... WHERE status =
'ACTIVE'``): of concurrent revocations of one mandate exactly one changes the row and goes on,
the others see nothing to change and get ``NotActive`` (on PostgreSQL the loser's UPDATE waits for
the winner's row lock and then re-reads the row; SQLite writes are serial). The same transaction
then records the ``MANDATE_REVOKED`` receipt and the document form with its ``REVOKE`` proof item
(both signed by ``services.mandates``, called back inside the transaction), so a revocation is
either wholly there or not at all.

The mandate form (``w3c_credential``) is never changed: a mandate is immutable, and its revocation
is published through its Bitstring Status List entry (``store.status_lists``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, update
from sqlmodel import Session, col, func, select

from core.ids import is_object_id
from core.kinds import CredentialStatus
from store import audit
from store.db import read_session, write_session
from store.tables import Credential, CredentialRequest, Decision, Organization, RequestSubject, Subject
from trust.eddsa_jcs import format_datetime
from trust.keys import Ed25519KeyPair

MANDATE_URN_RE = re.compile(
    r"urn:via:credential:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


class NotFound(Exception):
    """No such credential in the caller's organization (or none at all: never say which)."""


class NotActive(Exception):
    def __init__(self, status: str) -> None:
        super().__init__(f"the credential is {status}; only an ACTIVE mandate can be revoked")
        self.status = status


@dataclass(frozen=True)
class Revoked:
    credential_id: str  # the mandate URN
    revoked_at: datetime
    receipt: dict[str, Any]


@dataclass(frozen=True)
class CredentialRecord:
    """What GET /credential shows and the PDF renders."""

    credential: Credential
    request: CredentialRequest
    organization_name: str
    decisions: list[tuple[Decision, Subject]]


def parse_reference(value: str) -> tuple[str, str] | None:
    """``("id", <24-hex>)`` or ``("mandate", <URN>)`` for a credential reference, else None.

    Entity ids are lower case only (CONTRACT 3); the UUID of a mandate URN is case-insensitive
    (RFC 4122), so it is looked up in the lower-case form we issue."""
    if is_object_id(value):
        return "id", value
    if MANDATE_URN_RE.fullmatch(value):
        return "mandate", value.lower()
    return None


def _owned(session: Session, organization_id: str, reference: tuple[str, str]) -> Credential | None:
    kind, value = reference
    column = col(Credential.id) if kind == "id" else col(Credential.mandate_id)
    found = session.exec(
        select(Credential)
        .join(CredentialRequest, col(CredentialRequest.id) == Credential.request_id)
        .where(column == value, col(CredentialRequest.organization_id) == organization_id)
    ).first()
    return found


def owner_of(engine: Engine, reference: tuple[str, str]) -> tuple[str, str] | None:
    """The organization and request of the credential ``reference`` names, whoever's it is (for
    the operators' shell, which acts for every organization); None when there is none."""
    kind, value = reference
    column = col(Credential.id) if kind == "id" else col(Credential.mandate_id)
    with read_session(engine) as session:
        found = session.exec(
            select(CredentialRequest.organization_id, CredentialRequest.id)
            .join(Credential, col(Credential.request_id) == CredentialRequest.id)
            .where(column == value)
        ).first()
    return None if found is None else (found[0], found[1])


def find_credential(
    engine: Engine, organization_id: str, reference: tuple[str, str]
) -> CredentialRecord | None:
    """The organization's credential with its request, organization name and decisions."""
    with read_session(engine) as session:
        cred = _owned(session, organization_id, reference)
        if cred is None:
            return None
        request = session.get(CredentialRequest, cred.request_id)
        organization = session.get(Organization, organization_id)
        assert request is not None and organization is not None
        decisions = list(
            session.exec(
                select(Decision, Subject)
                .join(Subject, col(Subject.id) == Decision.subject_id)
                .where(Decision.credential_id == cred.id)
                .order_by(col(Decision.decided_at))
            )
        )
        return CredentialRecord(cred, request, organization.name, [(d, s) for d, s in decisions])


@dataclass(frozen=True)
class CredentialFilter:
    """Which of an organization's credentials a page shows: one status, one request, or all."""

    status: str | None = None
    request_id: str | None = None
    page_index: int = 0
    page_size: int = 20


@dataclass(frozen=True)
class ListedCredential:
    credential: Credential
    subjects: list[Subject]  # the request's subjects, request order


def _subjects(session: Session, request_ids: set[str]) -> dict[str, list[Subject]]:
    found: dict[str, list[Subject]] = {}
    for link, subject in session.exec(
        select(RequestSubject, Subject)
        .join(Subject, col(Subject.id) == RequestSubject.subject_id)
        .where(col(RequestSubject.request_id).in_(request_ids))
        .order_by(col(RequestSubject.position))
    ):
        found.setdefault(link.request_id, []).append(subject)
    return found


def subjects_of(engine: Engine, request_id: str) -> list[Subject]:
    """A request's subjects in request order (a credential's subjects, decided or not)."""
    with read_session(engine) as session:
        return _subjects(session, {request_id}).get(request_id, [])


def list_credentials(
    engine: Engine, organization_id: str, f: CredentialFilter
) -> tuple[list[ListedCredential], int]:
    """A page of the organization's credentials, the newest request first (a request's own in their
    order), with their subjects, and how many match in all: three statements whatever the page's
    size."""
    conds: list[Any] = [col(CredentialRequest.organization_id) == organization_id]
    if f.status is not None:
        conds.append(col(Credential.status) == f.status)
    if f.request_id is not None:
        conds.append(col(Credential.request_id) == f.request_id)
    with read_session(engine) as session:
        total = session.exec(
            select(func.count())
            .select_from(Credential)
            .join(CredentialRequest, col(CredentialRequest.id) == Credential.request_id)
            .where(*conds)
        ).one()
        page = list(
            session.exec(
                select(Credential)
                .join(CredentialRequest, col(CredentialRequest.id) == Credential.request_id)
                .where(*conds)
                .order_by(
                    col(CredentialRequest.created_at).desc(),
                    col(CredentialRequest.id).desc(),
                    col(Credential.position),
                )
                .offset(f.page_index * f.page_size)
                .limit(f.page_size)
            )
        )
        subjects = _subjects(session, {c.request_id for c in page}) if page else {}
        return [ListedCredential(c, subjects.get(c.request_id, [])) for c in page], int(total)


def revoke(
    engine: Engine,
    key: Ed25519KeyPair,
    organization_id: str,
    reference: tuple[str, str],
    reason: str | None,
    now: datetime,
    sign: Callable[[Credential], tuple[dict[str, Any], dict[str, Any]]],
    actor: str | None = None,
) -> Revoked:
    """Revoke the organization's ACTIVE mandate; NotFound / NotActive otherwise. ``sign`` makes the
    receipt and the document form with its REVOKE item from the row, inside the transaction; the
    ``MANDATE_REVOKED`` record names ``actor``."""
    with write_session(engine) as session:
        cred = _owned(session, organization_id, reference)
        if cred is None:
            raise NotFound()
        changed = session.execute(
            update(Credential)
            .where(col(Credential.id) == cred.id, col(Credential.status) == CredentialStatus.ACTIVE)
            .values(status=CredentialStatus.REVOKED, revoked_at=now, revocation_reason=reason)
        )
        if changed.rowcount != 1:  # type: ignore[attr-defined]
            session.refresh(cred)
            raise NotActive(cred.status)
        session.refresh(cred)  # the row as this transaction now holds it (locked until commit)
        assert cred.mandate_id is not None and cred.document_credential is not None  # ACTIVE: issued
        signed, document = sign(cred)
        session.execute(
            update(Credential)
            .where(col(Credential.id) == cred.id)
            .values(revocation_receipt=signed, document_credential=document)
        )
        audit.append(
            session.connection(),
            key,
            audit.Entry(
                audit.MANDATE_REVOKED,
                organization_id,
                request_id=cred.request_id,
                credential_id=cred.mandate_id,
                actor=actor,
                data={
                    "mandateId": cred.mandate_id,
                    "reason": reason,
                    "revokedAt": format_datetime(now),
                    "receipt": signed,
                },
            ),
            now,
        )
        return Revoked(cred.mandate_id, now, signed)
