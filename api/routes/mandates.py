"""Issued credentials: revoke a mandate, read a credential (with an optional PDF), and the public
Bitstring Status List credentials (SPEC.md, CONTRACT 4).

- ``POST /credential/{mandateId}/revoke`` (alias ``DELETE /credential/revoke/{mandateId}``, body
  optional): 200 ``{credentialId, status: "REVOKED", revokedAt, receipt}``; 409 when the credential
  is not ACTIVE; 404 when it is not the caller's.
- ``GET /credential/{credentialId}?includePdf=``: ``{credential, w3cCredential, pdf?}``.
- ``GET /credentials/status/{listId}``: unsigned (verifiers fetch it), cacheable for a moment.

A credential is named by its entity id (24 lower-case hex characters) or its mandate URN, either
percent-encoded or not.
"""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.responses import JSONResponse

from api import pdf
from api.conditional import json_document
from api.deps import CallerDep, ContextDep
from api.errors import ApiError
from api.responses import answer, errors, json_document_responses, path_param
from api.versions import VersionedRoute
from core.kinds import CredentialStatus
from core.otp import mask_contact
from core.settings import Settings
from core.text import shown
from services import approvals, mandates
from services.audit import document_of
from services.mandates import CredentialRecord
from trust.did import web_organization_did, web_service_did, web_subject_did
from wire import patterns
from wire.limit_views import executions_remaining, limit_uses
from wire.mandates import (
    CredentialDetailOut,
    CredentialEntityOut,
    CredentialEventOut,
    CredentialEventsOut,
    RevokeAliasIn,
    RevokeIn,
    RevokeOut,
)
from wire.models import CredentialIn, LimitUse, QueryBool
from wire.signed import StatusListCredential

router = APIRouter(tags=["credentials"], route_class=VersionedRoute)
STATUS_LIST_MEDIA_TYPE = "application/vc"  # VC Data Model 2.0, registered with IANA
NO_CREDENTIAL = "No credential of the caller's organization has this id"
REVOKE_ANSWERS = {
    **errors(400, 401, 404, 413, s404=NO_CREDENTIAL),
    **answer(409, "The credential is not ACTIVE: only an ACTIVE mandate can be revoked"),
}
CredentialId = Annotated[
    str,
    path_param(
        patterns.CREDENTIAL_REFERENCE,
        "The credential id (24 lower-case hex characters) or the mandate URN, percent-encoded or not",
    ),
]


async def _revoke(ctx: ContextDep, caller: CallerDep, raw_id: str, reason: str | None) -> Any:
    done = await mandates.revoke(ctx, caller.actor, caller.organization_id, raw_id, reason)
    body = RevokeOut(credentialId=done.credential_id, revokedAt=done.revoked_at, receipt=done.receipt)
    return JSONResponse(body.model_dump(mode="json"))


@router.post("/credential/{mandateId}/revoke", response_model=RevokeOut, responses=REVOKE_ANSWERS)
async def revoke_mandate(mandateId: CredentialId, body: RevokeIn, caller: CallerDep, ctx: ContextDep) -> Any:
    """Revoke an ACTIVE mandate of the caller's organization (final). The answer carries the
    signed `MANDATE_REVOKED` receipt; the mandate's status list bit is set at once."""
    return await _revoke(ctx, caller, mandateId, body.reason)


@router.delete("/credential/revoke/{mandateId}", response_model=RevokeOut, responses=REVOKE_ANSWERS)
async def revoke_mandate_alias(
    mandateId: CredentialId,
    caller: CallerDep,
    ctx: ContextDep,
    body: Annotated[RevokeAliasIn | None, Body()] = None,
) -> Any:
    """Alias of `POST /credential/{mandateId}/revoke`; the body `{reason}` is optional."""
    return await _revoke(ctx, caller, mandateId, body.reason if body else None)


# --- reading a credential -----------------------------------------------------------------------


def entity_of(record: CredentialRecord) -> CredentialEntityOut:
    cred, now = record.credential, datetime.now(UTC)
    document = cred.document_credential
    signed_data = (document or {}).get("credentialSubject", {}).get("data")
    if document is not None:
        data = list(signed_data or [])
    else:
        data = [dict(i) for i in cred.data or []] if cred.resource_type == "DOCUMENT" else []
    proofs = (document or {}).get("proof") or []
    return CredentialEntityOut(
        id=cred.id,
        resourceType=cred.resource_type,
        status=cred.status,
        proofs=proofs if isinstance(proofs, list) else [proofs],
        data=data,
        name=cred.name,
        internalId=cred.internal_id,
        mandateId=cred.mandate_id,
        requestId=cred.request_id,
        description=cred.description,
        scope=cred.scope,
        action=cred.action,
        tags=list(cred.tags),
        validFrom=cred.valid_from,
        validUntil=cred.valid_until,
        issuedAt=cred.issued_at,
        revokedAt=cred.revoked_at,
        revocationReason=cred.revocation_reason,
        revocationReceipt=cred.revocation_receipt,
        maxExecutions=cred.max_executions,
        executionsRemaining=executions_remaining(cred, now),
        limits=[LimitUse(**use) for use in limit_uses(cred, now)],
    )


def _verify_hint(settings: Settings, status_url: str | None) -> str:
    return (
        "This PDF is a rendering for reading. What verifies is the signed W3C credential "
        f"(w3cCredential): the issuer's keys are at {settings.public_url.rstrip('/')}"
        "/.well-known/did.json" + (f"; its revocation status at {status_url}." if status_url else ".")
    )


def marks_of(record: CredentialRecord) -> list[pdf.Mark]:
    """The credential's placements as drawn: a signer's acceptance fills their boxes. The identity
    checks report no identity values here, so a name or identity field is shown only when one is
    known (never yet: the masked contact stands for the name, and an identity field shows a dash)."""
    accepted = {s.contact: d for d, s in record.decisions if d.accepted}
    return [
        pdf.Mark(
            kind=str(p["type"]),
            page_index=int(p["pageIndex"]),
            x=float(p["x"]),
            y=float(p["y"]),
            width=float(p["width"]),
            height=float(p["height"]),
            contact=mask_contact(str(p["contact"])),
            identity_type=p.get("identityType"),
            decision_id=accepted[p["contact"]].id if p["contact"] in accepted else None,
            accepted_at=accepted[p["contact"]].decided_at if p["contact"] in accepted else None,
        )
        for p in record.credential.placements or []
    ]


def draft_sheet(settings: Settings, org_id: str, org_name: str, cred: CredentialIn) -> pdf.CredentialSheet:
    """The sheet of a DOCUMENT credential about to be created, as its PDF first shows it: what its
    placements' page indexes are checked against (the text only grows with decisions)."""
    return pdf.CredentialSheet(
        organization_name=org_name,
        name=cred.name,
        description=cred.description,
        resource_type=cred.type,
        status=CredentialStatus.DRAFT,
        items=[item.model_dump() for item in cred.data or []],
        decisions=[],
        credential_id="0" * 24,  # as wide as the id it will have
        mandate_id=None,
        issuer=web_service_did(settings.public_url),
        subject=web_organization_did(settings.public_url, org_id),
        issued_at=None,
        valid_from=cred.validFrom,
        valid_until=cred.validUntil,
        revoked_at=None,
        revocation_reason=None,
        verify_hint=_verify_hint(settings, None),
    )


def sheet_of(
    settings: Settings, record: CredentialRecord, entity: CredentialEntityOut, document_sri: str | None = None
) -> pdf.CredentialSheet:
    """What the credential's PDF shows; ``document_sri``: the digest of the DOCUMENT approval's PDF
    it was made from, whose pages its marks are stamped on (``pdf.stamped``)."""
    cred, document = record.credential, record.credential.document_credential or {}
    status_url = (document.get("credentialStatus") or {}).get("statusListCredential")
    # each signer's quality as the credential signs it (issue 36), beside their decision
    signed = (document.get("credentialSubject") or {}).get("signerQualities") or []
    qualities = {str(q.get("id")): str(q.get("signerQuality")) for q in signed if isinstance(q, dict)}
    hint = _verify_hint(settings, status_url)
    return pdf.CredentialSheet(
        organization_name=record.organization_name,
        name=cred.name,
        description=cred.description,
        resource_type=cred.resource_type,
        status=cred.status,
        items=entity.data,
        decisions=[
            pdf.Acceptance(
                s.contact,
                d.accepted,
                d.decided_at,
                qualities.get(web_subject_did(settings.public_url, s.id)),
            )
            for d, s in record.decisions
        ],
        credential_id=cred.id,
        mandate_id=cred.mandate_id,
        issuer=str(document.get("issuer") or web_service_did(settings.public_url)),
        subject=web_organization_did(settings.public_url, record.request.organization_id),
        issued_at=cred.issued_at,
        valid_from=cred.valid_from or cred.issued_at,
        valid_until=cred.valid_until,
        revoked_at=cred.revoked_at,
        revocation_reason=cred.revocation_reason,
        verify_hint=hint,
        marks=marks_of(record),
        document_sri=document_sri,
    )


@router.get(
    "/credential/evidence/{evidenceId}",
    response_class=Response,
    responses={
        200: {
            "description": "The JCS text of the acceptance, byte for byte",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        },
        **errors(400, 401, 404, s404="No acceptance in a mandate of the caller's organization has this id"),
    },
)
async def credential_evidence(
    evidenceId: Annotated[
        str, path_param(patterns.DECISION_URN, "The evidence id: a decision URN urn:via:decision:<uuid>")
    ],
    caller: CallerDep,
    ctx: ContextDep,
) -> Response:
    """An evidence item of a mandate, by its id (a decision URN): the exact text its `digestSRI`
    covers, the JCS form of the subject's acceptance. Served as text, byte for byte: a client
    that parsed and re-serialized the JSON would no longer match the digest."""
    text = await mandates.evidence(ctx, caller.organization_id, evidenceId)
    return Response(text, media_type="text/plain; charset=utf-8")


@router.get(
    "/credential/{credentialId}/events",
    response_model=CredentialEventsOut,
    responses=errors(400, 401, 404, s404=NO_CREDENTIAL),
)
async def credential_events(credentialId: CredentialId, caller: CallerDep, ctx: ContextDep) -> Any:
    """The credential's audit records (issuance, revocation, VPs, verifications) in chain order,
    each checked as `mandatum audit verify` checks it: its content against its hash, its signature,
    and its link to the record before it in the organization's chain."""
    record, found = await mandates.credential_events(ctx, caller.organization_id, credentialId)
    events = [
        CredentialEventOut(
            id=row.id,
            type=row.type,
            seq=row.seq,
            createdAt=document_of(row)["createdAt"],
            actor=row.actor,
            issuer=str((row.proof or {}).get("verificationMethod", "")).split("#", 1)[0],
            hash=row.hash,
            contentValid=check.content_valid,
            signatureValid=check.signature_valid,
            chainLinkValid=check.link_valid,
        )
        for row, check in found
    ]
    failed = [(row, check) for row, check in found if not check.ok]
    reason = None
    if failed:
        row, check = failed[0]
        broken = [
            name
            for name, good in (
                ("content", check.content_valid),
                ("signature", check.signature_valid),
                ("link", check.link_valid),
            )
            if not good
        ]
        reason = f"record {row.id} (seq {row.seq}) fails its {' and '.join(broken)} check"
    body = CredentialEventsOut(
        credentialId=record.credential.mandate_id or record.credential.id,
        ok=not failed,
        reason=reason,
        eventCount=len(events),
        events=events,
    )
    return JSONResponse(body.model_dump(mode="json", exclude_none=True))


@router.get(
    "/credential/{credentialId}",
    response_model=CredentialDetailOut,
    responses={
        **errors(400, 401, 404, s404=NO_CREDENTIAL),
        **answer(503, "With includePdf: every PDF renderer is busy"),
    },
)
async def get_credential(
    credentialId: CredentialId,
    caller: CallerDep,
    ctx: ContextDep,
    includePdf: Annotated[
        QueryBool, Query(description="`true` or `false`: include a base64 PDF (DOCUMENT credentials)")
    ] = False,
) -> Any:
    """A credential of the caller's organization, by its id (24 hex characters) or mandate URN,
    with the document form in its most updated version and, on request, a PDF rendering (503 with
    `Retry-After` while the service's PDF renderers are all busy)."""
    record = await mandates.credential_detail(ctx, caller.organization_id, credentialId)
    entity = entity_of(record)
    body: dict[str, Any] = {
        "credential": entity.model_dump(mode="json"),
        "w3cCredential": record.credential.document_credential,
    }
    if includePdf and record.credential.resource_type == "DOCUMENT":
        # its own PDF (inline or a DOCUMENT approval's): the marks stamped on it, then the sheet
        source = await approvals.credential_document(ctx, record.request.id, record.credential.id)
        try:
            rendered = await pdf.RENDERER.pdf(
                sheet_of(ctx.settings, record, entity, source.digest_sri if source else None),
                partial(mandates.kept_pdf, ctx),
                partial(mandates.keep_pdf, ctx),
                source.read if source else None,
            )
        except pdf.Busy as exc:
            raise ApiError(
                503, "PDF rendering is busy; retry shortly", headers={"Retry-After": str(exc.retry_after)}
            ) from exc
        body["pdf"] = base64.b64encode(rendered).decode("ascii")
    return JSONResponse(body)


# --- the public status lists --------------------------------------------------------------------


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


@router.get(
    "/credentials/status/{listId}",
    summary="A Bitstring Status List credential (public)",
    response_class=Response,
    responses={
        **json_document_responses(STATUS_LIST_MEDIA_TYPE, StatusListCredential, public_cache=True),
        **errors(404, s404="No status list has this id"),
    },
)
async def status_list_credential(
    listId: Annotated[str, path_param(patterns.CANONICAL_UUID, "The status list's UUID")],
    request: Request,
    ctx: ContextDep,
) -> Response:
    """The W3C Bitstring Status List credential (purpose revocation) that mandates' `credentialStatus`
    points to, signed by the service (eddsa-jcs-2022). Unsigned request; cacheable for 30 seconds."""
    served = None
    if _is_uuid(listId):
        served = await mandates.status_list(ctx, listId)
    if served is None:
        raise ApiError(404, f"Status list {shown(listId)} not found")
    return json_document(
        request,
        served.document,
        STATUS_LIST_MEDIA_TYPE,
        f"public, max-age={mandates.STATUS_LIST_TTL_SECONDS}",
        etag=served.etag,
    )
