"""Credential requests in the dashboard (issue 14, items 3 and 7): the list with every filter of
``GET /request``, a request's page (its subjects' progress, credentials, decisions, webhook events,
audit records and its workflow in the Temporal UI), and the support actions every member may take:
cancel, send a subject a fresh code, show a subject's link to hand out. Each goes through
``services.requests`` with the member as actor, so the audit trail names them.

Filters come as the query of a GET form and are read by hand, not by FastAPI's validation, so that
a bad value is answered with the page and a sentence (400), not a JSON error.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import (
    EVERYONE,
    SUBJECT_ID_RE,
    event_row,
    form_by,
    not_found,
    org_of,
    page_number,
    pager,
    refusal_page,
    show,
    signed_in,
    when,
)
from api.routes.dashboard.csv_export import MAX_ROWS, csv_response, csv_text
from core.ids import is_object_id
from core.kinds import RequestStatus, SecurityLevel
from services import members, request_resend, requests, trusted_sessions
from services.context import Context, run_blocking
from services.errors import NotFound, ServiceError
from services.requests import RequestFilter
from store.tables import Member

router = APIRouter()
PAGE_SIZE = 20
# the text filters: query name, its limit (as GET /request's), its RequestQuery field
TEXT_FILTERS = (
    ("search", 100, "search"),
    ("contact", 320, "contact"),
    ("did", 500, "did"),
    ("internalId", 255, "internal_id"),
    ("subjectInternalId", 255, "subject_internal_id"),
    ("credentialInternalId", 255, "credential_internal_id"),
    ("dateFrom", 40, "date_from"),
    ("dateTo", 40, "date_to"),
)
NOTICES = {
    "canceled": "The request is canceled: its subjects can no longer decide.",
    "code-sent": "A fresh code is on its way to the subject.",
    "browsers-forgotten": "The subject's trusted browsers are forgotten: next time, a code is asked.",
    "sent-again": "This is the request sent again: its subjects get a new code and link.",
}
UNREACHABLE = "The workflow service does not answer right now: try again in a minute."


def _query(params: Mapping[str, Any], getlist: Any) -> tuple[requests.RequestQuery, int]:
    """The filters and the page (from 1) of the list's query string; ``ValueError`` with the words
    to show for a value no filter takes."""
    values: dict[str, Any] = {}
    for name, limit, field in TEXT_FILTERS:
        raw = params.get(name)
        if raw is None or not raw.strip():
            continue
        if len(raw) > limit:
            raise ValueError(f"{name} is at most {limit} characters")
        values[field] = raw.strip()
    levels = getlist("securityLevel")
    unknown = [level for level in levels if level not in set(SecurityLevel)]
    if unknown:
        raise ValueError(f"securityLevel is one of {', '.join(SecurityLevel)}")
    page = page_number(params.get("page"))
    query = requests.RequestQuery(
        page_index=page - 1,
        page_size=PAGE_SIZE,
        security_levels=tuple(levels),
        statuses=tuple(getlist("status")[: len(RequestStatus)]),
        **values,
    )
    return query, page


def _list_item(bundle: Any) -> dict[str, Any]:
    req = bundle.request
    return {
        "id": req.id,
        "name": req.name or ", ".join(c.name for c in bundle.credentials),
        "status": req.status,
        "level": req.security_level,
        "created": when(req.created_at),
        "subjects": len(bundle.subjects),
        "contacts": [subject.contact for _, subject in bundle.subjects],
        "internal_id": req.internal_id or "",
    }


@router.get("/dashboard/requests", response_class=HTMLResponse)
async def requests_page(request: Request, ctx: ContextDep) -> Response:
    found = await signed_in(request, ctx, EVERYONE)
    if isinstance(found, Response):
        return found
    member, token = found
    params = request.query_params
    shown = {name: params.get(name, "")[:limit] for name, limit, _ in TEXT_FILTERS}
    chosen = [level for level in params.getlist("securityLevel") if level in set(SecurityLevel)]
    render = partial(
        show,
        ctx,
        member,
        token,
        "dashboard/requests.html",
        "requests",
        title="Requests · Mandatum",
        filters=shown,
        levels=list(SecurityLevel),
        chosen=chosen,
        statuses=list(RequestStatus),
        chosen_statuses=[s for s in params.getlist("status") if s in set(RequestStatus)],
        export=f"/dashboard/requests.csv?{params}" if params else "/dashboard/requests.csv",
    )
    try:
        query, page = _query(params, params.getlist)
        filters = requests.request_filter(ctx, query)
    except (ValueError, ServiceError) as exc:
        return await render(status=400, error=str(exc), items=[])
    bundles, total = await _find(ctx, org_of(member), filters)
    pages = math.ceil(total / PAGE_SIZE)
    return await render(items=[_list_item(b) for b in bundles], total=total, **pager(params, page, pages))


CSV_PAGE = 500  # rows read per query while exporting
CSV_HEADER = ("id", "created", "name", "status", "securityLevel", "contacts", "internalId")


@router.get("/dashboard/requests.csv")
async def requests_csv(request: Request, ctx: ContextDep) -> Response:
    """The requests the page's filters select, as CSV (at most ``MAX_ROWS``, newest first)."""
    found = await signed_in(request, ctx, EVERYONE)
    if isinstance(found, Response):
        return found
    member, _ = found
    params = request.query_params
    try:
        query, _ = _query(params, params.getlist)
        filters = requests.request_filter(ctx, replace(query, page_index=0, page_size=CSV_PAGE))
    except (ValueError, ServiceError) as exc:
        return PlainTextResponse(str(exc), status_code=400)
    rows: list[list[Any]] = []
    while filters is not None and len(rows) < MAX_ROWS:
        bundles, total = await _find(ctx, org_of(member), filters)
        rows += [_csv_row(b) for b in bundles]
        if not bundles or len(rows) >= total:
            break
        filters = replace(filters, page_index=filters.page_index + 1)
    text = await asyncio.to_thread(csv_text, CSV_HEADER, rows[:MAX_ROWS])
    return csv_response("requests.csv", text)


def _csv_row(bundle: Any) -> list[Any]:
    req = bundle.request
    contacts = " ".join(subject.contact for _, subject in bundle.subjects)
    return [
        req.id,
        req.created_at.isoformat(),
        req.name or "",
        req.status,
        req.security_level,
        contacts,
        req.internal_id or "",
    ]


async def _find(ctx: Context, org_id: str, filters: RequestFilter | None) -> tuple[list[Any], int]:
    if filters is None:  # a DID naming no subject of this service matches nothing
        return [], 0
    return await requests.find(ctx, org_id, filters)


# --- one request ---------------------------------------------------------------------------------


def _progress(progress: Any) -> dict[str, Any]:
    code, checks = (progress.code, progress.checks) if progress else (None, [])
    return {
        "code": {
            "channel": code.channel,
            "sends": code.sends,
            "sent": when(code.sent_at),
            "tries": code.failures,
            "locked": when(code.locked_at) if code.locked_at else "",
            "confirmed": when(code.verified_at) if code.verified_at else "",
            "failed": code.delivery_error or "",
        }
        if code
        else None,
        "checks": [
            {
                "provider": c.provider,
                "status": c.status,
                "started": when(c.created_at),
                "message": c.message or "",
            }
            for c in checks
        ],
    }


def _resend_view(bundle: Any) -> dict[str, Any]:
    """Issue 32: sent again from, or as, another request; offered when it can be."""
    return {
        "resent_from": bundle.request.resent_from or "",
        "resent_as": bundle.resent_as or "",
        "resendable": request_resend.resendable(bundle),
    }


def _detail_view(found: requests.Detail) -> dict[str, Any]:
    bundle = found.bundle
    req = bundle.request
    contacts = {s.id: s.contact for _, s in bundle.subjects}
    return {
        "id": req.id,
        "name": req.name or "",
        "status": req.status,
        "open": req.status == RequestStatus.PENDING,
        "level": req.security_level,
        "created": when(req.created_at),
        "expires": when(req.expires_at),
        "internal_id": req.internal_id or "",
        "canceled": when(req.canceled_at) if req.canceled_at else "",
        "canceled_by": req.canceled_by,
        **_resend_view(bundle),
        "subjects": [
            {
                "id": s.id,
                "contact": s.contact,
                "internal_id": link.internal_id or "",
                "signer_quality": link.signer_quality or "",
                # issue 36: the code goes to a secondary contact (kept encrypted: its kind alone)
                "code_to": link.secondary_contact_kind or "",
                "identity": s.identity_status,
                **_progress(found.progress.get(s.id)),
            }
            for link, s in bundle.subjects
        ],
        "credentials": [
            {
                "id": c.id,
                "name": c.name,
                "type": c.resource_type,
                "status": c.status,
                "mandate": c.mandate_id or "",
                "decisions": [
                    {
                        "who": contacts.get(s.id, s.contact),
                        "accepted": d.accepted,
                        "how": " · ".join(filter(None, (d.channel, d.surface))),
                        "at": when(d.decided_at),
                    }
                    for d, s in bundle.decisions.get(c.id, [])
                ],
            }
            for c in bundle.credentials
        ],
        "events": [event_row(e) for e in found.events],
        "records": [
            {
                "type": r.type,
                "at": when(r.created_at),
                "actor": r.actor or "",
                "credential": r.credential_id or "",
            }
            for r in found.records
        ],
        "workflow_url": found.workflow_url,
    }


async def _request_page(
    ctx: Context, member: Member, token: str, request_id: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    """The request's page (404 for one that is not the organization's)."""
    try:
        found = await requests.detail(ctx, org_of(member), request_id)
    except NotFound:
        return not_found("No such request.")
    title = f"Request {request_id} · Mandatum"
    view = _detail_view(found)
    # a subject who acted (an identity check, a decision) is named by their masked contact
    subjects = await run_blocking(
        ctx, members.subject_names, ctx, org_of(member), [r["actor"] for r in view["records"]]
    )
    return await show(
        ctx,
        member,
        token,
        "dashboard/request.html",
        "requests",
        status=status,
        title=title,
        req=view,
        subject_names=subjects,
        **extra,
    )


@router.get("/dashboard/requests/{request_id}", response_class=HTMLResponse)
async def request_page(
    request: Request, ctx: ContextDep, request_id: str, notice: str | None = None
) -> Response:
    found = await signed_in(request, ctx, EVERYONE)
    if isinstance(found, Response):
        return found
    if not is_object_id(request_id):
        return not_found("No such request.")
    member, token = found
    return await _request_page(ctx, member, token, request_id, notice=NOTICES.get(notice or ""))


request_page_html = _request_page  # the page again with why an action did not happen (request_resend)


def _done(request_id: str, notice: str) -> RedirectResponse:
    return RedirectResponse(f"/dashboard/requests/{request_id}?notice={notice}", status_code=303)


async def _refused_on_page(
    ctx: Context, member: Member, token: str, request_id: str, exc: Exception
) -> HTMLResponse:
    """The request's page with why the action did not happen (``common.refusal_page``)."""
    return await refusal_page(exc, partial(_request_page, ctx, member, token, request_id), UNREACHABLE)


@router.post("/dashboard/requests/{request_id}/cancel", response_class=HTMLResponse)
async def cancel(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    confirm: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, EVERYONE)
    if isinstance(found, Response):
        return found
    if not is_object_id(request_id):
        return not_found("No such request.")
    member, token = found
    if confirm != "yes":
        error = "Tick the box to confirm: a canceled request cannot be reopened."
        return await _request_page(ctx, member, token, request_id, status=400, error=error)
    try:
        await requests.cancel(ctx, members.actor_of(member), org_of(member), request_id)
    except Exception as exc:
        return await _refused_on_page(ctx, member, token, request_id, exc)
    return _done(request_id, "canceled")


@router.post("/dashboard/requests/{request_id}/subjects/{subject_id}/{change}", response_class=HTMLResponse)
async def subject_action(
    request: Request,
    ctx: ContextDep,
    request_id: str,
    subject_id: str,
    change: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """``resend``: a fresh code to the subject (CONTRACT 4's limits apply); ``link``: the subject's
    approval link, shown on the page once, to hand out (recorded as shown to the member);
    ``forget-browsers``: every trusted browser session of the subject ends (``iframe.cookie``)."""
    found = await form_by(request, ctx, csrf, EVERYONE)
    if isinstance(found, Response):
        return found
    if (
        change not in ("resend", "link", "forget-browsers")
        or not is_object_id(request_id)
        or not SUBJECT_ID_RE.fullmatch(subject_id)
    ):
        return not_found()
    member, token = found
    actor, org_id = members.actor_of(member), org_of(member)
    try:
        if change == "resend":
            await requests.resend_code(ctx, actor, org_id, request_id, subject_id)
            return _done(request_id, "code-sent")
        if change == "forget-browsers":
            await trusted_sessions.revoke_request_subject(ctx, actor, org_id, request_id, subject_id)
            return _done(request_id, "browsers-forgotten")
        link = await requests.hand_out_link(ctx, actor, org_id, request_id, subject_id)
    except Exception as exc:
        return await _refused_on_page(ctx, member, token, request_id, exc)
    return await _request_page(ctx, member, token, request_id, link={"subject": subject_id, **link})
