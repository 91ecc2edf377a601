"""Issued credentials (every member: owners, developers and support): the organization's
credentials, newest first, paged and filtered by status and request; one credential with its
subjects, the signed W3C credential, the PDF of a document, its verifications with their receipts,
a mandate's use limits with their use and its history (``mandate_limits``); revoking a mandate with
a reason, recorded as the member's.

A credential is named in the path by its id (24 lower-case hex characters) or its mandate URN, as
in the REST API; another organization's answers 404 exactly like one that does not exist.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api import pdf
from api.deps import ContextDep
from api.routes.dashboard.common import (
    EVERYONE,
    form_by,
    not_found,
    org_of,
    show,
    signed_in,
    when,
)
from api.routes.dashboard.common import page as plain_page
from api.routes.dashboard.mandate_limits import use_section
from api.routes.mandates import entity_of, sheet_of
from core.kinds import CredentialStatus
from services import limit_views, mandates, members
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from services.mandates import CredentialFilter, CredentialRecord, ListedCredential
from store.tables import Credential, Member, Verification
from trust.did import web_subject_did

router = APIRouter()

MANDATE_ROLES = EVERYONE
KINDS = {"POLICY": "mandate", "DOCUMENT": "document"}
NO_CREDENTIAL = "No such credential in your organization."
NOTICES = {"revoked": "The {kind} is revoked: its status list says so, and every verification is denied."}
CONFIRM = "Tick the box to confirm: a revocation is final, it can never be undone."


async def _render(
    ctx: Context, member: Member, token: str, template: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    """``common.show`` for this section."""
    return await show(ctx, member, token, template, "mandates", status=status, **extra)


def _kind(cred: Credential) -> str:
    return KINDS.get(cred.resource_type, cred.resource_type.lower())


def _pretty(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


# --- the list -----------------------------------------------------------------------------------


def _row(listed: ListedCredential) -> dict[str, Any]:
    cred = listed.credential
    return {
        "id": cred.id,
        "name": cred.name,
        "kind": _kind(cred),
        "status": cred.status,
        "subjects": [s.contact for s in listed.subjects],
        "request": cred.request_id,
        "issued": when(cred.issued_at) if cred.issued_at else "",
        "until": when(cred.valid_until) if cred.valid_until else "",
    }


def _page_link(f: CredentialFilter, number: int) -> str:
    query = {"status": f.status, "requestId": f.request_id, "page": str(number) if number > 1 else None}
    encoded = urlencode({name: value for name, value in query.items() if value})
    return "/dashboard/mandates" + (f"?{encoded}" if encoded else "")


async def _list_page(
    ctx: Context, member: Member, token: str, chosen: dict[str, str], *, status: int = 200, **extra: Any
) -> HTMLResponse:
    """The list with its filter form showing ``chosen`` (the values as given, cut for display)."""
    return await _render(
        ctx,
        member,
        token,
        "dashboard/mandates.html",
        status=status,
        title="Mandates · Mandatum",
        statuses=list(CredentialStatus),
        chosen=chosen,
        **extra,
    )


@router.get("/dashboard/mandates", response_class=HTMLResponse)
async def mandates_page(
    request: Request,
    ctx: ContextDep,
    status: str | None = None,
    requestId: str | None = None,
    page: str | None = None,
) -> Response:
    found = await signed_in(request, ctx, MANDATE_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    chosen = {"status": (status or "")[:100], "request_id": (requestId or "")[:100]}
    try:
        f = mandates.credential_filter(status, requestId, page)
    except Invalid as exc:
        problems = exc.message if isinstance(exc.message, list) else [exc.message]
        return await _list_page(ctx, member, token, chosen, status=400, problems=problems, rows=[])
    listed, total = await mandates.find(ctx, org_of(member), f)
    pages = max(1, -(-total // f.page_size))
    number = f.page_index + 1
    return await _list_page(
        ctx,
        member,
        token,
        chosen,
        rows=[_row(c) for c in listed],
        total=total,
        number=number,
        pages=pages,
        filtered=bool(f.status or f.request_id),
        previous=_page_link(f, number - 1) if number > 1 else None,
        next=_page_link(f, number + 1) if number < pages else None,
        last=_page_link(f, pages),
    )


# --- one credential -----------------------------------------------------------------------------


def _subjects(view: mandates.CredentialView, public_url: str) -> list[dict[str, str]]:
    decided = {subject.id: decision for decision, subject in view.record.decisions}
    out = []
    for subject in view.subjects:
        decision = decided.get(subject.id)
        if decision is None:
            outcome = "no decision yet"
        else:
            outcome = f"{'accepted' if decision.accepted else 'rejected'} {when(decision.decided_at)}"
        out.append(
            {"contact": subject.contact, "did": web_subject_did(public_url, subject.id), "outcome": outcome}
        )
    return out


def _verification(v: Verification) -> dict[str, Any]:
    return {
        "id": v.id,
        "at": when(v.created_at),
        "decision": v.decision,
        "reason": v.reason or "",
        "verifier": str(v.receipt.get("verifier", "")),
        "evaluations": [
            {
                "rule": str(e.get("rule", "")),
                "result": str(e.get("result", "")),
                "expression": str(e.get("expression", "")),
                "why": str(e.get("reason") or ""),
            }
            for e in v.evaluations
            if isinstance(e, dict)
        ],
        "receipt": _pretty(v.receipt),
    }


def _detail(view: mandates.CredentialView, public_url: str) -> dict[str, Any]:
    cred = view.record.credential
    action = cred.action or {}
    document = cred.document_credential
    return {
        "id": cred.id,
        "mandate_id": cred.mandate_id,
        "name": cred.name,
        "description": cred.description,
        "kind": _kind(cred),
        "status": cred.status,
        "status_words": pdf.STATUS_WORDS.get(cred.status, ""),
        "request": cred.request_id,
        "scope": cred.scope,
        "action": str(action.get("id") or ""),
        "version": str(action.get("version") or ""),
        "user_params": [
            (name, json.dumps(value, ensure_ascii=False))
            for name, value in (action.get("userParams") or {}).items()
        ],
        "issued": when(cred.issued_at) if cred.issued_at else "",
        "valid_from": when(cred.valid_from) if cred.valid_from else "",
        "valid_until": when(cred.valid_until) if cred.valid_until else "",
        "revoked": when(cred.revoked_at) if cred.revoked_at else "",
        "reason": cred.revocation_reason or "",
        "w3c": _pretty(cred.w3c_credential) if cred.w3c_credential is not None else "",
        # a mandate's document form differs: it carries the proof history (ISSUE, then REVOKE)
        "document": _pretty(document) if document is not None and document != cred.w3c_credential else "",
        "revocation_receipt": _pretty(cred.revocation_receipt) if cred.revocation_receipt else "",
        "has_pdf": cred.resource_type == "DOCUMENT",
        "revocable": cred.status == CredentialStatus.ACTIVE,
        "subjects": _subjects(view, public_url),
        "verifications": [_verification(v) for v in view.verifications],
        "verification_count": view.verification_count,
    }


async def _view(ctx: Context, member: Member, raw_id: str) -> mandates.CredentialView | None:
    """The member's organization's credential, or None for a malformed or unknown reference."""
    try:
        return await mandates.credential_view(ctx, org_of(member), raw_id)
    except (Invalid, NotFound):
        return None


async def _detail_page(
    ctx: Context, member: Member, token: str, view: mandates.CredentialView, **extra: Any
) -> HTMLResponse:
    detail = _detail(view, ctx.settings.public_url)
    title = f"{detail['name']} · Mandates · Mandatum"
    use = use_section(await limit_views.mandate_use(ctx, org_of(member), view.record.credential))
    return await _render(
        ctx, member, token, "dashboard/mandate.html", title=title, cred=detail, use=use, **extra
    )


@router.get("/dashboard/mandates/{credential_id}", response_class=HTMLResponse)
async def mandate_page(
    request: Request, ctx: ContextDep, credential_id: str, notice: str | None = None
) -> Response:
    found = await signed_in(request, ctx, MANDATE_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    view = await _view(ctx, member, credential_id)
    if view is None:
        return not_found(NO_CREDENTIAL)
    told = NOTICES.get(notice or "")
    told = told.format(kind=_kind(view.record.credential)) if told else None
    return await _detail_page(ctx, member, token, view, notice=told)


@router.get("/dashboard/mandates/{credential_id}/pdf", response_class=Response)
async def mandate_pdf(request: Request, ctx: ContextDep, credential_id: str) -> Response:
    """The PDF of a document credential, as ``GET /credential/{id}?includePdf=true`` renders it
    (the same kept renderings), as a download."""
    found = await signed_in(request, ctx, MANDATE_ROLES)
    if isinstance(found, Response):
        return found
    member = found[0]
    try:
        record = await mandates.credential_detail(ctx, org_of(member), credential_id)
    except (Invalid, NotFound):
        return not_found(NO_CREDENTIAL)
    if record.credential.resource_type != "DOCUMENT":
        return not_found("Only a document credential has a PDF: a mandate is read on its page.")
    try:
        rendered = await _rendered(ctx, record)
    except pdf.Busy as exc:
        message = "The PDF is being rendered for others right now: try again in a few seconds."
        return plain_page(
            "dashboard/message.html",
            status=503,
            title="Busy",
            message=message,
            headers={"Retry-After": str(exc.retry_after)},
        )
    disposition = f'attachment; filename="credential-{record.credential.id}.pdf"'
    return Response(
        rendered,
        media_type="application/pdf",
        headers={"Content-Disposition": disposition, "Referrer-Policy": "same-origin"},
    )


async def _rendered(ctx: Context, record: CredentialRecord) -> bytes:
    sheet = sheet_of(ctx.settings, record, entity_of(record))
    return await pdf.RENDERER.pdf(sheet, partial(mandates.kept_pdf, ctx), partial(mandates.keep_pdf, ctx))


# --- revoking -----------------------------------------------------------------------------------


@router.post("/dashboard/mandates/{credential_id}/revoke", response_class=HTMLResponse)
async def revoke_mandate(
    request: Request,
    ctx: ContextDep,
    credential_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    reason: Annotated[str, Form()] = "",  # any length up to the body limit: refused on the page
    confirm: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, MANDATE_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    view = await _view(ctx, member, credential_id)
    if view is None:
        return not_found(NO_CREDENTIAL)
    typed = reason[: mandates.MAX_REASON * 2]  # shown back in the field to be corrected
    if confirm != "yes":
        return await _detail_page(ctx, member, token, view, status=400, error=CONFIRM, typed=typed)
    try:
        checked = mandates.revocation_reason(reason)
        await mandates.revoke(
            ctx, members.actor_of(member), org_of(member), view.record.credential.id, checked
        )
    except Invalid as exc:
        return await _detail_page(ctx, member, token, view, status=400, error=str(exc), typed=typed)
    except NotFound:
        return not_found(NO_CREDENTIAL)
    except Conflict as exc:  # revoked (or no longer active) since the page was shown
        fresh = await _view(ctx, member, credential_id) or view
        return await _detail_page(ctx, member, token, fresh, status=409, error=str(exc))
    location = f"/dashboard/mandates/{view.record.credential.id}?notice=revoked"
    return RedirectResponse(location, status_code=303)
