"""The webhook (owners and developers): its URL, secrets shown once on creation and rotation, the
`test` event, the recent events with their delivery state."""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard import shown_once
from api.routes.dashboard.common import (
    BUILDERS,
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
from core.ids import is_object_id
from orchestration.temporal import temporal_unavailable
from services import members, webhooks
from services.context import Context, run_blocking, utcnow
from services.errors import Conflict, Invalid, NotFound
from store.tables import Member

router = APIRouter()

WEBHOOK_ROLES = BUILDERS
EVENTS_SHOWN = 20
WEBHOOK_NOTICES = {
    "test-sent": "The test event is on its way: its delivery shows below (reload to follow it).",
    "saved": "The webhook is saved.",
    "delivery": "What the webhook receives is saved: it applies to the next deliveries.",
    "rotated": "The signature secret is rotated: both are in use until the overlap ends.",
}
WEBHOOK_PATH = "/dashboard/webhooks"
SECRETS_COOKIE = "mandatum_webhook_secrets"


async def _webhook_page(ctx: Context, member: Member, token: str, **extra: Any) -> HTMLResponse:
    """``_webhook_html`` in a thread (it reads the database)."""
    return await run_blocking(ctx, partial(_webhook_html, ctx, member, token, **extra))


def _webhook_html(
    ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    org_id = org_of(member)
    config = webhooks.settings_row(ctx, org_id)
    events = [event_row(e) for e in webhooks.events(ctx, org_id, EVENTS_SHOWN)]
    return member_page(
        ctx,
        member,
        token,
        "dashboard/webhooks.html",
        "webhooks",
        status=status,
        title="Webhook · Mandatum",
        url=config.url if config else "",
        updated=when(config.updated_at) if config else "",
        enabled=config.enabled if config else True,
        taken=list(config.event_types)
        if config and config.event_types is not None
        else list(webhooks.EVENT_TYPES),
        event_types=webhooks.EVENT_TYPES,
        overlapping=when(config.previous_until)
        if config and config.previous_until and config.previous_until > utcnow()
        else "",
        events=events,
        **extra,
    )


@router.get("/dashboard/webhooks", response_class=HTMLResponse)
async def webhook_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    notice_text = WEBHOOK_NOTICES.get(notice or "")
    shown = shown_once.taken(ctx, member, request, SECRETS_COOKIE)
    answer = await _webhook_page(ctx, member, token, notice=notice_text, **(shown or {}))
    return shown_once.cleared(ctx, request, answer, SECRETS_COOKIE, WEBHOOK_PATH)


@router.post("/dashboard/webhooks", response_class=HTMLResponse)
async def set_webhook(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    url: Annotated[str, Form(max_length=2048)] = "",
    new_secrets: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    fresh = webhooks.new_secrets() if new_secrets == "yes" else {}
    try:
        generated = await run_blocking(
            ctx,
            partial(
                webhooks.configure,
                ctx,
                members.actor_of(member),
                org_of(member),
                url.strip(),
                **fresh,
            ),
        )
    except Invalid as exc:
        return await _webhook_page(ctx, member, token, status=400, error=str(exc))
    shown = generated or {name.replace("_", " "): value for name, value in fresh.items()}
    if not shown:
        return RedirectResponse(f"{WEBHOOK_PATH}?notice=saved", status_code=303)
    return shown_once.redirect_showing(
        ctx, member, f"{WEBHOOK_PATH}?notice=saved", SECRETS_COOKIE, {"secrets": shown}
    )


@router.post("/dashboard/webhooks/delivery", response_class=HTMLResponse)
async def set_delivery(request: Request, ctx: ContextDep) -> Response:
    """On or off, and the event types the webhook takes (every one ticked: all, new ones too)."""
    form = await request.form()
    found = await form_by(request, ctx, str(form.get("csrf", ""))[:100], WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    chosen = [str(t)[:40] for t in form.getlist("events")][: len(webhooks.EVENT_TYPES) + 1]
    every = set(chosen) >= set(webhooks.EVENT_TYPES)
    try:
        await run_blocking(
            ctx,
            webhooks.set_delivery,
            ctx,
            members.actor_of(member),
            org_of(member),
            form.get("enabled") == "yes",
            None if every else chosen,
        )
    except (Invalid, NotFound) as exc:
        return await _webhook_page(ctx, member, token, status=400, error=str(exc))
    return RedirectResponse(f"{WEBHOOK_PATH}?notice=delivery", status_code=303)


@router.post("/dashboard/webhooks/rotate", response_class=HTMLResponse)
async def rotate_secret(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    overlap: Annotated[str, Form(max_length=4)] = "24",
) -> Response:
    """A new signature secret, the current one still signing (X-Signature) for ``overlap`` hours."""
    found = await form_by(request, ctx, csrf, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    try:
        hours = int(overlap) if overlap.isascii() and overlap.isdigit() else -1
        done = await run_blocking(
            ctx, webhooks.rotate_signature_secret, ctx, members.actor_of(member), org_of(member), hours
        )
    except (Invalid, NotFound) as exc:
        return await _webhook_page(ctx, member, token, status=400, error=str(exc))
    shown = {
        "secrets": {"signature secret": done.signature_secret},
        "overlap_until": when(done.overlap_until),
    }
    return shown_once.redirect_showing(ctx, member, f"{WEBHOOK_PATH}?notice=rotated", SECRETS_COOKIE, shown)


@router.post("/dashboard/webhooks/test", response_class=HTMLResponse)
async def send_test_event(
    request: Request, ctx: ContextDep, csrf: Annotated[str, Form(max_length=100)] = ""
) -> Response:
    found = await form_by(request, ctx, csrf, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    if await run_blocking(ctx, webhooks.settings_row, ctx, org_of(member)) is None:
        error = "Set the webhook's URL first: the test event is sent there."
        return await _webhook_page(ctx, member, token, status=409, error=error)
    actor = members.actor_of(member)
    try:
        await webhooks.send_test_event(ctx, actor, org_of(member))
    except Exception as exc:
        if not temporal_unavailable(exc):
            raise
        error = "The delivery service does not answer right now: try again in a minute."
        return await _webhook_page(ctx, member, token, status=503, error=error)
    return RedirectResponse("/dashboard/webhooks?notice=test-sent", status_code=303)


# --- the events and their deliveries (every member: support retries and resends) -----------------

EVENT_ID_RE = re.compile(r"urn:via:event:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
EVENT_NOTICES = {
    "retry": "The event is being delivered again: its attempts show below (reload to follow them).",
    "resend": "The event is being sent again: its attempts show below (reload to follow them).",
}


@router.get("/dashboard/events", response_class=HTMLResponse)
async def events_page(
    request: Request,
    ctx: ContextDep,
    requestId: str | None = None,
    replayed: Annotated[int | None, Query(ge=0, le=100_000)] = None,
    more: str | None = None,
) -> Response:
    found = await signed_in(request, ctx, EVERYONE)
    if isinstance(found, Response):
        return found
    member, token = found
    wanted = (requestId or "").strip() or None
    render = partial(
        show, ctx, member, token, "dashboard/events.html", "events", title="Webhook events · Mandatum"
    )
    if wanted is not None and not is_object_id(wanted):
        error = "The request id is 24 lower-case hexadecimal characters."
        return await render(status=400, error=error, events=[], request_id="")
    rows = await run_blocking(ctx, webhooks.events, ctx, org_of(member), EVENTS_LISTED, wanted)
    notice = None
    if replayed is not None:  # after a replay (api/routes/dashboard/event_replay.py)
        events_are = "event of those days is" if replayed == 1 else "events of those days are"
        notice = f"{replayed} failed {events_are} being delivered again."
        if more:
            notice += " There are more: replay the same days again for the next ones."
    return await render(events=[event_row(e) for e in rows], request_id=wanted or "", notice=notice)


EVENTS_LISTED = 100


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
    view = {
        "title": "Webhook event · Mandatum",
        "event": event_row(event),
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
        error = "The delivery service does not answer right now: try again in a minute."
        return await _event_page(ctx, member, token, event_id, status=503, error=error)
    return RedirectResponse(f"/dashboard/events/{quote(event_id, safe=':')}?notice={kind}", status_code=303)
