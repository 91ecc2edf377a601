"""The organization's webhook endpoints: their settings, the ``test`` event, the events with every
delivery attempt, retrying a failed delivery and resending a delivered one. Done by a named actor
(the command line's operator, a dashboard member). ``endpoint_id=None`` is the organization's
oldest endpoint: CONTRACT 7's one webhook.

Events about requests are made by the request workflows' activities (``activities.webhooks``),
idempotent on their fact; their delivery is ``WebhookDeliveryWorkflow``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from temporalio.exceptions import WorkflowAlreadyStartedError

from adapters.egress import EgressPolicy
from core.actors import Actor
from orchestration import webhooks as deliveries
from services.audit import optional_reason
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import orgs
from store import webhooks as store
from store.tables import WebhookAttempt, WebhookEndpoint, WebhookEvent
from wire.dates import day_range
from wire.webhook_payloads import api_version_of, sample_event


@dataclass(frozen=True)
class Configured:
    endpoint_id: str
    generated: dict[str, str]  # the secrets made for it, by name: shown once


def configure(
    ctx: Context,
    actor: Actor,
    org_id: str,
    url: str,
    signature_secret: str | None = None,
    encryption_secret: str | None = None,
    salt: str | None = None,
    *,
    endpoint_id: str | None = None,
    description: str | None = None,
) -> dict[str, str]:
    """Set an endpoint (None: the oldest, made when there is none). Omitted secrets keep their
    current value, or are generated for a new endpoint: those are returned (to be shown once) by
    name. The URL passes ``adapters.egress``'s checks; ``NotFound`` for an unknown endpoint."""
    return _store(
        ctx, actor, org_id, url, (signature_secret, encryption_secret, salt), endpoint_id, description
    ).generated


def add_endpoint(
    ctx: Context, actor: Actor, org_id: str, url: str, description: str | None = None
) -> Configured:
    """One more endpoint, with secrets of its own (returned, to be shown once); ``Invalid`` past
    ``store.ENDPOINTS_AT_MOST``."""
    return _store(ctx, actor, org_id, url, (None, None, None), None, description, new=True)


def _store(
    ctx: Context,
    actor: Actor,
    org_id: str,
    url: str,
    given: tuple[str | None, str | None, str | None],
    endpoint_id: str | None,
    description: str | None,
    new: bool = False,
) -> Configured:
    current = None if new else store.get_config(ctx.engine, ctx.cipher, org_id, endpoint_id)
    if endpoint_id is not None and current is None:
        raise NotFound(f"webhook endpoint {endpoint_id} not found")
    generated: dict[str, str] = {}

    def pick(given: str | None, kept: str | None, name: str, make: str) -> str:
        if given is not None:
            return given
        if kept is not None:
            return kept
        generated[name] = make
        return make

    settings = store.WebhookSettings(
        url=url,
        signature_secret=pick(
            given[0],
            current.signature_secret if current else None,
            "signature secret",
            store.new_signature_secret(),
        ),
        encryption_secret=pick(
            given[1],
            current.encryption_secret if current else None,
            "encryption secret",
            store.new_encryption_secret(),
        ),
        salt=pick(given[2], current.salt if current else None, "salt", store.new_salt()),
    )
    try:
        made = store.set_config(
            ctx.engine,
            ctx.cipher,
            org_id,
            settings,
            EgressPolicy.of(ctx.settings),
            actor=str(actor),
            endpoint_id=endpoint_id,
            new=new,
            description=description,
        )
    except orgs.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except ValueError as exc:
        raise Invalid(str(exc)) from exc
    return Configured(made, generated)


DESCRIPTION_MAX = store.DESCRIPTION_MAX  # of an endpoint's description


def shown_url(url: str) -> str:
    """An endpoint's URL as pages, the trail and the command line show it: without its query or
    fragment, where a receiver's token may sit."""
    return store.without_query(url)


def endpoints(ctx: Context, org_id: str) -> list[WebhookEndpoint]:
    """The organization's endpoints as stored (secrets sealed), oldest first."""
    return store.endpoint_rows(ctx.engine, org_id)


def remove_endpoint(ctx: Context, actor: Actor, org_id: str, endpoint_id: str) -> None:
    """Remove an endpoint; its events stay, deliveries still to come are skipped."""
    try:
        store.remove_endpoint(ctx.engine, org_id, endpoint_id, actor=str(actor))
    except orgs.NotFound as exc:
        raise NotFound(str(exc)) from exc


OVERLAP_HOURS = range(1, 169)  # a rotation's overlap: 1 hour to a week
DEFAULT_OVERLAP_HOURS = 24


@dataclass(frozen=True)
class Rotated:
    signature_secret: str  # shown once
    overlap_until: datetime


def rotate_signature_secret(
    ctx: Context,
    actor: Actor,
    org_id: str,
    overlap_hours: int = DEFAULT_OVERLAP_HOURS,
    endpoint_id: str | None = None,
) -> Rotated:
    """A new signature secret for the webhook; deliveries are signed with the current one too
    (``X-Signature``, the new one in ``X-Signature-Next``) for ``overlap_hours``, so receivers
    move to the new secret when they are ready. ``Invalid`` for an overlap out of range,
    ``NotFound`` without a webhook."""
    if overlap_hours not in OVERLAP_HOURS:
        raise Invalid(f"the overlap is {OVERLAP_HOURS.start} to {OVERLAP_HOURS.stop - 1} hours")
    new = store.new_signature_secret()
    try:
        until = store.rotate_signature_secret(
            ctx.engine,
            ctx.cipher,
            org_id,
            new,
            timedelta(hours=overlap_hours),
            actor=str(actor),
            endpoint_id=endpoint_id,
        )
    except orgs.NotFound as exc:
        raise NotFound(str(exc)) from exc
    return Rotated(new, until)


EVENT_TYPES = store.EVENT_TYPES


def set_delivery(
    ctx: Context,
    actor: Actor,
    org_id: str,
    enabled: bool,
    event_types: list[str] | None,
    endpoint_id: str | None = None,
) -> None:
    """Turn the webhook on or off and choose the event types it takes (None: every one; a test
    event is always taken). ``Invalid`` for an unknown type or an empty choice."""
    if event_types is not None:
        unknown = [t for t in event_types if t not in EVENT_TYPES]
        if unknown:
            raise Invalid(f"an event type is one of {', '.join(EVENT_TYPES)}")
        if not event_types:
            raise Invalid("choose at least one event type, or turn the webhook off")
        event_types = [t for t in EVENT_TYPES if t in event_types]  # each once, in the docs' order
    try:
        store.set_delivery(
            ctx.engine, org_id, enabled, event_types, actor=str(actor), endpoint_id=endpoint_id
        )
    except orgs.NotFound as exc:
        raise NotFound(str(exc)) from exc


def settings_row(ctx: Context, org_id: str, endpoint_id: str | None = None) -> WebhookEndpoint | None:
    """The organization's endpoint as stored (its URL and when it was set; the secrets sealed),
    None when there is none."""
    return store.config_row(ctx.engine, org_id, endpoint_id)


def new_secrets() -> dict[str, str]:
    """Fresh secrets for ``configure``, by its arguments' names: the signature secret, the
    encryption secret and the salt."""
    return {
        "signature_secret": store.new_signature_secret(),
        "encryption_secret": store.new_encryption_secret(),
        "salt": store.new_salt(),
    }


def create_test_event(
    ctx: Context, actor: Actor, org_id: str, endpoint_id: str | None = None
) -> WebhookEvent:
    """A ``test`` event for one endpoint of the organization (None: its oldest); each call is a
    new fact (start its delivery with ``start_delivery``)."""
    try:
        api_version = api_version_of(orgs.get_organization(ctx.engine, org_id).api_version)
    except orgs.NotFound as exc:
        raise NotFound(str(exc)) from exc
    endpoint = store.config_row(ctx.engine, org_id, endpoint_id)
    if endpoint_id is not None and endpoint is None:
        raise NotFound(f"webhook endpoint {endpoint_id} not found")
    event, _ = store.create_event(
        ctx.engine,
        org_id,
        f"test:{time.time_ns()}",
        "test",
        None,
        lambda event_id, at: sample_event(ctx.settings, api_version, event_id, at),
        endpoint.id if endpoint is not None else None,
    )
    return event


@dataclass(frozen=True)
class EventLog:
    event: WebhookEvent
    attempts: list[WebhookAttempt]


def events(
    ctx: Context, org_id: str, limit: int, request_id: str | None = None, endpoint_id: str | None = None
) -> list[WebhookEvent]:
    """The organization's newest events (of one request, for one endpoint, when given)."""
    return store.list_events(ctx.engine, org_id, limit, request_id, endpoint_id)


def event_log(ctx: Context, org_id: str, event_id: str) -> EventLog:
    """The organization's event with every attempt to deliver it; ``NotFound`` for another's."""
    event = store.event_of(ctx.engine, org_id, event_id)
    if event is None:
        raise NotFound(f"webhook event {event_id} not found")
    return EventLog(event, store.attempts_of(ctx.engine, event_id))


async def redeliver(
    ctx: Context, actor: Actor, org_id: str, event_id: str, kind: str, reason: str | None = None
) -> str:
    """Deliver the organization's event once more: ``retry`` a failed one now, ``resend`` a
    delivered one (the receiver gets the same event id again). ``WEBHOOK_REDELIVERY`` names the
    actor (with ``reason`` when given); ``Conflict`` for an event in another state. When Temporal
    does not take the delivery, the event goes back to the state it had and the error is raised:
    nothing is left pending without a workflow to deliver it."""
    reason = optional_reason(reason)
    try:
        event = await asyncio.to_thread(
            store.redeliver, ctx.engine, org_id, event_id, kind, str(actor), reason
        )
    except orgs.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.WrongState as exc:
        wanted = "a failed one is retried" if kind == "retry" else "a delivered one is resent"
        raise Conflict(f"webhook event {event_id} is {exc}: only {wanted}") from exc
    resend = event.attempts if kind == "resend" else None
    try:
        try:
            return await deliveries.start_delivery(
                ctx.client(), ctx.settings.task_queue, event, resend=resend
            )
        except WorkflowAlreadyStartedError:
            # a failed run records FAILED just before it ends: wait for its end, then start anew
            if kind != "retry" or not await deliveries.ended(ctx.client(), event_id, ENDING_SECONDS):
                raise
            return await deliveries.start_delivery(
                ctx.client(), ctx.settings.task_queue, event, resend=resend
            )
    except BaseException as exc:
        previous = store.FAILED if kind == "retry" else store.DELIVERED
        await asyncio.to_thread(store.undo_redelivery, ctx.engine, event_id, event.attempts, previous)
        if isinstance(exc, WorkflowAlreadyStartedError):
            raise Conflict(
                f"the last delivery of webhook event {event_id} is still ending: try again in a few seconds"
            ) from exc
        raise


ENDING_SECONDS = 10.0  # how long a retry waits for the failed run it follows to end
REPLAY_AT_MOST = 500  # failed events one replay retries (the rest: the next replay)
REPLAY_AT_ONCE = 8  # deliveries started at the same time


@dataclass(frozen=True)
class Replayed:
    started: list[str]  # the events whose delivery started again
    refused: dict[str, str]  # event id -> why not (it changed meanwhile, Temporal refused)
    more: bool  # more failed events than REPLAY_AT_MOST in the range


async def replay_failed(
    ctx: Context,
    actor: Actor,
    org_id: str,
    date_from: str | None,
    date_to: str | None,
    reason: str | None = None,
    endpoint_id: str | None = None,
) -> Replayed:
    """Deliver again every failed event of the organization (for one endpoint when given) made on
    the UTC days ``date_from`` to ``date_to`` (at most ``REPLAY_AT_MOST``, oldest first), each as
    ``redeliver`` retries one, with its ``WEBHOOK_REDELIVERY`` record."""
    try:
        since, until = day_range(date_from, date_to)
    except ValueError as exc:
        raise Invalid(str(exc)) from exc
    if since is None or until is None:
        raise Invalid("give the first and the last day (dateFrom, dateTo)")
    found = await asyncio.to_thread(
        store.failed_between, ctx.engine, org_id, since, until, REPLAY_AT_MOST + 1, endpoint_id
    )
    wanted, more = found[:REPLAY_AT_MOST], len(found) > REPLAY_AT_MOST
    gate = asyncio.Semaphore(REPLAY_AT_ONCE)
    refused: dict[str, str] = {}

    async def one(event_id: str) -> None:
        async with gate:
            try:
                await redeliver(ctx, actor, org_id, event_id, "retry", reason)
            except Conflict as exc:
                refused[event_id] = str(exc)

    await asyncio.gather(*(one(e) for e in wanted))
    return Replayed([e for e in wanted if e not in refused], refused, more)


def retryable(ctx: Context, actor: Actor, event_id: str) -> WebhookEvent:
    """The failed event to deliver again; ``Conflict`` for one pending or delivered."""
    try:
        event = store.get_event(ctx.engine, event_id)
    except orgs.NotFound as exc:
        raise NotFound(str(exc)) from exc
    if event.state != store.FAILED:
        raise Conflict(f"webhook event {event_id} is {event.state}: only a failed one is retried")
    return event


def redelivery_kind(event: WebhookEvent) -> str:
    """What delivering ``event`` once more is: ``retry`` for a failed one, ``resend`` for a
    delivered one; ``Conflict`` for one still pending (or skipped: there is no webhook)."""
    if event.state == store.FAILED:
        return "retry"
    if event.state == store.DELIVERED:
        return "resend"
    raise Conflict(
        f"webhook event {event.id} is {event.state}: only a failed one is retried, a delivered one resent"
    )


NOT_STARTED = "the delivery could not be started (Temporal did not take it)"


async def send_test_event(
    ctx: Context, actor: Actor, org_id: str, endpoint_id: str | None = None
) -> tuple[WebhookEvent, str]:
    """A ``test`` event with its delivery started (the event and the workflow id). When Temporal
    does not take the delivery, the event is marked failed (a retry sends it) and the error is
    raised: none is left pending without a workflow to deliver it."""
    event = await asyncio.to_thread(create_test_event, ctx, actor, org_id, endpoint_id)
    try:
        return event, await start_delivery(ctx, actor, event)
    except BaseException:
        await asyncio.to_thread(store.mark_failed, ctx.engine, event.id, NOT_STARTED)
        raise


async def start_delivery(ctx: Context, actor: Actor, event: WebhookEvent) -> str:
    """Start the event's delivery workflow (``webhook:<eventId>``); a failed one may start again,
    a running or delivered one never (WorkflowAlreadyStartedError)."""
    return await deliveries.start_delivery(ctx.client(), ctx.settings.task_queue, event)
