"""The organization's webhook endpoints (owners and developers; issue 34): the list, each with its
URL (without the query), description, on or off, the event types it takes and when it last
changed, linked to its page (``webhook_endpoints``); the form adding one, whose secrets are shown
once on its page; the newest events of every endpoint.

The forms of the one-webhook page (before issue 34) posted to ``/dashboard/webhooks`` and its
``/delivery``, ``/rotate`` and ``/test``: a tab still open on it reaches the organization's oldest
endpoint, the browser posting the same form again there (308)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard import shown_once
from api.routes.dashboard.common import (
    BUILDERS,
    event_row,
    form_by,
    member_page,
    org_of,
    signed_in,
    when,
)
from services import members, webhooks
from services.context import Context, run_blocking
from services.errors import Invalid, NotFound
from store.tables import Member, WebhookEndpoint

router = APIRouter()

WEBHOOK_ROLES = BUILDERS
EVENTS_SHOWN = 20
WEBHOOKS_PATH = "/dashboard/webhooks"
SECRETS_COOKIE = "mandatum_webhook_secrets"  # on an endpoint's page's path (shown_once)
DESCRIPTION_MAX = webhooks.DESCRIPTION_MAX  # the input's maxlength
LIST_NOTICES = {
    "removed": "The endpoint is removed: its events stay, and deliveries still to come to it are skipped.",
}


def endpoint_view(row: WebhookEndpoint) -> dict[str, Any]:
    """An endpoint as the pages show it: its URL without the query (the form shows it whole)."""
    return {
        "id": row.id,
        "url": webhooks.shown_url(row.url),
        "description": row.description or "",
        "enabled": row.enabled,
        "every": row.event_types is None,  # every type, those added later too
        "taken": list(row.event_types) if row.event_types is not None else list(webhooks.EVENT_TYPES),
        "updated": when(row.updated_at),
    }


def endpoint_urls(rows: Sequence[WebhookEndpoint]) -> dict[str, str]:
    """The endpoints' ids to their URLs as shown (``event_row``'s ``endpoints``)."""
    return {row.id: webhooks.shown_url(row.url) for row in rows}


def _list_html(ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any) -> HTMLResponse:
    org_id = org_of(member)
    rows = webhooks.endpoints(ctx, org_id)
    urls = endpoint_urls(rows)
    events = [event_row(e, urls) for e in webhooks.events(ctx, org_id, EVENTS_SHOWN)]
    return member_page(
        ctx,
        member,
        token,
        "dashboard/webhooks.html",
        "webhooks",
        status=status,
        title="Webhook endpoints · Mandatum",
        endpoints=[endpoint_view(row) for row in rows],
        events=events,
        description_max=DESCRIPTION_MAX,
        **extra,
    )


async def _list_page(ctx: Context, member: Member, token: str, **extra: Any) -> HTMLResponse:
    """``_list_html`` in a thread (it reads the database)."""
    return await run_blocking(ctx, partial(_list_html, ctx, member, token, **extra))


@router.get("/dashboard/webhooks", response_class=HTMLResponse)
async def webhooks_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    return await _list_page(ctx, member, token, notice=LIST_NOTICES.get(notice or ""))


@router.post("/dashboard/webhooks/add", response_class=HTMLResponse)
async def add_endpoint(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    url: Annotated[str, Form(max_length=2048)] = "",
    description: Annotated[str, Form(max_length=1000)] = "",
) -> Response:
    """One more endpoint, with secrets of its own: shown once on its page, where the redirect
    leads (a reload of either page adds nothing)."""
    found = await form_by(request, ctx, csrf, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    add = partial(
        webhooks.add_endpoint,
        ctx,
        members.actor_of(member),
        org_of(member),
        url.strip(),
        description.strip() or None,
    )
    try:
        made = await run_blocking(ctx, add)
    except (Invalid, NotFound) as exc:
        typed = {"url": url, "description": description}
        return await _list_page(ctx, member, token, status=400, error=str(exc), typed=typed)
    where = f"{WEBHOOKS_PATH}/{made.endpoint_id}"
    shown = {"secrets": made.generated}
    return shown_once.redirect_showing(ctx, member, f"{where}?notice=added", SECRETS_COOKIE, shown)


async def to_the_oldest(request: Request, ctx: ContextDep) -> Response:
    """A form of the one-webhook page: posted again (308) to the same form of the oldest
    endpoint's page; without an endpoint, its URL adds one, and anything else is refused."""
    form = await request.form()
    found = await form_by(request, ctx, str(form.get("csrf", ""))[:100], WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    oldest = await run_blocking(ctx, webhooks.settings_row, ctx, org_of(member))
    tail = request.url.path.removeprefix(WEBHOOKS_PATH)
    if oldest is not None:
        return RedirectResponse(f"{WEBHOOKS_PATH}/{oldest.id}{tail}", status_code=308)
    if not tail:
        return RedirectResponse(f"{WEBHOOKS_PATH}/add", status_code=308)
    error = "There is no endpoint yet: add one first."
    return await _list_page(ctx, member, token, status=409, error=error)


# before webhook_endpoints' /dashboard/webhooks/{endpoint_id} (none of these is an endpoint id)
for _tail in ("", "/delivery", "/rotate", "/test"):
    router.add_api_route(WEBHOOKS_PATH + _tail, to_the_oldest, methods=["POST"], response_class=HTMLResponse)
