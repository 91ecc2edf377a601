"""One webhook endpoint's page (owners and developers; issue 34): its URL and description (with new
secrets when asked), what it receives, the rotation of its signature secret with an overlap, its
``test`` event, its newest events and its removal, confirmed by a box.

Each form posts, redirects with a notice and gets; new secrets travel once to the page
(``shown_once``, on the endpoint's own path). A refusal shows the page again with what was typed.
A path that is not an endpoint of the member's organization (malformed, unknown, removed, another
organization's) is the dashboard's 404, and nothing is changed."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard import shown_once
from api.routes.dashboard.common import event_row, form_by, member_page, not_found, org_of, signed_in, when
from api.routes.dashboard.webhooks import (
    DESCRIPTION_MAX,
    EVENTS_SHOWN,
    SECRETS_COOKIE,
    WEBHOOK_ROLES,
    WEBHOOKS_PATH,
    endpoint_view,
)
from core.ids import is_object_id
from orchestration.temporal import temporal_unavailable
from services import members, webhooks
from services.context import Context, run_blocking, utcnow
from services.errors import Invalid, NotFound
from store.tables import Member

router = APIRouter()

NO_SUCH = "No such webhook endpoint."
NOTICES = {
    "added": "The endpoint is added: save its secrets now, then send it a test event.",
    "saved": "The endpoint is saved.",
    "delivery": "What the endpoint receives is saved: it applies to the next deliveries.",
    "rotated": "The signature secret is rotated: both are in use until the overlap ends.",
    "test-sent": "The test event is on its way: its delivery shows below (reload to follow it).",
}
UNREACHABLE = "The delivery service does not answer right now: try again in a minute."


def _endpoint_html(
    ctx: Context,
    member: Member,
    token: str,
    endpoint_id: str,
    *,
    status: int = 200,
    typed: dict[str, Any] | None = None,
    **extra: Any,
) -> HTMLResponse:
    """The endpoint's page; the forms hold ``typed`` (what a refused form sent) over the stored."""
    org_id = org_of(member)
    row = webhooks.settings_row(ctx, org_id, endpoint_id) if is_object_id(endpoint_id) else None
    if row is None:
        return not_found(NO_SUCH)
    view = endpoint_view(row)
    values = {
        "url": row.url,
        "description": view["description"],
        "enabled": row.enabled,
        "taken": view["taken"],
        "overlap": "24",
    }
    values.update(typed or {})
    in_overlap = row.previous_until is not None and row.previous_until > utcnow()
    return member_page(
        ctx,
        member,
        token,
        "dashboard/webhook_endpoint.html",
        "webhooks",
        status=status,
        title="Webhook endpoint · Mandatum",
        endpoint=view,
        values=values,
        event_types=webhooks.EVENT_TYPES,
        overlapping=when(row.previous_until) if in_overlap and row.previous_until else "",
        events=[event_row(e) for e in webhooks.events(ctx, org_id, EVENTS_SHOWN, None, row.id)],
        description_max=DESCRIPTION_MAX,
        **extra,
    )


async def _endpoint_page(
    ctx: Context, member: Member, token: str, endpoint_id: str, **extra: Any
) -> HTMLResponse:
    """``_endpoint_html`` in a thread (it reads the database)."""
    return await run_blocking(ctx, partial(_endpoint_html, ctx, member, token, endpoint_id, **extra))


async def _sender(
    request: Request, ctx: Context, csrf: str, endpoint_id: str
) -> tuple[Member, str] | Response:
    """The member sending a form of the endpoint's page (``form_by``), or the answer instead: 404
    for a path that cannot be an endpoint's (the services answer NotFound for another's)."""
    found = await form_by(request, ctx, csrf, WEBHOOK_ROLES)
    if not isinstance(found, Response) and not is_object_id(endpoint_id):
        return not_found(NO_SUCH)
    return found


def _done(endpoint_id: str, notice: str) -> RedirectResponse:
    return RedirectResponse(f"{WEBHOOKS_PATH}/{endpoint_id}?notice={notice}", status_code=303)


@router.get("/dashboard/webhooks/{endpoint_id}", response_class=HTMLResponse)
async def endpoint_page(
    request: Request, ctx: ContextDep, endpoint_id: str, notice: str | None = None
) -> Response:
    found = await signed_in(request, ctx, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    path = f"{WEBHOOKS_PATH}/{endpoint_id}"
    shown = shown_once.taken(ctx, member, request, SECRETS_COOKIE)
    answer = await _endpoint_page(
        ctx, member, token, endpoint_id, notice=NOTICES.get(notice or ""), **(shown or {})
    )
    return shown_once.cleared(ctx, request, answer, SECRETS_COOKIE, path)


@router.post("/dashboard/webhooks/{endpoint_id}", response_class=HTMLResponse)
async def change_endpoint(
    request: Request,
    ctx: ContextDep,
    endpoint_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    url: Annotated[str, Form(max_length=2048)] = "",
    description: Annotated[str | None, Form(max_length=1000)] = None,
    new_secrets: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Its URL and description (a form without the description keeps it), and new secrets when
    the box is ticked (shown once)."""
    found = await _sender(request, ctx, csrf, endpoint_id)
    if isinstance(found, Response):
        return found
    member, token = found
    fresh = webhooks.new_secrets() if new_secrets == "yes" else {}
    change = partial(
        webhooks.configure,
        ctx,
        members.actor_of(member),
        org_of(member),
        url.strip(),
        endpoint_id=endpoint_id,
        description=description.strip() if description is not None else None,
        **fresh,
    )
    try:
        generated = await run_blocking(ctx, change)
    except NotFound:
        return not_found(NO_SUCH)
    except Invalid as exc:
        typed = {"url": url, **({"description": description} if description is not None else {})}
        return await _endpoint_page(ctx, member, token, endpoint_id, status=400, error=str(exc), typed=typed)
    shown = generated or {name.replace("_", " "): value for name, value in fresh.items()}
    if not shown:
        return _done(endpoint_id, "saved")
    where = f"{WEBHOOKS_PATH}/{endpoint_id}?notice=saved"
    return shown_once.redirect_showing(ctx, member, where, SECRETS_COOKIE, {"secrets": shown})


@router.post("/dashboard/webhooks/{endpoint_id}/delivery", response_class=HTMLResponse)
async def set_delivery(request: Request, ctx: ContextDep, endpoint_id: str) -> Response:
    """On or off, and the event types it takes (every one ticked: all, new ones too)."""
    form = await request.form()
    found = await _sender(request, ctx, str(form.get("csrf", ""))[:100], endpoint_id)
    if isinstance(found, Response):
        return found
    member, token = found
    chosen = [str(t)[:40] for t in form.getlist("events")][: len(webhooks.EVENT_TYPES) + 1]
    enabled = form.get("enabled") == "yes"
    every = set(chosen) >= set(webhooks.EVENT_TYPES)
    change = partial(
        webhooks.set_delivery,
        ctx,
        members.actor_of(member),
        org_of(member),
        enabled,
        None if every else chosen,
        endpoint_id,
    )
    try:
        await run_blocking(ctx, change)
    except NotFound:
        return not_found(NO_SUCH)
    except Invalid as exc:
        typed = {"enabled": enabled, "taken": chosen}
        return await _endpoint_page(ctx, member, token, endpoint_id, status=400, error=str(exc), typed=typed)
    return _done(endpoint_id, "delivery")


@router.post("/dashboard/webhooks/{endpoint_id}/rotate", response_class=HTMLResponse)
async def rotate_secret(
    request: Request,
    ctx: ContextDep,
    endpoint_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    overlap: Annotated[str, Form(max_length=4)] = "24",
) -> Response:
    """A new signature secret, the current one still signing (X-Signature) for ``overlap`` hours."""
    found = await _sender(request, ctx, csrf, endpoint_id)
    if isinstance(found, Response):
        return found
    member, token = found
    hours = int(overlap) if overlap.isascii() and overlap.isdigit() else -1
    rotate = partial(
        webhooks.rotate_signature_secret, ctx, members.actor_of(member), org_of(member), hours, endpoint_id
    )
    try:
        done = await run_blocking(ctx, rotate)
    except NotFound:
        return not_found(NO_SUCH)
    except Invalid as exc:
        typed = {"overlap": overlap}
        return await _endpoint_page(ctx, member, token, endpoint_id, status=400, error=str(exc), typed=typed)
    shown = {
        "secrets": {"signature secret": done.signature_secret},
        "overlap_until": when(done.overlap_until),
    }
    where = f"{WEBHOOKS_PATH}/{endpoint_id}?notice=rotated"
    return shown_once.redirect_showing(ctx, member, where, SECRETS_COOKIE, shown)


@router.post("/dashboard/webhooks/{endpoint_id}/test", response_class=HTMLResponse)
async def send_test_event(
    request: Request, ctx: ContextDep, endpoint_id: str, csrf: Annotated[str, Form(max_length=100)] = ""
) -> Response:
    found = await _sender(request, ctx, csrf, endpoint_id)
    if isinstance(found, Response):
        return found
    member, token = found
    try:
        await webhooks.send_test_event(ctx, members.actor_of(member), org_of(member), endpoint_id)
    except NotFound:
        return not_found(NO_SUCH)
    except Exception as exc:
        if not temporal_unavailable(exc):
            raise
        return await _endpoint_page(ctx, member, token, endpoint_id, status=503, error=UNREACHABLE)
    return _done(endpoint_id, "test-sent")


@router.post("/dashboard/webhooks/{endpoint_id}/remove", response_class=HTMLResponse)
async def remove_endpoint(
    request: Request,
    ctx: ContextDep,
    endpoint_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    confirm: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Removed once the box is ticked: its events stay, deliveries still to come are skipped."""
    found = await _sender(request, ctx, csrf, endpoint_id)
    if isinstance(found, Response):
        return found
    member, token = found
    if confirm != "yes":
        error = "Tick the box to confirm: a removed endpoint cannot be brought back."
        return await _endpoint_page(ctx, member, token, endpoint_id, status=400, error=error)
    remove = partial(webhooks.remove_endpoint, ctx, members.actor_of(member), org_of(member), endpoint_id)
    try:
        await run_blocking(ctx, remove)
    except NotFound:
        return not_found(NO_SUCH)
    return RedirectResponse(f"{WEBHOOKS_PATH}?notice=removed", status_code=303)
