"""What sending a closed request again reads and makes (issue 32): the request as stored, with
each credential's approval source and inline PDF, turned back into the ``NewRequest`` that
``store.requests.create_request`` inserts, linked to the old one (``resent_from``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, or_
from sqlmodel import col, select

from store import request_queries as queries
from store.db import read_session
from store.requests import ApprovalSource, NewContact, NewCredential, NewRequest, RequestBundle
from store.tables import (
    Credential,
    CredentialApproval,
    CredentialDocument,
    CredentialRequest,
    Organization,
    WebhookEvent,
)

RESENT_EVENT = "request.resent"
FIRST_VERSION = "2026-11-01"  # the API version whose organizations receive it (services.request_resend)


def fact_key(request_id: str) -> str:
    """The fact a ``request.resent`` event reports: the new request's id."""
    return f"{RESENT_EVENT}:{request_id}"


def unannounced(engine: Engine, since: datetime, before: datetime, limit: int = 100) -> list[tuple[str, str]]:
    """(organization, request) of requests sent again between ``since`` and ``before`` whose
    ``request.resent`` event was never made (the API died after the commit, Temporal was away)."""
    with read_session(engine) as session:
        rows = session.exec(
            select(CredentialRequest.organization_id, CredentialRequest.id)
            .join(Organization, col(Organization.id) == CredentialRequest.organization_id)
            .where(
                or_(col(Organization.api_version).is_(None), col(Organization.api_version) >= FIRST_VERSION),
                col(CredentialRequest.resent_from).is_not(None),
                CredentialRequest.created_at >= since,
                CredentialRequest.created_at < before,
            )
            .order_by(col(CredentialRequest.created_at))
            .limit(limit * 4)
        ).all()
        made = set(
            session.exec(
                select(WebhookEvent.fact_key).where(
                    col(WebhookEvent.fact_key).in_([fact_key(r) for _, r in rows])
                )
            )
        )
    return [(org, req) for org, req in rows if fact_key(req) not in made][:limit]


@dataclass(frozen=True)
class Source:
    bundle: RequestBundle
    approvals: dict[str, CredentialApproval]  # by credential id
    documents: dict[str, CredentialDocument]
    resent_as: str | None  # the request it was already sent again as


def resent_as(engine: Engine, request_id: str) -> str | None:
    """The request ``request_id`` was sent again as, if it was."""
    with read_session(engine) as session:
        return session.exec(
            select(CredentialRequest.id).where(CredentialRequest.resent_from == request_id)
        ).first()


def source_of(engine: Engine, org_id: str, request_id: str) -> Source | None:
    bundle = queries.get_request(engine, org_id, request_id)
    if bundle is None:
        return None
    ids = [c.id for c in bundle.credentials]
    with read_session(engine) as session:
        approvals = {
            a.credential_id: a
            for a in session.exec(
                select(CredentialApproval).where(col(CredentialApproval.credential_id).in_(ids))
            )
        }
        documents = {
            d.credential_id: d
            for d in session.exec(
                select(CredentialDocument).where(col(CredentialDocument.credential_id).in_(ids))
            )
        }
    return Source(bundle, approvals, documents, resent_as(engine, request_id))


def new_request_of(
    source: Source, pins: dict[int, tuple[dict[str, Any], list[dict[str, Any]] | None]], reason: str
) -> NewRequest:
    """The request again: the same subjects with their options in this request, the same
    credentials (a credential's action re-pinned where ``pins`` says, by position, with the
    version's limits), its options; a FORM's filled-in values are not carried over."""
    req = source.bundle.request
    contacts = [
        NewContact(
            contact=subject.contact,
            kind=subject.contact_kind,
            internal_id=link.internal_id,
            contact_hash=subject.contact_hash,
            secondary_sealed=link.secondary_contact_sealed,
            secondary_kind=link.secondary_contact_kind,
            signer_quality=link.signer_quality,
            doc_id_hash=link.doc_id_hash,
        )
        for link, subject in sorted(source.bundle.subjects, key=lambda pair: pair[0].position)
    ]
    credentials = [
        _credential_again(source, cred, pins.get(cred.position))
        for cred in sorted(source.bundle.credentials, key=lambda c: c.position)
    ]
    return NewRequest(
        security_level=req.security_level,
        contacts=contacts,
        credentials=credentials,
        name=req.name,
        language=req.language,
        redirect_url=req.redirect_url,
        internal_id=req.internal_id,
        authorized_dids=list(req.authorized_dids),
        iframe_pub_key=req.iframe_pub_key,
        trusted_session_seconds=req.trusted_session_seconds,
        resent_from=req.id,
        resent_reason=reason,
    )


def _credential_again(
    source: Source, cred: Credential, pin: tuple[dict[str, Any], list[dict[str, Any]] | None] | None
) -> NewCredential:
    approval = source.approvals.get(cred.id)
    document = source.documents.get(cred.id)
    new = NewCredential(
        resource_type=cred.resource_type,
        name=cred.name,
        description=cred.description,
        internal_id=cred.internal_id,
        scope=cred.scope,
        tags=list(cred.tags),
        action=cred.action,
        data=cred.data,
        valid_from=cred.valid_from,
        valid_until=cred.valid_until,
        max_executions=cred.max_executions,
        limits=cred.limits,
        placements=cred.placements,
        source=ApprovalSource(
            approval.approval_id, approval.version_id, approval.version, approval.type, approval.workflow_id
        )
        if approval is not None
        else None,
        pdf=(document.digest_sri, document.pdf) if document is not None else None,
    )
    return new if pin is None else replace(new, action=pin[0], limits=pin[1])
