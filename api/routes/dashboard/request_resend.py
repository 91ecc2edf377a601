"""Send a closed request again from the dashboard (issue 32): an owner or support member on the
organization's request page, an operator on the operators' request page; each with a reason, and
"use the newest published version" when wanted. The answer is a redirect to the new request."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard import operators as operators_pages
from api.routes.dashboard import requests as request_pages
from api.routes.dashboard.common import OPERATORS, form_by, not_found, org_of, refusal_page
from core.ids import is_object_id
from core.kinds import MemberRole
from services import members, request_resend

router = APIRouter()
RESEND_ROLES = (MemberRole.OWNER, MemberRole.SUPPORT)  # a developer builds; support runs requests
UNREACHABLE = "The workflow service does not answer right now: the request was not sent again."


@router.post("/dashboard/requests/{request_id}/send-again")
async def send_again(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    reason: Annotated[str, Form(max_length=1000)] = "",
    newest: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, RESEND_ROLES)
    if isinstance(found, Response):
        return found
    if not is_object_id(request_id):
        return not_found("No such request.")
    member, token = found
    try:
        made = await request_resend.send_again(
            ctx, members.actor_of(member), org_of(member), request_id, reason, newest=newest == "yes"
        )
    except Exception as exc:
        page = partial(request_pages.request_page_html, ctx, member, token, request_id)
        return await refusal_page(exc, page, UNREACHABLE)
    return RedirectResponse(f"/dashboard/requests/{made.request.id}?notice=sent-again", status_code=303)


@router.post("/dashboard/operators/requests/{request_id}/send-again")
async def send_again_as_operator(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    reason: Annotated[str, Form(max_length=1000)] = "",
    newest: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, OPERATORS)
    if isinstance(found, Response):
        return found
    if not is_object_id(request_id):
        return not_found("No such request.")
    member, token = found
    try:
        made = await request_resend.send_again_as_operator(
            ctx, members.actor_of(member), request_id, reason, newest=newest == "yes"
        )
    except Exception as exc:
        page = partial(operators_pages.timeline_page, ctx, member, token, request_id)
        return await refusal_page(exc, page, UNREACHABLE)
    return RedirectResponse(
        f"/dashboard/operators/requests/{made.request.id}?notice=sent-again", status_code=303
    )
