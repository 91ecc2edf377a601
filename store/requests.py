"""Credential requests: creation, queries, and the state changes the request workflow records
(``store.request_records``, re-exported here).

Creation is one transaction: rate limit, idempotency record, subjects, request and credentials.
The workflow is started afterwards (see orchestration.temporal); a row whose workflow has not been marked
started is picked up by the worker's reconciler, so a crash between the two never loses either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from core.ids import new_object_id, new_subject_uuid
from core.kinds import CredentialStatus, RequestStatus, SubjectIdentity, SubjectKyc
from store import audit
from store.db import read_session, upsert_insert, utcnow, write_session
from store.guards import StoredResponse, find_idempotent, requests_created_since, save_idempotent

# what the workflow and the reconciler record, importable from here as they always were
from store.request_records import OPEN_CREDENTIAL_STATES as OPEN_CREDENTIAL_STATES
from store.request_records import TEMPORAL_ACTOR as TEMPORAL_ACTOR
from store.request_records import StoredChoice as StoredChoice
from store.request_records import mark_workflow_started as mark_workflow_started
from store.request_records import mark_workflows_started as mark_workflows_started
from store.request_records import record_cancellation as record_cancellation
from store.request_records import record_decision as record_decision
from store.request_records import record_expiry as record_expiry
from store.request_records import record_link_shown as record_link_shown
from store.request_records import repair_closed_workflow as repair_closed_workflow
from store.tables import (
    Credential,
    CredentialApproval,
    CredentialDocument,
    CredentialRequest,
    Decision,
    Organization,
    RequestSubject,
    Subject,
)
from trust.keys import Ed25519KeyPair


@dataclass(frozen=True)
class NewContact:
    contact: str
    kind: str  # "email" | "phone"
    internal_id: str | None = None
    contact_hash: str | None = None  # its keyed hash (core.otp.JourneySecrets.contact_hash)
    # the subject's options in this request (issue 36): the secondary contact that receives the
    # code, encrypted (core.secretbox), and its kind; the quality in which they sign (None: the
    # one of their latest earlier request in the organization that had one, ``_signer_qualities``)
    secondary_sealed: bytes | None = None
    secondary_kind: str | None = None
    signer_quality: str | None = None
    doc_id_hash: str | None = None  # its docId's keyed hash (core.otp.JourneySecrets.document_hash)


@dataclass(frozen=True)
class NewCredential:
    resource_type: str
    name: str
    description: str | None = None
    internal_id: str | None = None
    scope: str | None = None
    tags: list[str] = field(default_factory=list)
    action: dict[str, Any] | None = None
    data: list[dict[str, Any]] | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    max_executions: int | None = None
    limits: list[dict[str, Any]] | None = None  # the action's bounds (``policy.limits.Bound``)
    placements: list[dict[str, Any]] | None = None  # a DOCUMENT's (``wire.placements``)
    source: ApprovalSource | None = None  # the approval version it was made from (resourcesIds, groupIds)
    pdf: tuple[str, bytes] | None = None  # a DOCUMENT's own PDF given inline: (digestSRI, bytes)


@dataclass(frozen=True)
class ApprovalSource:
    """The approval version a credential was made from (``CredentialApproval``)."""

    approval_id: str
    version_id: str
    version: int
    type: str
    workflow_id: str | None = None


@dataclass(frozen=True)
class NewRequest:
    security_level: str
    contacts: list[NewContact]
    credentials: list[NewCredential]
    name: str | None = None
    language: str = "ENG"
    redirect_url: str | None = None
    internal_id: str | None = None
    authorized_dids: list[str] = field(default_factory=list)
    iframe_pub_key: str | None = None  # trust.frame_jwe.check_frame_key's spelling
    trusted_session_seconds: int | None = None  # ``iframe.cookie``: the session's lifetime if allowed
    resent_from: str | None = None  # the request support sent again as this one (issue 32)
    resent_reason: str | None = None  # why, in its REQUEST_RESENT record


@dataclass
class RequestBundle:
    """A request with everything its full record shows."""

    request: CredentialRequest
    subjects: list[tuple[RequestSubject, Subject]]
    credentials: list[Credential]
    decisions: dict[str, list[tuple[Decision, Subject]]]
    resent_as: str | None = (
        None  # the request it was sent again as (issue 32; request.resent_from: the other way)
    )


class RateLimited(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"retry after {retry_after}s")
        self.retry_after = retry_after


class IdempotencyConflict(Exception):
    pass


@dataclass(frozen=True)
class Replayed:
    status_code: int
    response: dict[str, Any]


@dataclass(frozen=True)
class Idempotency:
    key: str
    body_hash: str
    window: timedelta


def _ensure_subjects(session: Session, org_id: str, contacts: list[NewContact]) -> list[Subject]:
    """Subjects for the contacts, created when new, in two statements; safe against concurrent
    creators (a subject inserted meanwhile by another request is simply found)."""
    now = utcnow()
    table = Subject.__table__  # type: ignore[attr-defined]
    session.execute(
        upsert_insert(session.get_bind().dialect.name)(table)
        .values(
            [
                {
                    "id": new_subject_uuid(),
                    "organization_id": org_id,
                    "contact": c.contact,
                    "contact_kind": c.kind,
                    "contact_hash": c.contact_hash,
                    "identity_status": SubjectIdentity.UNVERIFIED,
                    "kyc": SubjectKyc.NOT_STARTED,
                    "created_at": now,
                }
                for c in contacts
            ]
        )
        .on_conflict_do_nothing(index_elements=["organization_id", "contact"])
    )
    rows = session.execute(
        table.select().where(
            table.c.organization_id == org_id, table.c.contact.in_([c.contact for c in contacts])
        )
    )
    known = {row.contact: Subject(**row._mapping) for row in rows}
    return [known[c.contact] for c in contacts]


def create_request(
    engine: Engine,
    org_id: str,
    new: NewRequest,
    expiry: timedelta,
    rate_per_minute: int,
    idempotency: Idempotency | None,
    render: Any,
    actor: str | None = None,
) -> RequestBundle | Replayed:
    """Insert a request; ``render`` turns the bundle into the stored idempotent response; its
    ``REQUEST_CREATED`` record names ``actor``.

    A concurrent call with the same Idempotency-Key gets the first call's stored response (or
    IdempotencyConflict when its body differs), never a second request or a database error.
    """
    try:
        return _insert_request(engine, org_id, new, expiry, rate_per_minute, idempotency, render, actor)
    except IntegrityError:
        if idempotency is None:
            raise
        # A twin committed the same key first (possible only where the organization lock below is
        # not exclusive); our transaction was rolled back, so answer with the twin's response.
        with read_session(engine) as session:
            earlier = find_idempotent(session, org_id, idempotency.key, idempotency.window)
        if earlier is None:
            raise
        return _replay(earlier, idempotency)


def _replay(earlier: StoredResponse, idempotency: Idempotency) -> Replayed:
    if earlier.body_hash != idempotency.body_hash:
        raise IdempotencyConflict()
    return Replayed(earlier.status_code, earlier.response)


def _lock_organization(session: Session, org_id: str) -> None:
    """Serialize the organization's creations so the rate limit and idempotency see each other.

    PostgreSQL: a row lock (FOR NO KEY UPDATE does not block inserts referencing the row); under
    READ COMMITTED the statements after it see what the previous holder committed. SQLite write
    transactions are already serial (BEGIN IMMEDIATE), so there is nothing to lock.
    """
    if session.get_bind().dialect.name == "sqlite":
        return
    session.exec(
        select(Organization.id).where(Organization.id == org_id).with_for_update(key_share=True)
    ).first()


def _insert_rows(session: Session, rows: list[Any]) -> None:
    """Insert new rows of one table in one statement, without the ORM's per-object bookkeeping
    (the objects are only read afterwards, to render the response)."""
    if rows:
        table = type(rows[0]).__table__
        session.execute(table.insert(), [{c.name: getattr(r, c.name) for c in table.columns} for r in rows])


def _insert_request(
    engine: Engine,
    org_id: str,
    new: NewRequest,
    expiry: timedelta,
    rate_per_minute: int,
    idempotency: Idempotency | None,
    render: Any,
    actor: str | None,
) -> RequestBundle | Replayed:
    key = audit.signer(engine)  # before the transaction (store.audit)
    with write_session(engine) as session:
        _lock_organization(session, org_id)
        now = utcnow()  # after the lock: a waiting creation counts the ones before it
        if idempotency is not None:
            earlier = find_idempotent(session, org_id, idempotency.key, idempotency.window)
            if earlier is not None:
                return _replay(earlier, idempotency)
        recent = requests_created_since(session, org_id, now - timedelta(minutes=1))
        if recent >= rate_per_minute:
            raise RateLimited(retry_after=_retry_after(session, org_id, now))
        bundle = _insert_rows_of(session, org_id, new, now, now + expiry)
        _record_creation(session, key, bundle, actor, now)
        if new.resent_from is not None:
            _record_resend(session, key, bundle, new, actor, now)
        if idempotency is not None:
            save_idempotent(
                session,
                org_id,
                idempotency.key,
                idempotency.body_hash,
                201,
                render(bundle),
                idempotency.window,
            )
    return bundle


def _insert_rows_of(
    session: Session, org_id: str, new: NewRequest, now: datetime, expires_at: datetime
) -> RequestBundle:
    """The request's rows: the request, its subjects (created when new), their links to it and its
    credentials."""
    req = CredentialRequest(
        id=new_object_id(),
        organization_id=org_id,
        security_level=new.security_level,
        name=new.name,
        language=new.language,
        redirect_url=new.redirect_url,
        internal_id=new.internal_id,
        authorized_dids=new.authorized_dids,
        iframe_pub_key=new.iframe_pub_key,
        trusted_session_seconds=new.trusted_session_seconds,
        resent_from=new.resent_from,
        status=RequestStatus.PENDING,
        created_at=now,
        expires_at=expires_at,
    )
    _insert_rows(session, [req])  # before the links that reference it
    subjects = _ensure_subjects(session, org_id, new.contacts)
    earlier = _signer_qualities(
        session,
        req.id,
        [s.id for s, c in zip(subjects, new.contacts, strict=True) if c.signer_quality is None],
    )
    links = [
        RequestSubject(
            request_id=req.id,
            subject_id=s.id,
            position=i,
            internal_id=c.internal_id,
            secondary_contact_sealed=c.secondary_sealed,
            secondary_contact_kind=c.secondary_kind,
            signer_quality=c.signer_quality if c.signer_quality is not None else earlier.get(s.id),
            doc_id_hash=c.doc_id_hash,
        )
        for i, (s, c) in enumerate(zip(subjects, new.contacts, strict=True))
    ]
    _insert_rows(session, links)
    creds = _insert_credentials(session, req.id, new.credentials)
    return RequestBundle(req, list(zip(links, subjects, strict=True)), creds, {})


def _insert_credentials(
    session: Session, request_id: str, credentials: list[NewCredential]
) -> list[Credential]:
    """A request's credentials, with the approval version each was made from and the PDF each was
    given inline."""
    creds = [_new_credential(request_id, i, c) for i, c in enumerate(credentials)]
    _insert_rows(session, creds)
    _insert_rows(
        session,
        [
            CredentialApproval(
                credential_id=row.id,
                approval_id=c.source.approval_id,
                version_id=c.source.version_id,
                version=c.source.version,
                type=c.source.type,
                workflow_id=c.source.workflow_id,
            )
            for row, c in zip(creds, credentials, strict=True)
            if c.source is not None
        ],
    )
    _insert_rows(
        session,
        [
            CredentialDocument(credential_id=row.id, digest_sri=c.pdf[0], pdf=c.pdf[1])
            for row, c in zip(creds, credentials, strict=True)
            if c.pdf is not None
        ],
    )
    return creds


def _signer_qualities(session: Session, request_id: str, subject_ids: list[str]) -> dict[str, str]:
    """The signer quality each subject had in the latest earlier request (of the organization: a
    subject is one organization's) that gave them one: what a request that omits it propagates."""
    if not subject_ids:
        return {}
    newest = (
        func.row_number()
        .over(
            partition_by=col(RequestSubject.subject_id),
            order_by=(col(CredentialRequest.created_at).desc(), col(CredentialRequest.id).desc()),
        )
        .label("newest")
    )
    ranked = (
        select(RequestSubject.subject_id, RequestSubject.signer_quality, newest)
        .join(CredentialRequest, col(CredentialRequest.id) == col(RequestSubject.request_id))
        .where(
            col(RequestSubject.subject_id).in_(subject_ids),
            col(RequestSubject.signer_quality).is_not(None),
            RequestSubject.request_id != request_id,
        )
        .subquery()
    )
    rows = session.execute(select(ranked.c.subject_id, ranked.c.signer_quality).where(ranked.c.newest == 1))
    return {subject_id: quality for subject_id, quality in rows}


def _new_credential(request_id: str, position: int, c: NewCredential) -> Credential:
    return Credential(
        id=new_object_id(),
        request_id=request_id,
        position=position,
        resource_type=c.resource_type,
        status=CredentialStatus.DRAFT,
        name=c.name,
        description=c.description,
        internal_id=c.internal_id,
        scope=c.scope,
        tags=c.tags,
        action=c.action,
        data=c.data,
        valid_from=c.valid_from,
        valid_until=c.valid_until,
        max_executions=c.max_executions,
        limits=c.limits,
        placements=c.placements,
    )


def _record_creation(
    session: Session, key: Ed25519KeyPair, bundle: RequestBundle, actor: str | None, now: datetime
) -> None:
    """The request's ``REQUEST_CREATED`` record, naming ``actor``."""
    req = bundle.request
    audit.append(
        session.connection(),
        key,
        audit.Entry(
            audit.REQUEST_CREATED,
            req.organization_id,
            request_id=req.id,
            actor=actor,
            data={
                "name": req.name,
                "securityLevel": req.security_level,
                "subjects": [s.id for _, s in bundle.subjects],
                "credentials": [c.id for c in bundle.credentials],
            },
        ),
        now,
    )


def _record_resend(
    session: Session,
    key: Ed25519KeyPair,
    bundle: RequestBundle,
    new: NewRequest,
    actor: str | None,
    now: datetime,
) -> None:
    """``REQUEST_RESENT`` on the request sent again, naming the new one, ``actor`` and the reason."""
    data: dict[str, Any] = {"newRequestId": bundle.request.id}
    if new.resent_reason:
        data["reason"] = new.resent_reason
    entry = audit.Entry(
        audit.REQUEST_RESENT,
        bundle.request.organization_id,
        request_id=new.resent_from,
        actor=actor,
        data=data,
    )
    audit.append(session.connection(), key, entry, now)


def _retry_after(session: Session, org_id: str, now: datetime) -> int:
    """Seconds until the oldest creation of the last minute leaves the window."""
    oldest = session.exec(
        select(func.min(CredentialRequest.created_at)).where(
            CredentialRequest.organization_id == org_id,
            CredentialRequest.created_at >= now - timedelta(minutes=1),
        )
    ).one()
    if oldest is None:
        return 1
    return max(1, int((oldest + timedelta(minutes=1) - now).total_seconds()) + 1)
