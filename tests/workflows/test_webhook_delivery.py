"""Delivery on the real Temporal dev server: retries until a 2xx, 410 stops at once, no webhook is
skipped; and the ``mandatum webhook`` command."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
from typing import Any

import pytest
from sqlalchemy import Engine
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle, start_request_workflow
from store import webhooks as store
from tests.conftest import MASTER_KEY
from tests.support.api_client import Credentials
from tests.support.cli import run_cli
from tests.support.sandboxed_delivery import SandboxedDelivery
from tests.support.webhook_receiver import ENCRYPTION_SECRET, SALT, SIGNATURE_SECRET, receiving
from tests.support.webhooks import LOCAL, configure, create_test_event, deliver, events_of_request
from tests.support.workflow import decide, insert_request, result_of
from workflows.ids import webhook_workflow_id
from workflows.webhook_delivery import WebhookDeliveryWorkflow
from workflows.webhook_messages import DeliveryResult


async def replays_alike(handle: WorkflowHandle[Any, Any]) -> None:
    """The delivery workflow runs unsandboxed (workflows/webhook_delivery.py says why): its history
    replays on its code, and in Temporal's sandbox too, which refuses non-deterministic calls."""
    history = await handle.fetch_history()
    for defined in (WebhookDeliveryWorkflow, SandboxedDelivery):
        replayer = Replayer(workflows=[defined], data_converter=pydantic_data_converter)
        assert (await replayer.replay_workflow(history)).replay_failure is None, defined


def _real_time_on_sqlite_only(db_url: str) -> None:
    """Tests that wait for real retry delays or run the command line several times run once, on
    SQLite: what they prove does not depend on the database, and the store functions they use
    are tested on PostgreSQL elsewhere (the suite has a time budget)."""
    if not db_url.startswith("sqlite"):
        pytest.skip("runs on SQLite only: real-time waits and the command line, the same on every database")


async def test_500s_then_200_is_delivered_once_with_one_webhook_id(
    temporal: Client,
    worker: None,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
    db_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _real_time_on_sqlite_only(db_url)
    caplog.set_level(logging.INFO)
    with receiving(lambda n: 500 if n <= 2 else 200) as receiver:
        configure(engine, cipher, org.organization_id, receiver)
        event = create_test_event(engine, settings, org.organization_id)
        handle = await deliver(temporal, settings.task_queue, event)
        result = DeliveryResult.model_validate(await asyncio.wait_for(handle.result(), 60))
        await asyncio.sleep(1)  # nothing else arrives
        got = list(receiver.deliveries)
    assert (result.state, result.status_code) == ("delivered", 200)
    assert len(got) == 3
    assert {d.webhook_id for d in got} == {event.id}
    assert all(d.signature_ok and d.content_type == "application/json" for d in got)
    assert {d.headers.get("User-Agent") for d in got} == {"Mandatum-Webhooks/0.1.0"}
    assert all(d.event == event.payload and d.key_order == ["iv", "data", "tag"] for d in got)
    assert len({d.raw_body for d in got}) == 3  # a fresh IV per attempt
    first_gap = got[1].received_at - got[0].received_at
    second_gap = got[2].received_at - got[1].received_at
    assert 4 <= first_gap <= 9 and 9 <= second_gap <= 16, (first_gap, second_gap)  # 5 s, then 10 s
    assert event.payload["eventType"] == "test" and event.payload["id"] == event.id
    assert event.id.startswith("urn:via:event:") and event.payload["message"]
    stored = store.get_event(engine, event.id)
    assert (stored.state, stored.attempts, stored.last_status) == ("delivered", 3, 200)
    assert stored.last_error is None
    assert stored.delivered_at is not None and stored.next_attempt_at is None
    # each attempt's recorded time is when the server had it due: the moment the receiver saw it
    for attempt, delivery in zip(store.attempts_of(engine, event.id), got, strict=True):
        assert abs(attempt.scheduled_at.timestamp() - delivery.received_at) < 1.5
    assert [(a.number, a.status_code) for a in store.attempts_of(engine, event.id)] == [
        (1, 500),
        (2, 500),
        (3, 200),
    ]
    # a receiver's routine failure is one line each for the operator, never a stack trace
    ours = [
        r for r in caplog.records if r.name == "mandatum.activities.webhooks" and event.id in r.getMessage()
    ]
    assert [r.getMessage().split(": HTTP")[0] for r in ours] == [
        f"webhook event {event.id} not delivered (attempt {n})" for n in (1, 2)
    ]
    assert all("HTTP 500 from 127.0.0.1" in r.getMessage() and r.exc_info is None for r in ours)
    traces = [r for r in caplog.records if r.levelno >= logging.WARNING and r.exc_info is not None]
    assert traces == [], [r.getMessage() for r in traces]
    await replays_alike(handle)


async def _decided_with(temporal: Client, settings: Settings, engine: Engine, org_id: str) -> tuple[str, str]:
    """A request decided (accepted): its id, and its ``credential`` event's id once made."""
    bundle = insert_request(engine, org_id)
    assert await start_request_workflow(temporal, settings.task_queue, bundle)
    handle = request_handle(temporal, bundle.request.id)
    await decide(handle, bundle.subjects[0][1].id, bundle.credentials[0].id)
    assert (await result_of(handle)).status == "COMPLETED"  # it ends once its first attempt answered
    [event] = events_of_request(engine, org_id, bundle.request.id)
    return bundle.request.id, event.id


@pytest.mark.parametrize("first", ["delivery", "request"])
async def test_410_stops_at_once(
    temporal: Client,
    worker: None,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
    first: str,
) -> None:
    """One POST, by the delivery workflow, or by the request's workflow (a decision's event on
    revision 2, ADR 24), after which the delivery workflow fails at once without one of its own."""
    with receiving(lambda n: 410) as receiver:
        configure(engine, cipher, org.organization_id, receiver)
        if first == "delivery":
            event = create_test_event(engine, settings, org.organization_id)
            handle = await deliver(temporal, settings.task_queue, event)
            event_id = event.id
        else:
            _, event_id = await _decided_with(temporal, settings, engine, org.organization_id)
            handle = temporal.get_workflow_handle(webhook_workflow_id(event_id))
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), 30)
        # the delivery workflow has ended: no attempt can follow the first one
        assert receiver.count() == 1
    stored = store.get_event(engine, event_id)
    assert (stored.state, stored.attempts, stored.last_status) == ("failed", 1, 410)
    assert stored.last_error is not None and "410" in stored.last_error
    assert stored.next_attempt_at is None and stored.delivered_at is None
    await replays_alike(handle)


async def test_without_a_webhook_the_event_is_kept_and_skipped(
    temporal: Client,
    worker: None,
    engine: Engine,
    settings: Settings,
    org: Credentials,
) -> None:
    event = create_test_event(engine, settings, org.organization_id)
    handle = await deliver(temporal, settings.task_queue, event)
    result = DeliveryResult.model_validate(await asyncio.wait_for(handle.result(), 30))
    assert result.state == "skipped"
    stored = store.get_event(engine, event.id)
    assert (stored.state, stored.attempts) == ("skipped", 0)
    assert store.get_config(engine, SecretCipher(settings.master_key_bytes()), org.organization_id) is None


def test_settings_are_checked_and_secrets_stored_encrypted(
    engine: Engine,
    cipher: SecretCipher,
    org: Credentials,
) -> None:
    good = store.WebhookSettings("https://hooks.example.test/x", SIGNATURE_SECRET, ENCRYPTION_SECRET, SALT)
    for bad in [
        store.WebhookSettings("ftp://x", SIGNATURE_SECRET, ENCRYPTION_SECRET, SALT),
        store.WebhookSettings(good.url, SIGNATURE_SECRET, "not base64!", SALT),
        store.WebhookSettings(good.url, "", ENCRYPTION_SECRET, SALT),
        store.WebhookSettings(good.url, SIGNATURE_SECRET, ENCRYPTION_SECRET, ""),
    ]:
        with pytest.raises(ValueError):
            store.set_config(engine, cipher, org.organization_id, bad, LOCAL, actor="operator:tests")
    store.set_config(engine, cipher, org.organization_id, good, LOCAL, actor="operator:tests")
    row = store.config_row(engine, org.organization_id)
    assert row is not None and SIGNATURE_SECRET.encode() not in row.signature_secret_ciphertext
    assert ENCRYPTION_SECRET.encode() not in row.encryption_secret_ciphertext
    assert store.get_config(engine, cipher, org.organization_id) == good


def _cli(settings: Settings, temporal: Client, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
    env.update(
        MANDATUM_DATABASE_URL=settings.sqlalchemy_url,
        MANDATUM_MASTER_KEY=MASTER_KEY,
        MANDATUM_VAR_DIR=str(settings.var_dir),
        MANDATUM_PUBLIC_URL=settings.public_url,
        MANDATUM_ENVIRONMENT="test",
        MANDATUM_TASK_QUEUE=settings.task_queue,
        MANDATUM_TEMPORAL_ADDRESS=temporal.service_client.config.target_host,
    )
    return run_cli(["webhook", *args], env)


async def test_the_webhook_command(
    temporal: Client,
    worker: None,
    engine: Engine,
    settings: Settings,
    org: Credentials,
    db_url: str,
) -> None:
    _real_time_on_sqlite_only(db_url)
    org_id = org.organization_id
    shown = _cli(settings, temporal, "show", "--org", org_id)
    assert shown.returncode == 1 and "no webhook" in shown.stderr
    made = _cli(settings, temporal, "set", "--org", org_id, "--url", "https://hooks.example.test/a")
    assert made.returncode == 0, made.stderr
    assert "signature secret" in made.stdout and "encryption secret" in made.stdout
    with receiving(lambda n: 200) as receiver:
        done = _cli(
            settings,
            temporal,
            "set",
            "--org",
            org_id,
            "--url",
            receiver.url,
            "--signature-secret",
            SIGNATURE_SECRET,
            "--encryption-secret",
            ENCRYPTION_SECRET,
            "--salt",
            SALT,
        )
        assert done.returncode == 0, done.stderr
        assert "generated" not in done.stdout
        shown = _cli(settings, temporal, "show", "--org", org_id, "--json")
        assert json.loads(shown.stdout)["url"] == receiver.url
        assert SIGNATURE_SECRET not in shown.stdout and ENCRYPTION_SECRET not in shown.stdout
        assert SALT not in shown.stdout
        sent = _cli(settings, temporal, "test", "--org", org_id)
        assert sent.returncode == 0, sent.stderr
        event_id = sent.stdout.split()[2].rstrip(":")
        await asyncio.wait_for(temporal.get_workflow_handle(f"webhook:{event_id}").result(), 30)
        [delivery] = receiver.deliveries
    assert delivery.signature_ok and delivery.webhook_id == event_id
    assert delivery.event is not None and delivery.event["eventType"] == "test"
    listed = json.loads(_cli(settings, temporal, "list", "--org", org_id, "--json").stdout)
    assert [(e["id"], e["state"], e["attempts"], e["lastStatus"]) for e in listed] == [
        (event_id, "delivered", 1, 200)
    ]
    again = _cli(settings, temporal, "retry", event_id)
    assert again.returncode == 1 and "only a failed one is retried" in again.stderr


async def test_a_failed_first_attempt_in_the_request_goes_on_in_the_delivery_workflow(
    temporal: Client,
    worker: None,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
    db_url: str,
) -> None:
    """Revision 2 (ADR 24): the request's workflow makes the first attempt; a 500 starts the
    event's delivery workflow, which retries 5 s after that attempt began, numbering on."""
    _real_time_on_sqlite_only(db_url)
    with receiving(lambda n: 500 if n == 1 else 200) as receiver:
        configure(engine, cipher, org.organization_id, receiver)
        _, event_id = await _decided_with(temporal, settings, engine, org.organization_id)
        handle = temporal.get_workflow_handle(webhook_workflow_id(event_id))
        result = DeliveryResult.model_validate(await asyncio.wait_for(handle.result(), 30))
        got = list(receiver.deliveries)
    assert (result.state, result.status_code) == ("delivered", 200)
    assert [d.webhook_id for d in got] == [event_id] * 2 and all(d.signature_ok for d in got)
    assert 4 <= got[1].received_at - got[0].received_at <= 9  # the first retry's 5 s
    started = (await handle.fetch_history()).events[0].workflow_execution_started_event_attributes
    told = json.loads(started.input.payloads[0].data)
    assert (told["first_attempt"], told["attempts_before"]) == ("failed", 0)
    assert [(a.number, a.status_code) for a in store.attempts_of(engine, event_id)] == [(1, 500), (2, 200)]
    stored = store.get_event(engine, event_id)
    assert (stored.state, stored.attempts, stored.last_status) == ("delivered", 2, 200)
    await replays_alike(handle)
