"""The webhook events and their deliveries (every member: support retries and resends; issue 34):
the newest events, of one request or one endpoint when asked, each with the endpoint it is for;
an event's page with its payload, its endpoint and every attempt; a failed event retried now, a
delivered one resent (the same event id again). The replay of a range of days is
``event_replay``."""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import (
    EVERYONE,
    event_row,
    form_by,
    member_page,
    not_found,
    org_of,
    show,
    signed_in,
    when,
)
from api.routes.dashboard.webhooks import WEBHOOK_ROLES, endpoint_urls
from core.ids import is_object_id
from orchestration.temporal import temporal_unavailable
from services import members, webhooks
from services.context import Context, run_blocking
from services.errors import Conflict, NotFound
from store.tables import Member

router = APIRouter()

EVENTS_LISTED = 100
EVENT_ID_RE = re.compile(r"urn:via:event:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
EVENT_NOTICES = {
    "retry": "The event is being delivered again: its attempts show below (reload to follow them).",
    "resend": "The event is being sent again: its attempts show below (reload to follow them).",
}
UNREACHABLE = "The delivery service does not answer right now: try again in a minute."


def events_html(
    ctx: Context,
    member: Member,
    token: str,
    *,
    request_id: str | None = None,
    endpoint_id: str | None = None,
    listed: bool = True,
    status: int = 200,
    **extra: Any,
) -> HTMLResponse:
    """The events page: the newest events (of the request, for the endpoint, when given; none
    unless ``listed``), the endpoints to filter by and to replay for. Reads the database."""
    org_id = org_of(member)
    rows = webhooks.endpoints(ctx, org_id)
    urls = endpoint_urls(rows)
    found = webhooks.events(ctx, org_id, EVENTS_LISTED, request_id, endpoint_id) if listed else []
    return member_page(
        ctx,
        member,
        token,
        "dashboard/events.html",
        "events",
        status=status,
        title="Webhook events · Mandatum",
        events=[event_row(e, urls) for e in found],
        request_id=request_id or "",
        endpoint_id=endpoint_id or "",
        endpoints=[{"id": r.id, "url": urls[r.id], "description": r.description or ""} for r in rows],
        links=member.role in WEBHOOK_ROLES,  # who may open an endpoint's page
        **extra,
    )


async def events_page_of(ctx: Context, member: Member, token: str, **extra: Any) -> HTMLResponse:
    """``events_html`` in a thread."""
    return await run_blocking(ctx, partial(events_html, ctx, member, token, **extra))


def _replayed_notice(replayed: int | None, more: str | None) -> str | None:
    """After a replay (``event_replay``): how many failed events are delivered again."""
    if replayed is None:
        return None
    events_are = "event of those days is" if replayed == 1 else "events of those days are"
    notice = f"{replayed} failed {events_are} being delivered again."
    if more:
        notice += " There are more: replay the same days again for the next ones."
    return notice


@router.get("/dashboard/events", response_class=HTMLResponse)
async def events_page(
    request: Request,
    ctx: ContextDep,
    requestId: str | None = None,
    endpointId: str | None = None,
    replayed: Annotated[int | None, Query(ge=0, le=100_000)] = None,
    more: str | None = None,
) -> Response:
    found = await signed_in(request, ctx, EVERYONE)
    if isinstance(found, Response):
        return found
    member, token = found
    wanted = (requestId or "").strip() or None
    endpoint = (endpointId or "").strip() or None
    render = partial(events_page_of, ctx, member, token)
    if wanted is not None and not is_object_id(wanted):
        error = "The request id is 24 lower-case hexadecimal characters."
        return await render(status=400, error=error, listed=False, endpoint_id=endpoint)
    if endpoint is not None and not is_object_id(endpoint):
        error = "The endpoint id is 24 lower-case hexadecimal characters."
        return await render(status=400, error=error, listed=False, request_id=wanted)
    notice = _replayed_notice(replayed, more)
    return await render(request_id=wanted, endpoint_id=endpoint, notice=notice)


async def _event_page(
    ctx: Context, member: Member, token: str, event_id: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    try:
        log = await run_blocking(ctx, webhooks.event_log, ctx, org_of(member), event_id)
    except NotFound:
        return not_found("No such event.")
    attempts = [
        {
            "number": a.number,
            "at": when(a.finished_at),
            "status": str(a.status_code) if a.status_code is not None else "",
            "error": a.error or "",
            "duration": f"{a.duration_ms} ms" if a.duration_ms is not None else "",
            "url": a.url or "",
            "headers": a.response_headers or [],
            "body": a.response_body,
        }
        for a in log.attempts
    ]
    event = log.event
    urls = endpoint_urls(await run_blocking(ctx, webhooks.endpoints, ctx, org_of(member)))
    view = {
        "title": "Webhook event · Mandatum",
        "event": event_row(event, urls),
        "links": member.role in WEBHOOK_ROLES,
        "attempts": attempts,
        # what the receiver decrypts: the event as it was made (it is sealed per attempt)
        "payload": json.dumps(event.payload, indent=2, ensure_ascii=False, sort_keys=True),
        "next_attempt": when(event.next_attempt_at) if event.next_attempt_at else "",
    }
    return await show(ctx, member, token, "dashboard/event.html", "events", status=status, **view, **extra)


@router.get("/dashboard/events/{event_id}", response_class=HTMLResponse)
async def event_page(request: Request, ctx: ContextDep, event_id: str, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, EVERYONE)
    if isinstance(found, Response):
        return found
    if not EVENT_ID_RE.fullmatch(event_id):
        return not_found("No such event.")
    member, token = found
    return await _event_page(ctx, member, token, event_id, notice=EVENT_NOTICES.get(notice or ""))


@router.post("/dashboard/events/{event_id}/{kind}", response_class=HTMLResponse)
async def redeliver(
    request: Request,
    ctx: ContextDep,
    event_id: str,
    kind: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """``retry`` a failed event now, or ``resend`` a delivered one (the same event id again)."""
    found = await form_by(request, ctx, csrf, EVERYONE)
    if isinstance(found, Response):
        return found
    if kind not in ("retry", "resend") or not EVENT_ID_RE.fullmatch(event_id):
        return not_found()
    member, token = found
    try:
        await webhooks.redeliver(ctx, members.actor_of(member), org_of(member), event_id, kind)
    except NotFound:
        return not_found("No such event.")
    except Conflict as exc:
        return await _event_page(ctx, member, token, event_id, status=409, error=str(exc))
    except Exception as exc:
        if not temporal_unavailable(exc):
            raise
        return await _event_page(ctx, member, token, event_id, status=503, error=UNREACHABLE)
    return RedirectResponse(f"/dashboard/events/{quote(event_id, safe=':')}?notice={kind}", status_code=303)
