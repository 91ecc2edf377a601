"""``mandatum webhook``: an organization's webhook settings, test events, the delivery log, retries.

State changes go through ``services.webhooks`` as the operator running the command, the same
functions the API and the dashboard call; the listings read ``store.webhooks``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import datetime
from types import ModuleType
from typing import Annotated

import typer

from cli.common import JsonOpt, context, emit, fail, operator, services_context
from core.settings import Settings
from services.errors import ServiceError
from store import webhooks as store
from store.tables import WebhookEvent

webhook_app = typer.Typer(
    help="Webhooks: settings per organization, test events, deliveries, retries.", no_args_is_help=True
)


def _webhooks() -> ModuleType:
    """``services.webhooks``, imported on first use: with the Temporal client and the payload
    renderer it is heavy to load, and only these commands need it."""
    import services.webhooks

    return services.webhooks


OrgOpt = Annotated[str, typer.Option("--org", help="Organization id.")]


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
) -> None:
    """Set the webhook. Omitted secrets keep their current value, or are generated for a new webhook
    and printed once (they are never shown again)."""
    try:
        generated = _webhooks().configure(
            services_context(), operator(), org, url, signature_secret, encryption_secret, salt
        )
    except ServiceError as exc:
        fail(str(exc))
    typer.echo(f"webhook of organization {org} set: {url}")
    if generated:
        emit(generated, False, "generated (shown once, keep them now):")


@webhook_app.command("show")
def webhook_show(org: OrgOpt, as_json: JsonOpt = False) -> None:
    """The webhook's URL and when it was set; never its secrets."""
    _, engine, _ = context()
    row = store.config_row(engine, org)
    if row is None:
        fail(f"organization {org} has no webhook (events are stored, their delivery skipped)")
    emit(
        {"organization": org, "url": row.url, "secrets": "set (not shown)", "updated_at": row.updated_at},
        as_json,
        "webhook",
    )


def _started(settings: Settings, event_id: str) -> str:
    # imported here: the Temporal client is heavy to load, and only test and retry need it
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from orchestration.temporal import build_client

    async def start() -> str:
        ctx = services_context()
        ctx.temporal = await build_client(settings)
        return await _webhooks().start_delivery(ctx, operator(), event_id)

    try:
        return asyncio.run(start())
    except WorkflowAlreadyStartedError:
        fail(f"the delivery of {event_id} is running or done: only a failed one is retried")
    except RuntimeError as exc:  # Temporal unreachable
        fail(f"cannot start the delivery of {event_id}: {exc}")


def _done(message: str) -> None:
    """Print and end the process at once. The Temporal client's native threads can abort the
    interpreter's finalization now and then (``PyGILState_Release`` ... ``finalizing``, exit -6)
    after the work is done; leaving without finalization keeps the exit status true."""
    typer.echo(message)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@webhook_app.command("test")
def webhook_test(org: OrgOpt) -> None:
    """Create a ``test`` event and start its delivery (see ``list`` for the outcome)."""
    ctx = services_context()
    settings = ctx.settings
    try:
        event = _webhooks().create_test_event(ctx, operator(), org)
    except ServiceError as exc:
        fail(str(exc))
    _done(f"test event {event.id}: delivery started ({_started(settings, event.id)})")


@webhook_app.command("retry")
def webhook_retry(event_id: Annotated[str, typer.Argument(help="The event id (urn:via:event:…).")]) -> None:
    """Deliver a failed event again, with a fresh 3-day schedule."""
    ctx = services_context()
    settings = ctx.settings
    try:
        _webhooks().retryable(ctx, operator(), event_id)
    except ServiceError as exc:
        fail(str(exc))
    _done(f"webhook event {event_id}: delivery started again ({_started(settings, event_id)})")


def _json_value(value: object) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _row(event: WebhookEvent) -> dict[str, object]:
    return {
        "id": event.id,
        "eventType": event.event_type,
        "requestId": event.request_id,
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
    as_json: JsonOpt = False,
) -> None:
    """The organization's events, newest first, with the outcome of their delivery."""
    _, engine, _ = context()
    events = store.list_events(engine, org, limit)
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
