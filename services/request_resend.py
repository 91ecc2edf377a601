"""Send a closed request again (issue 32): support (owner and support members, operators, the
command line) sends an expired, canceled or rejected request again as a new request with the same
subjects, credentials and options (each action's newest published version when asked), its own
workflow, linked both ways (``resentFrom``/``resentAs``) and announced to the integrator by a
``request.resent`` event. Once per request; a required reason, in ``REQUEST_RESENT``.

The event is made and its delivery started after the commit (``announce``); the worker's pass
(``announce_forever``) makes what the API did not, as for ``services.limit_events``.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from functools import partial
from typing import Any

from sqlalchemy.exc import IntegrityError
from temporalio.client import Client

from core.actors import Actor
from core.kinds import CredentialStatus, RequestStatus
from core.settings import Settings
from orchestration import webhooks as deliveries
from services import operator_search, requests
from services.audit import checked_reason
from services.context import Context
from services.errors import Conflict, Invalid, NotFound, TooMany
from services.operators import require_operator
from store import actions as action_store
from store import orgs
from store import request_queries as queries
from store import request_resend as store
from store import requests as request_store
from store import webhooks as webhook_store
from store.db import utcnow
from store.tables import WebhookEvent
from wire.webhook_payloads import api_version_of, request_resent_event

log = logging.getLogger("mandatum.services.request_resend")
LOOK_BACK = timedelta(days=7)
CLOSED_KINDS = "an expired, canceled or rejected request"


def why_not(bundle: request_store.RequestBundle) -> str | None:
    """Why the request cannot be sent again, or None: it is expired, canceled, or completed with
    every credential rejected (nothing issued). A request still open, or one that issued a
    mandate, is not."""
    status = bundle.request.status
    if status in (RequestStatus.EXPIRED, RequestStatus.CANCELED):
        return None
    if status == RequestStatus.PENDING:
        return "The request is still open: it can be sent again once it is expired, canceled or rejected"
    if all(c.status == CredentialStatus.REJECTED for c in bundle.credentials):
        return None
    return "The request issued or accepted a credential: only " + CLOSED_KINDS + " is sent again"


async def send_again(
    ctx: Context, actor: Actor, org_id: str, request_id: str, reason: str, *, newest: bool = False
) -> request_store.RequestBundle:
    """The new request, its workflow started (or left to the reconciler), its event announced.
    ``NotFound`` for none of the organization's, ``Conflict`` when it is open, issued something
    or was sent again already (naming that request), ``Invalid`` when an action has no published
    version any more (with ``newest``) or the reason is not one."""
    reason = checked_reason(reason)
    requests.check_request_id(request_id)
    source = await asyncio.to_thread(store.source_of, ctx.engine, org_id, request_id)
    if source is None:
        raise NotFound(f"Request {request_id} not found")
    if source.resent_as is not None:
        raise Conflict(f"Request {request_id} was already sent again as {source.resent_as}")
    refused = why_not(source.bundle)
    if refused is not None:
        raise Conflict(refused)
    pins = await asyncio.to_thread(_newest_pins, ctx, org_id, source.bundle) if newest else {}
    new = store.new_request_of(source, pins, reason)
    old = source.bundle.request
    try:
        created = await asyncio.to_thread(
            request_store.create_request,
            ctx.engine,
            org_id,
            new,
            old.expires_at - old.created_at,  # as long as the first one had
            ctx.settings.default_request_rate_per_minute,
            None,
            None,
            str(actor),
        )
    except IntegrityError as exc:  # sent again at the same moment by someone else
        again = await asyncio.to_thread(store.resent_as, ctx.engine, request_id)
        if again is None:
            raise
        raise Conflict(f"Request {request_id} was already sent again as {again}") from exc
    except request_store.RateLimited as exc:
        raise TooMany("Too many requests created; slow down", retry_after=exc.retry_after) from exc
    assert isinstance(created, request_store.RequestBundle)
    await requests.start_workflow(ctx, created)
    await announce(ctx.engine, ctx.settings, ctx.client(), org_id, created.request.id)
    return created


async def send_again_as_operator(
    ctx: Context, actor: Actor, request_id: str, reason: str, *, newest: bool = False
) -> request_store.RequestBundle:
    """``send_again`` for an operator, in whichever organization holds the request."""
    require_operator(actor)
    org_id = await asyncio.to_thread(operator_search.request_owner, ctx, request_id)
    return await send_again(ctx, actor, org_id, request_id, reason, newest=newest)


def resendable(bundle: request_store.RequestBundle) -> bool:
    """Whether the pages offer to send the request again."""
    return bundle.resent_as is None and why_not(bundle) is None


def _newest_pins(
    ctx: Context, org_id: str, bundle: request_store.RequestBundle
) -> dict[int, tuple[dict[str, Any], list[dict[str, Any]] | None]]:
    """Each action of the request pinned to its newest published version, with the same
    userParams (the version's defaults fill new ones); ``Invalid`` naming what no longer fits."""
    pins: dict[int, tuple[dict[str, Any], list[dict[str, Any]] | None]] = {}
    problems: list[str] = []
    for cred in bundle.credentials:
        if not cred.action:
            continue
        where = f"credentials.{cred.position}.action"
        pin, found = action_store.pin_for_request(
            ctx.engine, org_id, cred.action["id"], dict(cred.action.get("userParams") or {}), where=where
        )
        problems += found
        if pin is not None:
            limits, found = action_store.bounds_for_pin(ctx.engine, pin, where=where)
            problems += found
            pins[cred.position] = (pin, limits)
    if problems:
        raise Invalid(["The newest published versions do not take this request's values:", *problems])
    return pins


# --- the integrator's event ------------------------------------------------------------------


# The stock SDK releases of the older versions parse an event into a oneOf of the types they know
# (``WebhookCallEvent.from_dict``) and fail on any other: those organizations get no event
# (docs/webhooks.md); they find the new request by its internalId or GET /request.
FIRST_VERSION = store.FIRST_VERSION


def create_event(engine: Any, settings: Settings, org_id: str, request_id: str) -> list[WebhookEvent]:
    bundle = queries.get_request(engine, org_id, request_id)
    if bundle is None or bundle.request.resent_from is None:
        return []
    api_version = api_version_of(orgs.get_organization(engine, org_id).api_version)
    if api_version < FIRST_VERSION:
        return []
    made = webhook_store.create_events(
        engine,
        org_id,
        store.fact_key(request_id),
        store.RESENT_EVENT,
        request_id,
        lambda event_id, at: request_resent_event(settings, bundle, api_version, event_id, at),
    )
    return [event for event, _ in made]


async def announce(engine: Any, settings: Settings, client: Client, org_id: str, request_id: str) -> None:
    """Make the event and start its delivery; a failure is logged and left to the worker's pass."""
    await deliveries.start_made(
        client,
        settings.task_queue,
        partial(create_event, engine, settings, org_id, request_id),
        log,
        f"the request.resent event of request {request_id}",
    )


async def announce_missed_once(engine: Any, settings: Settings, client: Client) -> int:
    now = utcnow()
    missed = await asyncio.to_thread(
        store.unannounced, engine, now - LOOK_BACK, now - settings.reconcile_grace
    )
    for org_id, request_id in missed:
        await announce(engine, settings, client, org_id, request_id)
    return len(missed)


async def announce_forever(engine: Any, settings: Settings, client: Client) -> None:
    await deliveries.every_interval(
        settings.reconcile_interval.total_seconds(),
        partial(announce_missed_once, engine, settings, client),
        log,
        "requests sent again",
    )
