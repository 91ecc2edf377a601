"""Turning stored requests into SPEC.md's shapes."""

from __future__ import annotations

from datetime import UTC, datetime

from core.settings import Settings
from store.requests import RequestBundle
from store.tables import Credential, RequestSubject, Subject
from trust.did import web_organization_did, web_subject_did
from wire.limit_views import executions_remaining, limit_uses
from wire.models import (
    ContactOut,
    CredentialListItem,
    CredentialOut,
    DecisionOut,
    LimitUse,
    RequestListItem,
    RequestOut,
    SubjectListItem,
    SubjectOrganization,
    SubjectOut,
)
from wire.placements import PlacementOut


def _subject(settings: Settings, subject: Subject, link: RequestSubject) -> SubjectOut:
    return SubjectOut(
        id=web_subject_did(settings.public_url, subject.id),
        contact=subject.contact,
        contacts=[ContactOut(id=f"{subject.id}:{subject.contact_kind}", contact=subject.contact)],
        identityStatus=subject.identity_status,
        organization=SubjectOrganization(contacts=[subject.contact]),
        createdAt=subject.created_at,
        internalId=link.internal_id or subject.internal_id,  # else its user's (POST /user)
        kyc=subject.kyc,
        signerQuality=link.signer_quality,
    )


def _credential(bundle: RequestBundle, cred: Credential, now: datetime) -> CredentialOut:
    return CredentialOut(
        id=cred.mandate_id or cred.id,
        resourceType=cred.resource_type,
        status=cred.status,
        w3cCredential=cred.w3c_credential,
        name=cred.name,
        description=cred.description,
        internalId=cred.internal_id,
        tags=list(cred.tags),
        scope=cred.scope,
        action=cred.action,
        data=cred.data,
        validFrom=cred.valid_from,
        validUntil=cred.valid_until,
        placements=[PlacementOut(**p) for p in cred.placements or []],
        maxExecutions=cred.max_executions,
        executionsRemaining=executions_remaining(cred, now),
        limits=[LimitUse(**use) for use in limit_uses(cred, now)],
        decisions=[
            DecisionOut(id=d.id, contact=s.contact, accepted=d.accepted, decidedAt=d.decided_at)
            for d, s in bundle.decisions.get(cred.id, [])
        ],
    )


def request_out(settings: Settings, bundle: RequestBundle) -> RequestOut:
    req, now = bundle.request, datetime.now(UTC)
    return RequestOut(
        id=req.id,
        securityLevel=req.security_level,
        createdAt=req.created_at,
        subjects=[_subject(settings, s, link) for link, s in bundle.subjects],
        credentials=[_credential(bundle, c, now) for c in bundle.credentials],
        name=req.name,
        language=req.language,
        redirectUrl=req.redirect_url,
        internalId=req.internal_id,
        canceledAt=req.canceled_at,
        status=req.status,
        expiresAt=req.expires_at,
        # the organization first, each DID once (CONTRACT 3)
        authorizedDIDs=list(
            dict.fromkeys(
                [web_organization_did(settings.public_url, req.organization_id), *req.authorized_dids]
            )
        ),
        resentFrom=req.resent_from,
        resentAs=bundle.resent_as,
    )


def request_list_item(settings: Settings, bundle: RequestBundle) -> RequestListItem:
    req = bundle.request
    return RequestListItem(
        id=req.id,
        securityLevel=req.security_level,
        createdAt=req.created_at,
        name=req.name,
        language=req.language,
        redirectUrl=req.redirect_url,
        internalId=req.internal_id,
        canceledAt=req.canceled_at,
        status=req.status,
        subjects=[
            SubjectListItem(
                contact=s.contact,
                did=web_subject_did(settings.public_url, s.id),
                internalId=link.internal_id or s.internal_id,
                name=None,
                identityStatus=s.identity_status,
                kyc=s.kyc,
            )
            for link, s in bundle.subjects
        ],
        credentials=[
            CredentialListItem(
                id=c.mandate_id or c.id,
                resourceType=c.resource_type,
                status=c.status,
                name=c.name,
                internalId=c.internal_id,
            )
            for c in bundle.credentials
        ],
    )
