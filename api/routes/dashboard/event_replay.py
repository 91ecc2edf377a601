"""Replay the failed webhook events of a range of days from the dashboard (issue 34): every
member (support retries events), each event retried as one retry is, with its record."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import EVERYONE, event_row, form_by, org_of, refusal_page, show
from services import members, webhooks
from services.context import Context, run_blocking
from store.tables import Member

router = APIRouter()
EVENTS_LISTED = 100


async def _events_page(
    ctx: Context, member: Member, token: str, *, status: int = 200, error: str = ""
) -> HTMLResponse:
    """The events page again, with why the replay did not happen."""
    rows = await run_blocking(ctx, webhooks.events, ctx, org_of(member), EVENTS_LISTED, None)
    return await show(
        ctx,
        member,
        token,
        "dashboard/events.html",
        "events",
        title="Webhook events · Mandatum",
        status=status,
        error=error,
        events=[event_row(e) for e in rows],
        request_id="",
    )


UNREACHABLE = "The delivery service does not answer right now: try again in a minute."


@router.post("/dashboard/events/replay")
async def replay(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    date_from: Annotated[str, Form(alias="dateFrom", max_length=40)] = "",
    date_to: Annotated[str, Form(alias="dateTo", max_length=40)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, EVERYONE)
    if isinstance(found, Response):
        return found
    member, token = found
    try:
        done = await webhooks.replay_failed(
            ctx, members.actor_of(member), org_of(member), date_from.strip(), date_to.strip()
        )
    except Exception as exc:
        return await refusal_page(exc, partial(_events_page, ctx, member, token), UNREACHABLE)
    more = "&more=1" if done.more else ""
    return RedirectResponse(f"/dashboard/events?replayed={len(done.started)}{more}", status_code=303)
