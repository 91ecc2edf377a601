"""The integrator's ``mandate.revoked`` event of a mandate revoked by its last use (issue 31) or by
its subject in the portal (issue 32; the event's ``user`` is that subject).

The revocation is written in the verification's transaction (``store.limit_use``); the event is
made and its delivery started after the commit, off the verification's path: the API starts it at
once (``announce``), and the worker's pass (``announce_forever``) makes and starts what the API
did not (the API died between its commit and the start, Temporal was away). An event is made once
per mandate (its fact ``mandate.revoked:<mandateId>``) and its delivery started once
(``webhook:<eventId>``), however often either is tried.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from functools import partial

from sqlalchemy import Engine
from temporalio.client import Client

from core.settings import Settings
from orchestration import webhooks as deliveries
from store import limit_use, orgs, portal
from store import request_queries as queries
from store import webhooks as store
from store.db import utcnow
from store.tables import WebhookEvent
from wire.webhook_payloads import api_version_of, mandate_revoked_event

log = logging.getLogger("mandatum.services.limit_events")
LOOK_BACK = timedelta(days=7)  # how far back the worker's pass looks for an event not made


def create_event(
    engine: Engine, settings: Settings, org_id: str, request_id: str, credential_row: str
) -> list[WebhookEvent]:
    """The mandate's ``mandate.revoked`` event, made now or before, one per endpoint;
    none when it is gone."""
    bundle = queries.get_request(engine, org_id, request_id)
    found = [c for c in bundle.credentials if c.id == credential_row] if bundle is not None else []
    if bundle is None or not found or found[0].mandate_id is None:
        return []
    api_version = api_version_of(orgs.get_organization(engine, org_id).api_version)
    mandate_id = found[0].mandate_id
    # revoked in the portal (issue 32): the event's user is the subject its record names
    revoker = (
        portal.revoking_subject(engine, org_id, mandate_id)
        if found[0].revocation_reason == limit_use.SUBJECT
        else None
    )
    made = store.create_events(
        engine,
        org_id,
        limit_use.fact_key(found[0].mandate_id),
        limit_use.REVOKED_EVENT,
        request_id,
        lambda event_id, at: mandate_revoked_event(
            settings, bundle, api_version, event_id, at, credential_row, revoker
        ),
    )
    return [event for event, _ in made]


async def announce(
    engine: Engine, settings: Settings, client: Client, org_id: str, request_id: str, credential_row: str
) -> None:
    """Make the event and start its delivery; a failure is logged and left to the worker's pass."""
    await deliveries.start_made(
        client,
        settings.task_queue,
        partial(create_event, engine, settings, org_id, request_id, credential_row),
        log,
        f"the event of mandate {credential_row} revoked",
    )


async def announce_missed_once(engine: Engine, settings: Settings, client: Client) -> int:
    """Make and start the events the API did not; how many it tried."""
    now = utcnow()
    missed = await asyncio.to_thread(
        limit_use.unannounced, engine, now - LOOK_BACK, now - settings.reconcile_grace
    )
    for item in missed:
        await announce(engine, settings, client, item.organization_id, item.request_id, item.credential_row)
    return len(missed)


async def announce_forever(engine: Engine, settings: Settings, client: Client) -> None:
    await deliveries.every_interval(
        settings.reconcile_interval.total_seconds(),
        partial(announce_missed_once, engine, settings, client),
        log,
        "mandates revoked by their last use",
    )
