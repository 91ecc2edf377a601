"""Replaying the failed webhook events of a range of days (issue 34): each failed event made on
those UTC days is delivered again (by the real worker, to a real receiver), recorded as a retry by
the actor; events of other days, and delivered ones, are left as they are; the range is checked."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, update
from sqlmodel import col
from temporalio.client import Client

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import webhooks
from services.context import Context
from services.errors import Invalid
from store import audit
from store import webhooks as store
from store.db import write_session
from store.tables import WebhookEvent
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.webhook_receiver import receiving

SUPPORT = Actor.member("6b0a00000000000000000002")


@pytest.fixture
def live_ctx(
    settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client, worker: None
) -> Context:
    return Context(settings, engine, cipher, temporal)


def _failed_on(ctx: Context, org_id: str, day: datetime) -> str:
    event = webhooks.create_test_event(ctx, SUPPORT, org_id)
    store.mark_failed(ctx.engine, event.id, "HTTP 500")
    with write_session(ctx.engine) as session:
        session.execute(update(WebhookEvent).where(col(WebhookEvent.id) == event.id).values(created_at=day))
    return event.id


async def test_the_failed_events_of_those_days_are_delivered_again(
    live_ctx: Context, org: Credentials, engine: Engine
) -> None:
    with receiving(lambda n: 200) as receiver:
        webhooks.configure(live_ctx, SUPPORT, org.organization_id, receiver.url)
        first = _failed_on(live_ctx, org.organization_id, datetime(2026, 11, 2, 9, 0, tzinfo=UTC))
        second = _failed_on(live_ctx, org.organization_id, datetime(2026, 11, 3, 23, 59, tzinfo=UTC))
        before = _failed_on(live_ctx, org.organization_id, datetime(2026, 11, 1, 23, 59, tzinfo=UTC))
        after = _failed_on(live_ctx, org.organization_id, datetime(2026, 11, 4, 0, 0, tzinfo=UTC))

        done = await webhooks.replay_failed(
            live_ctx, SUPPORT, org.organization_id, "2026-11-02", "2026-11-03", "outage"
        )

        assert (sorted(done.started), done.refused, done.more) == (sorted([first, second]), {}, False)
        for _ in range(400):
            if {d.webhook_id for d in receiver.deliveries} >= {first, second}:
                break
            await asyncio.sleep(0.05)
        assert {d.webhook_id for d in receiver.deliveries} == {first, second}
    for _ in range(200):
        if all(store.get_event(engine, e).state == store.DELIVERED for e in (first, second)):
            break
        await asyncio.sleep(0.05)
    assert [store.get_event(engine, e).state for e in (first, second, before, after)] == [
        "delivered",
        "delivered",
        "failed",
        "failed",
    ]
    records = [r for r in chain(engine, org.organization_id) if r.type == audit.WEBHOOK_REDELIVERY]
    assert sorted(r.data["eventId"] for r in records) == sorted([first, second])
    assert {(r.actor, r.data["kind"], r.data["reason"]) for r in records} == {
        (str(SUPPORT), "retry", "outage")
    }
    again = await webhooks.replay_failed(live_ctx, SUPPORT, org.organization_id, "2026-11-02", "2026-11-03")
    assert again.started == []  # nothing failed left on those days


@pytest.mark.parametrize(
    ("date_from", "date_to", "why"),
    [
        ("", "2026-11-03", "dateTo requires dateFrom"),
        ("2026-11-03", "2026-11-02", "dateTo must not be before dateFrom"),
        ("yesterday", "2026-11-02", "dateFrom must be an ISO 8601 date"),
        ("2026-11-02", "", "give the first and the last day"),
    ],
)
async def test_a_range_that_is_not_one_is_refused(
    live_ctx: Context, org: Credentials, date_from: str, date_to: str, why: str
) -> None:
    with pytest.raises(Invalid, match=why):
        await webhooks.replay_failed(
            live_ctx, SUPPORT, org.organization_id, date_from or None, date_to or None
        )
