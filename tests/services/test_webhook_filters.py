"""What a webhook receives (issue 34): turned off, every event is skipped and says why; with a
choice of types, the others are skipped and the chosen delivered (a test event always); the choice
is checked and recorded before and after. Deliveries by the real worker to a real receiver."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import webhooks
from services.context import Context
from services.errors import Invalid, NotFound
from store import webhooks as store
from store.tables import WebhookEvent
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import changes
from tests.support.webhook_receiver import receiving

OWNER = Actor.member("6b0a00000000000000000003")


@pytest.fixture
def live_ctx(
    settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client, worker: None
) -> Context:
    return Context(settings, engine, cipher, temporal)


def _event(ctx: Context, org_id: str, event_type: str) -> WebhookEvent:
    """An event of ``event_type`` (the test event's payload, retyped: only the type matters here)."""
    event = webhooks.create_test_event(ctx, OWNER, org_id)
    if event_type != "test":
        event, _ = store.create_event(
            ctx.engine, org_id, f"{event_type}:filters:{event.id}", event_type, None, lambda i, at: {"id": i}
        )
    return event


async def _settled(engine: Engine, event_id: str) -> WebhookEvent:
    for _ in range(400):
        found = store.get_event(engine, event_id)
        if found.state != store.PENDING:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{event_id} did not settle")


async def test_off_skips_everything_and_a_choice_skips_the_rest(
    live_ctx: Context, org: Credentials, engine: Engine
) -> None:
    with receiving(lambda n: 200) as receiver:
        webhooks.configure(live_ctx, OWNER, org.organization_id, receiver.url)
        webhooks.set_delivery(live_ctx, OWNER, org.organization_id, False, None)
        off = _event(live_ctx, org.organization_id, "credential")
        await webhooks.start_delivery(live_ctx, OWNER, off)
        skipped = await _settled(engine, off.id)
        assert (skipped.state, skipped.last_error) == ("skipped", "the webhook is turned off")

        webhooks.set_delivery(live_ctx, OWNER, org.organization_id, True, ["identity", "credential"])
        taken, other, test = (
            _event(live_ctx, org.organization_id, kind) for kind in ("credential", "otp.failed", "test")
        )
        for event in (taken, other, test):
            await webhooks.start_delivery(live_ctx, OWNER, event)
        states = [(await _settled(engine, e.id)) for e in (taken, other, test)]
        assert [s.state for s in states] == ["delivered", "skipped", "delivered"]
        assert states[1].last_error == "the webhook does not take otp.failed events"
        assert {d.webhook_id for d in receiver.deliveries} == {taken.id, test.id}
    kept = store.get_config(engine, live_ctx.cipher, org.organization_id)
    assert kept is not None and kept.event_types == ("credential", "identity")  # in the docs' order
    [*_, last] = changes(engine, org.organization_id)
    assert last.data["enabled"] is True and last.data["eventTypes"] == ["credential", "identity"]
    assert last.data["previous"] == {"enabled": False, "eventTypes": None}


async def test_the_choice_is_checked(
    live_ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    org = new_org(engine, cipher, settings)
    with pytest.raises(NotFound):
        webhooks.set_delivery(live_ctx, OWNER, org.organization_id, True, None)
    webhooks.configure(live_ctx, OWNER, org.organization_id, "https://hooks.example.com/x")
    with pytest.raises(Invalid, match="an event type is one of credential"):
        webhooks.set_delivery(live_ctx, OWNER, org.organization_id, True, ["credential", "everything"])
    with pytest.raises(Invalid, match="at least one event type"):
        webhooks.set_delivery(live_ctx, OWNER, org.organization_id, True, [])
