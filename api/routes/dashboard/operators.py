"""The operators' area (issue 15, item 1): operators find a request in any organization by
whatever a complaint quotes (its id, ``internalId``, a mandate URN, a webhook event id, the
subject's e-mail or phone) and see its timeline on one page, with the support actions, each with a
required reason recorded with the operator as actor. Everything goes through
``services.operators``, which refuses any actor but an operator; the pages refuse any role but ``platform``
(an organization's member gets 403, as operators get 403 on an organization's pages).
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.errors import service_error_status
from api.routes.dashboard.common import (
    OPERATORS,
    SUBJECT_ID_RE,
    form_by,
    not_found,
    refusal_page,
    show,
    signed_in,
    when,
)
from core.ids import is_object_id
from services import members, operators, request_resend
from services.context import Context, run_blocking
from services.errors import NotFound, ServiceError
from store.tables import Member

router = APIRouter()
ACTIONS = ("cancel", "resend", "link", "webhook", "revoke")
NOTICES = {
    "cancel": "The request is canceled. Your reason is in its audit record.",
    "resend": "A fresh code is on its way to the subject. Your reason is in its audit record.",
    "webhook": "The event's delivery started again. Your reason is in its audit record.",
    "sent-again": "This is the request sent again. Your reason is in the first one's audit record.",
    "revoke": "The mandate is revoked. Your reason is in its audit record.",
}
UNREACHABLE = "Temporal is not answering: nothing was done. Try again in a few seconds."


@router.get("/dashboard/operators", response_class=HTMLResponse)
async def search(request: Request, ctx: ContextDep, q: str | None = None) -> Response:
    found = await signed_in(request, ctx, OPERATORS)
    if isinstance(found, Response):
        return found
    member, token = found
    query = (q or "").strip()
    if not query:
        return await show(ctx, member, token, "dashboard/operators.html", "operators", title=TITLE, q="")
    try:
        matches = await operators.find(ctx, members.actor_of(member), query)
    except ServiceError as exc:
        return await show(
            ctx,
            member,
            token,
            "dashboard/operators.html",
            "operators",
            status=service_error_status(exc),
            title=TITLE,
            q=query[:320],
            error=str(exc),
        )
    rows = [
        {
            "id": m.bundle.request.id,
            "organization": m.organization,
            "name": m.bundle.request.name or "",
            "status": m.bundle.request.status,
            "created": when(m.bundle.request.created_at),
            "matched_by": m.matched_by,
        }
        for m in matches
    ]
    return await show(
        ctx, member, token, "dashboard/operators.html", "operators", title=TITLE, q=query, rows=rows
    )


TITLE = "Operators · Mandatum"


async def _timeline_page(
    ctx: Context, member: Member, token: str, request_id: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    try:
        found = await operators.timeline(ctx, members.actor_of(member), request_id)
    except NotFound:
        return not_found("No such request.")
    req = found.bundle.request
    names = await _actor_names(ctx, req.organization_id, [e.actor or "" for e in found.entries])
    return await show(
        ctx,
        member,
        token,
        "dashboard/operators_request.html",
        "operators",
        status=status,
        title=f"Request {request_id} · Operators · Mandatum",
        req=req,
        organization=found.organization,
        workflow_url=found.workflow_url,
        history_error=found.history_error,
        entries=[
            {
                "at": e.at.strftime("%Y-%m-%d %H:%M:%S"),
                "kind": e.kind,
                "what": e.what,
                "actor": names.get(e.actor or "", e.actor or ""),
                "recorded_actor": e.actor or "",
                "detail": e.detail or "",
                "failed": e.failed,
            }
            for e in found.entries
        ],
        codes=[
            {
                **c,
                "locked": when(c["locked"]) if c["locked"] else "",
                "confirmed": when(c["confirmed"]) if c["confirmed"] else "",
            }
            for c in found.subjects
        ],
        subjects=[
            {"id": s.id, "label": f"subject {link.position + 1} ({s.contact})"}
            for link, s in found.bundle.subjects
        ],
        mandates=[c.mandate_id for c in found.bundle.credentials if c.mandate_id and c.revoked_at is None],
        # issue 32: FAILED credentials support may issue again (api/routes/dashboard/request_retries.py)
        failed=[{"id": c.id, "name": c.name} for c in found.bundle.credentials if c.status == "FAILED"],
        events=[
            {"id": i, "type": t, "state": st} for i, t, st in found.events if st in ("delivered", "failed")
        ],
        open=req.status == "PENDING",
        resent_from=req.resent_from or "",
        resent_as=found.bundle.resent_as or "",
        resendable=request_resend.resendable(found.bundle),
        **extra,
    )


async def _actor_names(ctx: Context, org_id: str, actors: list[str]) -> dict[str, str]:
    """Who each timeline entry names, as the organization's pages name them (issue 34): a member
    by e-mail, a key by its name, staff as such, a subject by a masked contact."""

    def read() -> dict[str, str]:
        return {**members.actor_names(ctx, org_id), **members.subject_names(ctx, org_id, actors)}

    return await run_blocking(ctx, read)


timeline_page = _timeline_page  # the page again with why an action did not happen (request_resend)


@router.get("/dashboard/operators/requests/{request_id}", response_class=HTMLResponse)
async def request_timeline(
    request: Request, ctx: ContextDep, request_id: str, notice: str | None = None
) -> Response:
    found = await signed_in(request, ctx, OPERATORS)
    if isinstance(found, Response):
        return found
    if not is_object_id(request_id):
        return not_found("No such request.")
    member, token = found
    return await _timeline_page(ctx, member, token, request_id, notice=NOTICES.get(notice or ""))


@router.post("/dashboard/operators/requests/{request_id}/{action}", response_class=HTMLResponse)
async def act(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    action: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    reason: Annotated[str, Form(max_length=1000)] = "",
    subject: Annotated[str, Form(max_length=40)] = "",
    event: Annotated[str, Form(max_length=100)] = "",
    mandate: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """One support action on the request, with the reason the operator typed."""
    found = await form_by(request, ctx, csrf, OPERATORS)
    if isinstance(found, Response):
        return found
    if action not in ACTIONS or not is_object_id(request_id):
        return not_found()
    if action in ("resend", "link") and not SUBJECT_ID_RE.fullmatch(subject):
        return not_found("No such subject.")
    member, token = found
    actor = members.actor_of(member)
    try:
        if action == "cancel":
            await operators.cancel(ctx, actor, request_id, reason)
        elif action == "resend":
            await operators.resend_code(ctx, actor, request_id, subject, reason)
        elif action == "link":
            url = await operators.hand_out_link(ctx, actor, request_id, subject, reason)
            return await _timeline_page(ctx, member, token, request_id, link=url)
        elif action == "webhook":
            await operators.redeliver(ctx, actor, event, reason)
        else:
            await operators.revoke(ctx, actor, mandate, reason)
    except Exception as exc:
        return await refusal_page(exc, partial(_timeline_page, ctx, member, token, request_id), UNREACHABLE)
    return RedirectResponse(f"/dashboard/operators/requests/{request_id}?notice={action}", status_code=303)
