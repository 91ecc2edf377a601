"""services.webhooks: configure, a ``test`` event delivered through its workflow, a retry refused
for an event that did not fail; each by a named actor."""

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
from services.errors import Conflict, Invalid, NotFound
from store import webhooks as store
from tests.support.api_client import Credentials
from tests.support.webhook_receiver import ENCRYPTION_SECRET, SALT, SIGNATURE_SECRET, receiving
from workflows.ids import SA_EVENT_TYPE, SA_ORGANIZATION, SA_REQUEST

ERIN = Actor.shell_operator("erin")


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal)


def test_configuring_generates_only_the_missing_secrets_and_checks_the_url(
    ctx: Context, cipher: SecretCipher, engine: Engine, org: Credentials
) -> None:
    generated = webhooks.configure(
        ctx, ERIN, org.organization_id, "http://127.0.0.1:9/h", signature_secret="s" * 32
    )
    assert set(generated) == {"encryption secret", "salt"}
    kept = store.get_config(engine, cipher, org.organization_id)
    assert kept is not None and kept.signature_secret == "s" * 32
    assert webhooks.configure(ctx, ERIN, org.organization_id, "http://127.0.0.1:9/other") == {}
    with pytest.raises(Invalid):
        webhooks.configure(ctx, ERIN, org.organization_id, "ftp://example.com/h")
    with pytest.raises(NotFound):
        webhooks.configure(ctx, ERIN, "0" * 24, "http://127.0.0.1:9/h")


@pytest.mark.usefixtures("worker")
async def test_a_test_event_is_delivered_and_a_delivered_event_is_not_retried(
    ctx: Context, engine: Engine, org: Credentials
) -> None:
    with receiving(lambda n: 200) as receiver:
        webhooks.configure(
            ctx, ERIN, org.organization_id, receiver.url, SIGNATURE_SECRET, ENCRYPTION_SECRET, SALT
        )
        event = webhooks.create_test_event(ctx, ERIN, org.organization_id)
        workflow_id = await webhooks.start_delivery(ctx, ERIN, event)
        for _ in range(200):
            if store.get_event(engine, event.id).state == store.DELIVERED:
                break
            await asyncio.sleep(0.05)
        assert store.get_event(engine, event.id).state == store.DELIVERED
        # operators filter deliveries by organization and type (a test event is of no request)
        found = (await ctx.client().get_workflow_handle(workflow_id).describe()).typed_search_attributes
        assert (found.get(SA_ORGANIZATION), found.get(SA_EVENT_TYPE), found.get(SA_REQUEST)) == (
            org.organization_id,
            "test",
            None,
        )
        assert receiver.count() == 1 and receiver.deliveries[0].event is not None
        assert receiver.deliveries[0].event["eventType"] == "test"
    with pytest.raises(Conflict, match="only a failed one is retried"):
        webhooks.retryable(ctx, ERIN, event.id)
    with pytest.raises(NotFound):
        webhooks.retryable(ctx, ERIN, "urn:via:event:00000000-0000-4000-8000-000000000000")


async def test_a_test_event_whose_delivery_temporal_does_not_take_is_marked_failed(
    settings: Settings, engine: Engine, cipher: SecretCipher, org: Credentials
) -> None:
    offline = Context(settings, engine, cipher)  # no client: starting the delivery fails
    with pytest.raises(RuntimeError, match="not connected"):
        await webhooks.send_test_event(offline, ERIN, org.organization_id)
    [event] = store.list_events(engine, org.organization_id)
    assert event.state == store.FAILED and event.last_error == webhooks.NOT_STARTED
