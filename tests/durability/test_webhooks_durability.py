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
from store import webhooks as store
from tests.support.durability import MASTER_KEY, IssuingWorker, Stack, retry_now, worker_settings
from tests.support.webhook_receiver import receiving
from tests.support.webhooks import configure, create_test_event, deliver
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
