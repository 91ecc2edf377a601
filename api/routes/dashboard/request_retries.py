"""Support's retries on a request's page (issue 32): owners and support members (never developers),
and operators on the operators' area's page, issue again a credential whose issuance failed for
good, with a required reason. The route only
parses, calls ``services.retries`` with the member as actor, and renders the request's page with
the answer or why it did not happen."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import OPERATORS, SUBJECT_ID_RE, form_by, not_found, org_of, refusal_page
from api.routes.dashboard.operators import UNREACHABLE, _timeline_page
from api.routes.dashboard.requests import _refused_on_page, _request_page
from core.ids import is_object_id
from core.kinds import MemberRole
from services import members, retries

router = APIRouter()
RETRIERS: tuple[str, ...] = (MemberRole.OWNER, MemberRole.SUPPORT)
ISSUED = "The credential is issued: its mandate is {mandate}; the integrator gets a credential event."
RUNNING = "The credential's issuance is under way: reload this page in a moment."


@router.post(
    "/dashboard/requests/{request_id}/credentials/{credential_id}/retry-issuance", response_class=HTMLResponse
)
async def retry_issuance(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    credential_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    reason: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """Issue a FAILED credential of this request again (``services.retries.retry_issuance``)."""
    found = await form_by(request, ctx, csrf, RETRIERS)
    if isinstance(found, Response):
        return found
    if not is_object_id(request_id) or not is_object_id(credential_id):
        return not_found("No such request.")
    member, token = found
    try:
        done = await retries.retry_issuance(
            ctx, members.actor_of(member), org_of(member), credential_id, reason, request_id=request_id
        )
    except Exception as exc:
        return await _refused_on_page(ctx, member, token, request_id, exc)
    notice = ISSUED.format(mandate=done.mandate_id) if done.state == "issued" else RUNNING
    return await _request_page(ctx, member, token, request_id, notice=notice)


CODE_SENT = "A fresh code is on its way to the subject. Your reason is in its audit record."
CODE_FAILED = "The code was not delivered this time either: {error}"
IDENTITY_RESTARTED = "The errored identity check is closed: the subject's page offers a fresh one."


@router.post("/dashboard/requests/{request_id}/retries/{kind}", response_class=HTMLResponse)
async def retry_for_subject(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    kind: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    subject: Annotated[str, Form(max_length=40)] = "",
    reason: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """``code``: a subject's undelivered code sent again; ``identity``: their errored check closed."""
    found = await form_by(request, ctx, csrf, RETRIERS)
    if isinstance(found, Response):
        return found
    if (
        kind not in ("code", "identity")
        or not is_object_id(request_id)
        or not SUBJECT_ID_RE.fullmatch(subject)
    ):
        return not_found()
    member, token = found
    actor, org_id = members.actor_of(member), org_of(member)
    try:
        if kind == "code":
            sent = await retries.retry_code(ctx, actor, org_id, request_id, subject, reason)
            notice = CODE_SENT if sent.delivered else CODE_FAILED.format(error=sent.error_message or "")
        else:
            await retries.restart_identity(ctx, actor, org_id, request_id, subject, reason)
            notice = IDENTITY_RESTARTED
    except Exception as exc:
        return await _refused_on_page(ctx, member, token, request_id, exc)
    return await _request_page(ctx, member, token, request_id, notice=notice)


# --- the operators' area ------------------------------------------------------------------------


@router.post("/dashboard/operators/requests/{request_id}/retry-issuance", response_class=HTMLResponse)
async def operator_retry_issuance(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    credential: Annotated[str, Form(max_length=100)] = "",
    reason: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """An operator issues a FAILED credential of any organization's request again."""
    found = await form_by(request, ctx, csrf, OPERATORS)
    if isinstance(found, Response):
        return found
    if not is_object_id(request_id) or not is_object_id(credential):
        return not_found("No such credential.")
    member, token = found
    render = partial(_timeline_page, ctx, member, token, request_id)
    try:
        done = await retries.operator_retry_issuance(
            ctx, members.actor_of(member), credential, reason, request_id=request_id
        )
    except Exception as exc:
        return await refusal_page(exc, render, UNREACHABLE)
    return await render(
        notice=(ISSUED.format(mandate=done.mandate_id) if done.state == "issued" else RUNNING)
    )


@router.post("/dashboard/operators/requests/{request_id}/retry-{kind}", response_class=HTMLResponse)
async def operator_retry_for_subject(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    kind: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    subject: Annotated[str, Form(max_length=40)] = "",
    reason: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """An operator sends a subject's undelivered code again (``code``) or closes their errored
    identity check (``identity``)."""
    found = await form_by(request, ctx, csrf, OPERATORS)
    if isinstance(found, Response):
        return found
    if (
        kind not in ("code", "identity")
        or not is_object_id(request_id)
        or not SUBJECT_ID_RE.fullmatch(subject)
    ):
        return not_found()
    member, token = found
    actor = members.actor_of(member)
    render = partial(_timeline_page, ctx, member, token, request_id)
    try:
        if kind == "code":
            sent = await retries.operator_retry_code(ctx, actor, request_id, subject, reason)
            notice = CODE_SENT if sent.delivered else CODE_FAILED.format(error=sent.error_message or "")
        else:
            await retries.operator_restart_identity(ctx, actor, request_id, subject, reason)
            notice = IDENTITY_RESTARTED
    except Exception as exc:
        return await refusal_page(exc, render, UNREACHABLE)
    return await render(notice=notice)
