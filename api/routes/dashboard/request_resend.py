"""Send a closed request again from the dashboard (issue 32): an owner or support member on the
organization's request page, an operator on the operators' request page; each with a reason, and
"use the newest published version" when wanted. The answer is a redirect to the new request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard import operators as operators_pages
from api.routes.dashboard import requests as request_pages
from api.routes.dashboard.common import OPERATORS, form_by, not_found, org_of, refusal_page
from core.ids import is_object_id
from core.kinds import MemberRole
from services import members, request_resend
from services.context import Context
from store.tables import Member

router = APIRouter()
RESEND_ROLES = (MemberRole.OWNER, MemberRole.SUPPORT)  # a developer builds; support runs requests
UNREACHABLE = "The workflow service does not answer right now: the request was not sent again."


Csrf = Annotated[str, Form(max_length=100)]
Reason = Annotated[str, Form(max_length=1000)]
Flag = Annotated[str, Form(max_length=10)]  # "yes" when ticked


async def _sent_again(
    request: Request,
    ctx: Context,
    request_id: str,
    csrf: str,
    roles: tuple[str, ...],
    send: Callable[[Member], Awaitable[Any]],
    page: Callable[..., Awaitable[HTMLResponse]],
    pages: str,
) -> Response:
    """The form of either page: the member's check, then ``send``; a redirect to the new request's
    page under ``pages``, or the page again (``page(ctx, member, token, request_id, ...)``) saying
    why not."""
    found = await form_by(request, ctx, csrf, roles)
    if isinstance(found, Response):
        return found
    if not is_object_id(request_id):
        return not_found("No such request.")
    member, token = found
    try:
        made = await send(member)
    except Exception as exc:
        return await refusal_page(exc, partial(page, ctx, member, token, request_id), UNREACHABLE)
    return RedirectResponse(f"{pages}/{made.request.id}?notice=sent-again", status_code=303)


@router.post("/dashboard/requests/{request_id}/send-again")
async def send_again(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    csrf: Csrf = "",
    reason: Reason = "",
    newest: Flag = "",
) -> Response:
    def send(member: Member) -> Awaitable[Any]:
        actor = members.actor_of(member)
        return request_resend.send_again(
            ctx, actor, org_of(member), request_id, reason, newest=newest == "yes"
        )

    page = request_pages.request_page_html
    return await _sent_again(request, ctx, request_id, csrf, RESEND_ROLES, send, page, "/dashboard/requests")


@router.post("/dashboard/operators/requests/{request_id}/send-again")
async def send_again_as_operator(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    csrf: Csrf = "",
    reason: Reason = "",
    newest: Flag = "",
) -> Response:
    def send(member: Member) -> Awaitable[Any]:
        actor = members.actor_of(member)
        return request_resend.send_again_as_operator(ctx, actor, request_id, reason, newest=newest == "yes")

    page = operators_pages.timeline_page
    return await _sent_again(
        request, ctx, request_id, csrf, OPERATORS, send, page, "/dashboard/operators/requests"
    )
