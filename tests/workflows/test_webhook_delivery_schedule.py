"""The retry schedule over 3 days, on the time-skipping server: a receiver that never answers 2xx
sees attempts 5 s apart at first, doubling up to 4 h, until 3 days have passed; then the event is
``failed`` in the store, and a retry (the path of ``mandatum webhook retry``) delivers it."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from itertools import pairwise

import pytest
from sqlalchemy import Engine
from temporalio.client import WorkflowFailureError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.testing import WorkflowEnvironment

from core.secretbox import SecretCipher
from core.settings import Settings
from store import webhooks as store
from tests.support.api_client import Credentials
from tests.support.webhook_receiver import receiving
from tests.support.webhooks import configure, create_test_event, deliver
from worker import build_worker
from workflows.webhook_delivery import DELIVERY_RETRY
from workflows.webhook_messages import DeliveryResult, retry_delay

HOUR = 3600.0


def test_the_policy_numbers() -> None:
    assert DELIVERY_RETRY.initial_interval == timedelta(seconds=5)
    assert DELIVERY_RETRY.backoff_coefficient == 2.0
    assert DELIVERY_RETRY.maximum_interval == timedelta(hours=4)
    assert DELIVERY_RETRY.maximum_attempts == 0
    assert [retry_delay(n).total_seconds() for n in (1, 2, 3, 12, 13, 40)] == [
        5,
        10,
        20,
        10240,
        4 * HOUR,
        4 * HOUR,
    ]


async def test_attempts_spread_over_three_days_then_failed_then_retried(
    ts_env: WorkflowEnvironment,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
) -> None:
    queue = f"mandatum-webhooks-{uuid.uuid4().hex[:8]}"
    succeed = False
    with receiving(lambda n: 200 if succeed else 503) as receiver, ThreadPoolExecutor(max_workers=4) as pool:
        configure(engine, cipher, org.organization_id, receiver)
        event = create_test_event(engine, settings, org.organization_id)
        async with build_worker(ts_env.client, engine, queue, pool, settings):
            handle = await deliver(ts_env.client, queue, event)
            with pytest.raises(WorkflowFailureError):
                async with ts_env.time_skipping_unlocked():  # type: ignore[attr-defined]
                    await handle.result()
            failed = store.get_event(engine, event.id)
            attempts = store.attempts_of(engine, event.id)
            received = receiver.count()

            succeed = True
            handle = await deliver(ts_env.client, queue, event)  # `mandatum webhook retry`
            async with ts_env.time_skipping_unlocked():  # type: ignore[attr-defined]
                result = DeliveryResult.model_validate(await handle.result())
            with pytest.raises(WorkflowAlreadyStartedError):  # a delivered event is never re-sent
                await ts_env.client.start_workflow(
                    "WebhookDelivery",
                    {"event_id": event.id},
                    id=handle.id,
                    task_queue=queue,
                    id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
                )
        got = list(receiver.deliveries)

    # The schedule, in Temporal's (skipped) time. Attempt 1 is a local activity and attempt 2 the
    # activity's first, after a 5 s workflow timer: that wait is the gap from row 1 to row 2. The
    # time-skipping server stamps an activity retry's scheduled time when it schedules it (at the
    # previous failure), the real server when it is due (test_webhook_delivery checks that one
    # against arrival times): from there the wait before attempt n + 1 is the gap from row n + 1 to
    # row n + 2, whose first one is attempt 2's own duration.
    times = [a.scheduled_at for a in attempts]
    waits = [(times[1] - times[0]).total_seconds()] + [
        (b - a).total_seconds() for a, b in pairwise(times[2:])
    ]
    assert len(attempts) == received
    assert 25 <= len(attempts) <= 35, len(attempts)
    assert 4 <= waits[0] <= 7, waits[:3]  # the first retry after about 5 s
    assert all(1.8 <= b / a <= 2.2 for a, b in pairwise(waits[:11])), waits[:11]
    assert max(waits) <= 4 * HOUR + 60 and waits[-1] >= 4 * HOUR - 60, waits[-3:]  # capped at 4 h
    span = (times[-1] - times[0]).total_seconds() + 4 * HOUR  # the last wait is not in the rows
    assert 3 * 24 * HOUR - 4 * HOUR <= span <= 3 * 24 * HOUR + 60, span / HOUR
    assert all(a.status_code == 503 for a in attempts)
    # failed, visible in the store
    assert (failed.state, failed.attempts, failed.last_status) == ("failed", len(attempts), 503)
    assert failed.last_error is not None and "3 days" in failed.last_error
    assert failed.next_attempt_at is None and failed.delivered_at is None
    # the retry delivered it, once, with the same Webhook-Id as every attempt before
    assert result.state == "delivered"
    assert [d.webhook_id for d in got] == [event.id] * (received + 1)
    assert all(d.signature_ok for d in got)
    final = store.get_event(engine, event.id)
    assert (final.state, final.attempts, final.last_status) == ("delivered", len(attempts) + 1, 200)
