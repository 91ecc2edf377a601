"""One durable workflow per webhook event (id ``webhook:<eventId>``): deliver it or say it failed.

Each attempt is one activity (``deliver_webhook``: one POST, its outcome written to the database);
the retries are the activity's RetryPolicy (first after 5 s, doubling, capped at 4 h) for 3 days
(its schedule-to-close timeout), so they survive restarts of every process. A 410 Gone is a
non-retryable failure. From revision 1 (``DeliverWebhookInput.revision``, ADR 23) the first attempt
is a local activity in the workflow's first task, and only when it fails do the retries follow as
the activity, 5 s later, on the same schedule. A request's ``credential`` event is first tried by
the request's workflow itself (ADR 24): this workflow starts only when that attempt failed
(``first_attempt``), and goes on with the retries, 5 s after it began. When the attempts run out
the event is recorded ``failed`` and the workflow fails too: ``mandatum webhook retry`` starts the
id again, which the id reuse policy ALLOW_DUPLICATE_FAILED_ONLY permits for a failed delivery and
refuses for a delivered one.

An event that must follow another (a subject's ``credential`` after their ``identity``) first
waits until the other is no longer pending.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, RetryState, TimeoutError

with workflow.unsafe.imports_passed_through():
    from workflows.ids import ActivityNames
    from workflows.options import write, write_for
    from workflows.webhook_messages import (
        ATTEMPT_TIMEOUT,
        BACKOFF,
        DELIVERY_WINDOW,
        FIRST_RETRY,
        MAX_RETRY_INTERVAL,
        PARENT_GONE,
        WEBHOOK_WORKFLOW_TYPE,
        DeliverWebhookInput,
        DeliveryResult,
        RecordWebhookFailureInput,
    )

GONE = "the receiver answered 410 Gone"
DELIVERY_RETRY = RetryPolicy(
    initial_interval=FIRST_RETRY,
    backoff_coefficient=BACKOFF,
    maximum_interval=MAX_RETRY_INTERVAL,
    maximum_attempts=0,
    non_retryable_error_types=["gone"],
)

# after a local first attempt (revision 1): the same waits from the second retry on
LATER_RETRY = dataclasses.replace(DELIVERY_RETRY, initial_interval=FIRST_RETRY * BACKOFF)
# a first attempt made on its own (this workflow's local one, or the request workflow's, ADR 24)
ONE_ATTEMPT = RetryPolicy(maximum_attempts=1)


class Gone(Exception):
    """The receiver answered 410 to the first attempt: no retry."""


def is_gone(exc: BaseException) -> bool:
    """The attempt failed with the receiver's 410 (an activity's failure, or a local activity's
    error as it was raised)."""
    cause = exc.cause if isinstance(exc, ActivityError) else exc
    return isinstance(cause, ApplicationError) and cause.type == "gone"


def _reason(exc: ActivityError) -> str:
    cause = exc.cause
    # the server stops retrying when the next wait would end after the window, with the last
    # attempt's error as the cause
    if isinstance(cause, TimeoutError) or exc.retry_state == RetryState.TIMEOUT:
        return "no 2xx answer within the delivery window (3 days)"
    if is_gone(exc):
        return GONE
    return cause.message if isinstance(cause, ApplicationError) else str(cause or exc)


# Not sandboxed: one of these starts for every event, and building a sandbox (a fresh import of the
# workflow's modules) cost more CPU than the whole delivery. The code above and below only calls
# Temporal's workflow API and the passed-through message types; tests/workflows/
# test_webhooks_delivery.py replays a delivery's history to hold it to that.
@workflow.defn(name=WEBHOOK_WORKFLOW_TYPE, sandboxed=False)
class WebhookDeliveryWorkflow:
    @workflow.run
    async def run(self, inp: DeliverWebhookInput) -> DeliveryResult:
        if inp.after:
            await self._wait_for(inp.after)
        window = DELIVERY_WINDOW
        policy = DELIVERY_RETRY
        try:
            if inp.first_attempt == PARENT_GONE:
                raise Gone()
            if inp.revision >= 1:
                began = inp.first_attempt_at or workflow.now()
                if inp.first_attempt is None:
                    delivered = await self._first_attempt(inp)
                    if delivered is not None:
                        return delivered
                # the retries as an activity, on the schedule they would have had after attempt 1
                wait = began + FIRST_RETRY - workflow.now()
                if wait > timedelta(0):
                    await workflow.sleep(wait, summary=f"retry {inp.event_id}")
                inp = inp.model_copy(update={"attempts_before": 1})
                window = DELIVERY_WINDOW - (workflow.now() - began)
                policy = LATER_RETRY
            return await workflow.execute_activity(
                ActivityNames.DELIVER_WEBHOOK,
                inp,
                result_type=DeliveryResult,
                start_to_close_timeout=ATTEMPT_TIMEOUT,
                schedule_to_close_timeout=window,
                retry_policy=policy,
                summary=f"deliver {inp.event_id}",
            )
        except ActivityError as exc:
            reason = _reason(exc)
        except Gone:
            reason = GONE
        await write(
            ActivityNames.RECORD_WEBHOOK_FAILURE,
            RecordWebhookFailureInput(event_id=inp.event_id, reason=reason),
        )
        raise ApplicationError(
            f"webhook event {inp.event_id} not delivered: {reason}",
            type="webhook_not_delivered",
            non_retryable=True,
        )

    @staticmethod
    async def _first_attempt(inp: DeliverWebhookInput) -> DeliveryResult | None:
        """Revision 1: the first attempt as a local activity, run in the delivery's first workflow
        task (a marker in the history instead of the activity's three events and the task that
        follows them); None when it was not delivered and the retries should follow."""
        try:
            result: DeliveryResult = await workflow.execute_local_activity(
                ActivityNames.DELIVER_WEBHOOK,
                inp,
                result_type=DeliveryResult,
                start_to_close_timeout=ATTEMPT_TIMEOUT,
                schedule_to_close_timeout=DELIVERY_WINDOW,  # the activity reports the next attempt
                retry_policy=ONE_ATTEMPT,
                summary=f"deliver {inp.event_id}",
            )
        except (ActivityError, ApplicationError, TimeoutError) as exc:
            if is_gone(exc):
                raise Gone() from exc
            return None
        return result

    async def _wait_for(self, event_id: str) -> None:
        """Until the earlier event is delivered, skipped or given up (within the delivery window):
        checked after 1 s, then less and less often, at most every 5 minutes."""
        deadline = workflow.now() + DELIVERY_WINDOW
        delay = timedelta(seconds=1)
        while workflow.now() < deadline:
            state = await write_for(
                ActivityNames.WEBHOOK_EVENT_STATE, event_id, str, summary=f"is {event_id} delivered?"
            )
            if state != "pending":
                return
            await workflow.sleep(delay, summary=f"wait for {event_id}")
            delay = min(delay * 2, timedelta(minutes=5))
