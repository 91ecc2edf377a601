"""Shared by the webhook tests: configuring an organization's webhook for a test receiver and
reading what the store recorded."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import Engine
from temporalio.client import Client, WorkflowHandle

from adapters.egress import EgressPolicy
from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.webhooks import start_delivery
from services import webhooks
from services.context import Context
from store import webhooks as store
from store.tables import WebhookEvent
from tests.support.webhook_receiver import ENCRYPTION_SECRET, SALT, SIGNATURE_SECRET, Receiver
from workflows.ids import webhook_workflow_id

# outside production: the test receivers listen on 127.0.0.1 over http
LOCAL = EgressPolicy(https_only=False, allow_loopback=True)


def configure(engine: Engine, cipher: SecretCipher, org_id: str, receiver: Receiver) -> None:
    store.set_config(
        engine,
        cipher,
        org_id,
        store.WebhookSettings(
            url=receiver.url,
            signature_secret=SIGNATURE_SECRET,
            encryption_secret=ENCRYPTION_SECRET,
            salt=SALT,
        ),
        LOCAL,
        actor="operator:tests",
    )


async def deliver(client: Client, queue: str, event: WebhookEvent) -> WorkflowHandle[Any, Any]:
    workflow_id = await start_delivery(client, queue, event)
    assert workflow_id == webhook_workflow_id(event.id) == f"webhook:{event.id}"
    return client.get_workflow_handle(workflow_id)


def events_of_request(engine: Engine, org_id: str, request_id: str) -> list[WebhookEvent]:
    return [e for e in store.list_events(engine, org_id, 1000) if e.request_id == request_id]


async def wait_for(predicate: Any, seconds: float = 20) -> None:
    for _ in range(int(seconds * 20)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


def create_test_event(engine: Engine, settings: Settings, org_id: str) -> WebhookEvent:
    """A ``test`` event as ``mandatum webhook test`` makes it (its delivery not started)."""
    ctx = Context(settings, engine, SecretCipher(settings.master_key_bytes()))
    return webhooks.create_test_event(ctx, Actor.shell_operator("tester"), org_id)
