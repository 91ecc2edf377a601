"""``mandatum webhook``: an organization's webhook endpoints and their settings, test events, the
delivery log, an event's attempts, retries and resends. Without ``--endpoint`` a command acts on
the organization's oldest endpoint: CONTRACT 7's one webhook.

State changes go through ``services.webhooks`` as the operator running the command, the same
functions the API and the dashboard call, and so do the listings. The commands that
start a delivery connect to Temporal first (``cli.common.with_temporal``).
"""

from __future__ import annotations

import json
from datetime import datetime
from types import ModuleType
from typing import Annotated

import typer

from cli.common import (
    JsonOpt,
    ReasonOpt,
    command_context,
    echo,
    emit,
    fail,
    finish,
    operator,
    reason_of,
    with_temporal,
)
from core.ids import is_object_id
from services.context import Context
from services.errors import Conflict, ServiceError
from store.tables import WebhookEvent

webhook_app = typer.Typer(
    help="Webhooks: settings per organization, test events, deliveries and their attempts, retries, resends.",
    no_args_is_help=True,
)


def _webhooks() -> ModuleType:
    """``services.webhooks``, imported on first use: with the Temporal client and the payload
    renderer it is heavy to load, and only these commands need it."""
    import services.webhooks

    return services.webhooks


def _support() -> ModuleType:
    """``services.operator_search`` (finding an event's organization), imported on first use likewise."""
    import services.operator_search

    return services.operator_search


OrgOpt = Annotated[str, typer.Option("--org", help="Organization id.")]


def _endpoint_id(value: str | None) -> str | None:
    if value is not None and not is_object_id(value):
        raise typer.BadParameter("an endpoint id is 24 lowercase hexadecimal characters")
    return value


EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        help="Endpoint id (see `endpoints`; omit: the organization's oldest endpoint).",
        callback=_endpoint_id,
    ),
]
DescriptionOpt = Annotated[
    str | None, typer.Option("--description", help="What the endpoint is for (at most 200 characters).")
]


@webhook_app.command("endpoints")
def webhook_endpoints(org: OrgOpt, as_json: JsonOpt = False) -> None:
    """The organization's endpoints, oldest first: id, URL (without its query), on or off, the
    event types each takes; never a secret."""
    found = _webhooks().endpoints(command_context(), org)
    if as_json:
        rows = [
            {
                "id": e.id,
                "url": _webhooks().shown_url(e.url),
                "description": e.description,
                "enabled": e.enabled,
                "eventTypes": e.event_types,
                "updatedAt": e.updated_at,
            }
            for e in found
        ]
        typer.echo(json.dumps(rows, indent=2, default=_json_value))
        return
    if not found:
        typer.echo(f"organization {org} has no webhook endpoint (events are stored, their delivery skipped)")
    for e in found:
        types = ",".join(e.event_types) if e.event_types is not None else "every type"
        echo(f"{e.id}  {'on' if e.enabled else 'off':<3}  {_webhooks().shown_url(e.url)}  {types}")


@webhook_app.command("add")
def webhook_add(
    org: OrgOpt,
    url: Annotated[
        str, typer.Option("--url", help="The receiver's URL (production: https, to a public address).")
    ],
    description: DescriptionOpt = None,
) -> None:
    """One more endpoint, with secrets of its own printed once. It gets its own copy of every
    event made from now on."""
    try:
        added = _webhooks().add_endpoint(command_context(), operator(), org, url, description)
    except ServiceError as exc:
        fail(str(exc))
    echo(f"endpoint {added.endpoint_id} of organization {org} added: {_webhooks().shown_url(url)}")
    emit(added.generated, False, "generated (shown once, keep them now):")


@webhook_app.command("remove")
def webhook_remove(
    org: OrgOpt,
    endpoint: Annotated[str, typer.Option("--endpoint", help="Endpoint id.", callback=_endpoint_id)],
) -> None:
    """Remove an endpoint: its events stay, the deliveries still to come to it are skipped."""
    try:
        _webhooks().remove_endpoint(command_context(), operator(), org, endpoint)
    except ServiceError as exc:
        fail(str(exc))
    echo(f"endpoint {endpoint} of organization {org} removed")


@webhook_app.command("set")
def webhook_set(
    org: OrgOpt,
    url: Annotated[
        str, typer.Option("--url", help="The receiver's URL (production: https, to a public address).")
    ],
    signature_secret: Annotated[
        str | None,
        typer.Option("--signature-secret", help="HMAC key of X-Signature (generated when new and omitted)."),
    ] = None,
    encryption_secret: Annotated[
        str | None,
        typer.Option("--encryption-secret", help="Base64 password of the AES key (generated if new)."),
    ] = None,
    salt: Annotated[
        str | None, typer.Option("--salt", help="PBKDF2 salt (generated when new and omitted).")
    ] = None,
    endpoint: EndpointOpt = None,
    description: DescriptionOpt = None,
) -> None:
    """Set the webhook (an endpoint). Omitted secrets keep their current value, or are generated for
    a new webhook and printed once (they are never shown again)."""
    try:
        generated = _webhooks().configure(
            command_context(),
            operator(),
            org,
            url,
            signature_secret,
            encryption_secret,
            salt,
            endpoint_id=endpoint,
            description=description,
        )
    except ServiceError as exc:
        fail(str(exc))
    echo(f"webhook of organization {org} set: {url}")
    if generated:
        emit(generated, False, "generated (shown once, keep them now):")


@webhook_app.command("receive")
def webhook_receive(
    org: OrgOpt,
    events: Annotated[
        str | None,
        typer.Option("--events", help="Comma-separated event types it takes (omit: every type)."),
    ] = None,
    off: Annotated[bool, typer.Option("--off", help="Turn the webhook off: events are skipped.")] = False,
    endpoint: EndpointOpt = None,
) -> None:
    """What the webhook receives: on (default) or off, every event type or those listed."""
    chosen = [t.strip() for t in events.split(",") if t.strip()] if events is not None else None
    try:
        _webhooks().set_delivery(command_context(), operator(), org, not off, chosen, endpoint)
    except ServiceError as exc:
        fail(str(exc))
    echo(
        f"webhook of organization {org}: {'off' if off else 'on'}, "
        + (", ".join(chosen) if chosen else "every event type")
    )


@webhook_app.command("rotate")
def webhook_rotate(
    org: OrgOpt,
    overlap_hours: Annotated[
        int,
        typer.Option(
            "--overlap-hours", help="How long the current secret keeps signing (X-Signature), 1 to 168."
        ),
    ] = 24,
    endpoint: EndpointOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A new signature secret, printed once. Until the overlap ends, X-Signature is still made with
    the current secret and X-Signature-Next with the new one (docs/webhooks.md)."""
    try:
        done = _webhooks().rotate_signature_secret(
            command_context(), operator(), org, overlap_hours, endpoint
        )
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {"signature_secret": done.signature_secret, "overlap_until": done.overlap_until.isoformat()},
        as_json,
        "new signature secret (shown once, keep it now):",
    )


@webhook_app.command("show")
def webhook_show(org: OrgOpt, endpoint: EndpointOpt = None, as_json: JsonOpt = False) -> None:
    """The webhook's URL and when it was set; never its secrets."""
    row = _webhooks().settings_row(command_context(), org, endpoint)
    if row is None:
        fail(f"organization {org} has no webhook (events are stored, their delivery skipped)")
    emit(
        {
            "organization": org,
            "endpoint": row.id,
            "url": row.url,
            "secrets": "set (not shown)",
            "updated_at": row.updated_at,
        },
        as_json,
        "webhook",
    )


@webhook_app.command("test")
def webhook_test(org: OrgOpt, endpoint: EndpointOpt = None) -> None:
    """Create a ``test`` event and start its delivery (see ``list`` for the outcome).

    Temporal is connected first: when it does not answer, no event is made; when it does not take
    the delivery, the event is marked failed (``retry`` sends it)."""

    async def send(ctx: Context) -> tuple[WebhookEvent, str]:
        sent: tuple[WebhookEvent, str] = await _webhooks().send_test_event(ctx, operator(), org, endpoint)
        return sent

    event, workflow_id = with_temporal(command_context(), send, f"send a test event to organization {org}")
    typer.echo(f"test event {event.id}: delivery started ({workflow_id})")
    finish()


EventArg = Annotated[str, typer.Argument(help="The event id (urn:via:event:…).")]


@webhook_app.command("retry")
def webhook_retry(event_id: EventArg) -> None:
    """Deliver a failed event again, with a fresh 3-day schedule."""
    ctx = command_context()
    try:
        event = _webhooks().retryable(ctx, operator(), event_id)
    except ServiceError as exc:
        fail(str(exc))

    async def start(ctx: Context) -> str:
        # imported here: the Temporal client is heavy to load, and only these commands need it
        from temporalio.exceptions import WorkflowAlreadyStartedError

        try:
            workflow_id: str = await _webhooks().start_delivery(ctx, operator(), event)
        except WorkflowAlreadyStartedError as exc:
            raise Conflict(
                f"the delivery of {event_id} is running or done: only a failed one is retried"
            ) from exc
        return workflow_id

    workflow_id = with_temporal(ctx, start, f"start the delivery of {event_id}")
    typer.echo(f"webhook event {event_id}: delivery started again ({workflow_id})")
    finish()


@webhook_app.command("replay")
def webhook_replay(
    org: OrgOpt,
    date_from: Annotated[str, typer.Option("--from", help="The first UTC day (YYYY-MM-DD).")],
    date_to: Annotated[str, typer.Option("--to", help="The last UTC day (YYYY-MM-DD).")],
    reason: ReasonOpt = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint", help="Only this endpoint's events (omit: every endpoint's).", callback=_endpoint_id
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Deliver again every failed event of the organization (of one endpoint when given) made on
    those days (at most 500 at a time, oldest first), each recorded as a retry with the reason."""
    why = reason_of(reason)
    ctx = command_context()

    async def replay(ctx: Context) -> dict[str, object]:
        done = await _webhooks().replay_failed(ctx, operator(), org, date_from, date_to, why, endpoint)
        return {"started": done.started, "refused": done.refused, "more": done.more}

    done = with_temporal(ctx, replay, f"replay the failed events of {date_from} to {date_to}")
    emit(done, as_json, f"{len(done['started'])} failed events delivered again.")  # type: ignore[arg-type]
    finish()


@webhook_app.command("resend")
def webhook_resend(event_id: EventArg, reason: ReasonOpt = None, as_json: JsonOpt = False) -> None:
    """Deliver an event once more: a failed one is retried, a delivered one resent.

    As the dashboard does: a resent event reaches the receiver with the same event id again.
    WEBHOOK_REDELIVERY names you, with the reason; when Temporal does not take the delivery, the
    event keeps the state it had."""
    why = reason_of(reason)
    ctx = command_context()
    try:
        event = _support().event(ctx, event_id)
        kind = _webhooks().redelivery_kind(event)
    except ServiceError as exc:
        fail(str(exc))

    async def redeliver(ctx: Context) -> str:
        workflow_id: str = await _webhooks().redeliver(
            ctx, operator(), event.organization_id, event_id, kind, why
        )
        return workflow_id

    workflow_id = with_temporal(ctx, redeliver, f"{kind} webhook event {event_id}")
    emit(
        {
            "eventId": event_id,
            "organizationId": event.organization_id,
            "kind": kind,
            "workflowId": workflow_id,
        },
        as_json,
        "Event retried: delivery started." if kind == "retry" else "Event resent: delivery started.",
    )
    finish()


@webhook_app.command("attempts")
def webhook_attempts(event_id: EventArg, as_json: JsonOpt = False) -> None:
    """Every attempt to deliver an event.

    When, the HTTP status or error, how long it took, and the URL it went to (without its query,
    where a receiver's token may sit)."""
    ctx = command_context()
    try:
        log = _webhooks().event_log(ctx, _support().event(ctx, event_id).organization_id, event_id)
    except ServiceError as exc:
        fail(str(exc))
    attempts = [
        {
            "number": a.number,
            "scheduledAt": a.scheduled_at,
            "finishedAt": a.finished_at,
            "status": a.status_code,
            "error": a.error,
            "durationMs": a.duration_ms,
            "url": a.url,
        }
        for a in log.attempts
    ]
    if as_json:
        emit({"event": _row(log.event), "attempts": attempts}, True, "")
        return
    e = log.event
    typer.echo(f"{e.id}  {e.event_type}  {e.state}  org {e.organization_id}  attempts {e.attempts}")
    if not attempts:
        typer.echo("  no attempt yet")
    for a in log.attempts:
        outcome = f"HTTP {a.status_code}" if a.status_code is not None else a.error or "-"
        took = f"{a.duration_ms} ms" if a.duration_ms is not None else "-"
        echo(f"  #{a.number}  {a.finished_at.isoformat()}  {outcome}  {took}  {a.url or '-'}")


def _json_value(value: object) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _row(event: WebhookEvent) -> dict[str, object]:
    return {
        "id": event.id,
        "eventType": event.event_type,
        "requestId": event.request_id,
        "endpointId": event.endpoint_id,
        "createdAt": event.created_at,
        "state": event.state,
        "attempts": event.attempts,
        "lastStatus": event.last_status,
        "lastError": event.last_error,
        "nextAttemptAt": event.next_attempt_at,
        "deliveredAt": event.delivered_at,
    }


@webhook_app.command("list")
def webhook_list(
    org: OrgOpt,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first.")] = 50,
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint", help="Only this endpoint's events (omit: every endpoint's).", callback=_endpoint_id
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The organization's events (of one endpoint when given), newest first, with the outcome of
    their delivery."""
    events = _webhooks().events(command_context(), org, limit, None, endpoint)
    if as_json:
        typer.echo(json.dumps([_row(e) for e in events], indent=2, default=_json_value))
        return
    if not events:
        typer.echo(f"no webhook events for organization {org}")
    for e in events:
        status = "" if e.last_status is None else f" last HTTP {e.last_status}"
        typer.echo(
            f"{e.id}  {e.event_type:<10}  {e.state:<9}  attempts {e.attempts}{status}"
            f"  {e.created_at.isoformat()}"
        )
