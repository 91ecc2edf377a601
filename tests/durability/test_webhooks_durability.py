"""A worker process killed in the middle of a delivery loses nothing.

The real worker (``python -m worker``) dies abruptly (exit 137) at a crash point of the delivery
activity: before the POST, or after the receiver got it but before the outcome was written. A
normally started worker then finishes the delivery: the event is delivered, with the same
Webhook-Id on every POST (after the POST, the receiver saw it twice: at least once, deduplicated
by Webhook-Id, as the docs tell integrators).
Stacks are built as in tests/durability/test_durability.py (fixture ``stack``: tests/support/durability.py).
"""

from __future__ import annotations

import asyncio
import base64

import pytest

from core.secretbox import SecretCipher
from orchestration.temporal import request_handle, start_request_workflow
from store import webhooks as store
from tests.support.durability import MASTER_KEY, IssuingWorker, Stack, retry_now, worker_settings
from tests.support.journey_messages import journey_secrets
from tests.support.webhook_receiver import receiving
from tests.support.webhooks import configure, create_test_event, deliver, events_of_request
from tests.support.workflow import decide, insert_request, result_of
from workflows.ids import ActivityNames, webhook_workflow_id
from workflows.webhook_messages import DeliveryResult


@pytest.mark.parametrize("crash_at", ["webhook:before-post", "webhook:after-post"])
async def test_a_worker_killed_mid_delivery_loses_nothing(stack: Stack, crash_at: str) -> None:
    cipher = SecretCipher(base64.b64decode(MASTER_KEY))
    with receiving(lambda n: 200) as receiver:
        configure(stack.engine, cipher, stack.org.organization_id, receiver)
        event = create_test_event(stack.engine, worker_settings(stack), stack.org.organization_id)
        crashing = IssuingWorker(stack, "crashing", crash_at)
        try:
            handle = await deliver(stack.client, stack.queue, event)
            assert await crashing.exit_code(20) == 137, crashing.output()
        finally:
            crashing.stop()
        seen_before = receiver.count()
        lost = store.get_event(stack.engine, event.id)
        assert (lost.state, lost.attempts) == ("pending", 0)  # the dead attempt recorded nothing
        # the first attempt is a local activity (ADR 23): it died with the workflow task that ran
        # it, which runs again once that task times out; no activity is pending
        await retry_now(stack, handle, None)
        restarted = IssuingWorker(stack, "restarted")
        try:
            result = DeliveryResult.model_validate(await asyncio.wait_for(handle.result(), 40))
        finally:
            assert restarted.stop() == 0, restarted.output()
        got = list(receiver.deliveries)
    assert seen_before == (0 if crash_at == "webhook:before-post" else 1)
    assert result.state == "delivered"
    assert len(got) == seen_before + 1
    assert {d.webhook_id for d in got} == {event.id} and all(d.signature_ok for d in got)
    assert all(d.event == event.payload for d in got)
    final = store.get_event(stack.engine, event.id)
    assert (final.state, final.attempts, final.last_status) == ("delivered", 1, 200)


@pytest.mark.parametrize("crash_at", ["webhook:before-post", "webhook:after-post"])
async def test_a_worker_killed_in_the_requests_first_attempt_loses_nothing(
    stack: Stack, crash_at: str
) -> None:
    """Revision 2 (ADR 24): a decision's event is first tried by the request's workflow. A worker
    killed during that attempt leaves it pending until its timeout; the attempt then fails and the
    event's delivery workflow takes over with the retries, and delivers it with the same id."""
    cipher = SecretCipher(base64.b64decode(MASTER_KEY))
    with receiving(lambda n: 200) as receiver:
        configure(stack.engine, cipher, stack.org.organization_id, receiver)
        bundle = insert_request(stack.engine, stack.org.organization_id)
        assert await start_request_workflow(stack.client, stack.queue, bundle)
        handle = request_handle(stack.client, bundle.request.id)
        subject, credential = bundle.subjects[0][1].id, bundle.credentials[0].id
        box, keys = stack.var_dir / "outbox", journey_secrets(MASTER_KEY)  # the worker process's
        crashing = IssuingWorker(stack, "crashing", crash_at)
        try:
            decided = await decide(handle, subject, credential, True, outbox=box, secrets=keys)
            assert await crashing.exit_code(20) == 137, crashing.output()
        finally:
            crashing.stop()
        assert decided.request_status == "COMPLETED"  # answered before the attempt began
        [event] = events_of_request(stack.engine, stack.org.organization_id, bundle.request.id)
        seen_before = receiver.count()
        assert store.get_event(stack.engine, event.id).state == "pending"
        pending = (await handle.describe()).raw_description.pending_activities
        assert [p.activity_type.name for p in pending] == [ActivityNames.DELIVER_WEBHOOK]
        await retry_now(stack, handle, ActivityNames.DELIVER_WEBHOOK)
        restarted = IssuingWorker(stack, "restarted")
        try:
            assert (await asyncio.wait_for(result_of(handle), 40)).status == "COMPLETED"
            delivery = stack.client.get_workflow_handle(webhook_workflow_id(event.id))
            result = DeliveryResult.model_validate(await asyncio.wait_for(delivery.result(), 40))
        finally:
            assert restarted.stop() == 0, restarted.output()
        got = list(receiver.deliveries)
    assert seen_before == (0 if crash_at == "webhook:before-post" else 1)
    assert result.state == "delivered" and len(got) == seen_before + 1
    assert {d.webhook_id for d in got} == {event.id} and all(d.signature_ok for d in got)
    final = store.get_event(stack.engine, event.id)
    assert (final.state, final.last_status) == ("delivered", 200)
