"""Replay the failed webhook events of a range of days from the dashboard (issue 34): every
member (support retries events), each event retried as one retry is, with its record; of every
endpoint, or of the one chosen."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import EVERYONE, form_by, org_of, refusal_page
from api.routes.dashboard.webhook_events import UNREACHABLE, events_page_of
from services import members, webhooks
from services.context import Context, run_blocking
from store.tables import Member

router = APIRouter()
NO_SUCH_ENDPOINT = "There is no such endpoint: choose one of the list, or every endpoint."


async def _events_page(
    ctx: Context, member: Member, token: str, typed: dict[str, str], *, status: int = 200, error: str = ""
) -> HTMLResponse:
    """The events page again, with why the replay did not happen and the form as it was sent."""
    return await events_page_of(ctx, member, token, status=status, error=error, replay=typed)


async def _known(ctx: Context, member: Member, endpoint_id: str) -> bool:
    """Whether ``endpoint_id`` is one of the member's organization's endpoints."""
    rows = await run_blocking(ctx, webhooks.endpoints, ctx, org_of(member))
    return any(row.id == endpoint_id for row in rows)


@router.post("/dashboard/events/replay")
async def replay(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    date_from: Annotated[str, Form(alias="dateFrom", max_length=40)] = "",
    date_to: Annotated[str, Form(alias="dateTo", max_length=40)] = "",
    endpoint_id: Annotated[str, Form(alias="endpointId", max_length=40)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, EVERYONE)
    if isinstance(found, Response):
        return found
    member, token = found
    endpoint = endpoint_id.strip() or None
    typed = {"from": date_from, "to": date_to, "endpoint": endpoint or ""}
    render = partial(_events_page, ctx, member, token, typed)
    if endpoint is not None and not await _known(ctx, member, endpoint):
        return await render(status=400, error=NO_SUCH_ENDPOINT)
    try:
        done = await webhooks.replay_failed(
            ctx,
            members.actor_of(member),
            org_of(member),
            date_from.strip(),
            date_to.strip(),
            endpoint_id=endpoint,
        )
    except Exception as exc:
        return await refusal_page(exc, render, UNREACHABLE)
    more = "&more=1" if done.more else ""
    only = f"&endpointId={endpoint}" if endpoint else ""  # the list then shows that endpoint's
    return RedirectResponse(f"/dashboard/events?replayed={len(done.started)}{more}{only}", status_code=303)
