"""How the workflows run their activities: a few named kinds instead of options repeated per call.

- ``write``: a state change written to the database, retried (1 s, doubling, at most a minute
  apart) until it lands, 30 s per attempt. Every write activity is idempotent. ``local=True``
  runs it as a local activity: in the worker that runs the workflow task, inside that task, with
  a marker in the history for its result instead of its own scheduled, started and completed
  events and the workflow task that follows them. Its first retry (1 s later) runs in the same
  task; later ones wait on a timer (docs/architecture.md, "Performance notes").
- ``send``: a message to a subject through a transport that may be slow or down: 60 s per
  attempt, 8 attempts from 2 s apart to a minute, then the caller reports it undelivered.

Deterministic code only (imported by the workflows).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, RetryState

T = TypeVar("T")

DB_WRITE_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(minutes=1))
DB_WRITE_TIMEOUT = timedelta(seconds=30)
# a local write whose next retry is further off than this waits on a workflow timer, which ends the
# workflow task: while a local activity runs, the workflow's other updates wait for its task
LOCAL_RETRY_THRESHOLD = timedelta(seconds=2)
SEND_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2), maximum_interval=timedelta(minutes=1), maximum_attempts=8
)
SEND_TIMEOUT = timedelta(seconds=60)


async def write(activity: str, arg: Any, *, summary: str | None = None, local: bool = False) -> None:
    """Run a database-writing activity until it lands."""
    await _write(activity, arg, None, summary, local)


async def write_for(
    activity: str, arg: Any, result_type: type[T], *, summary: str | None = None, local: bool = False
) -> T:
    """``write`` for an activity that answers (the event it made, what it read with the write)."""
    return await _write(activity, arg, result_type, summary, local)


async def _write(activity: str, arg: Any, result_type: type | None, summary: str | None, local: bool) -> Any:
    if local:
        try:
            return await workflow.execute_local_activity(
                activity,
                arg,
                result_type=result_type,
                start_to_close_timeout=DB_WRITE_TIMEOUT,
                retry_policy=DB_WRITE_RETRY,
                local_retry_threshold=LOCAL_RETRY_THRESHOLD,
                summary=summary,
            )
        except ApplicationError as err:
            # a local activity's failure arrives as the activity raised it; wrapped as an
            # activity's would be, the caller reads it the same way (``err.cause``), and an update
            # it fails answers as before, never with the activity's own message
            raise ActivityError(
                f"local activity {activity} failed",
                scheduled_event_id=0,
                started_event_id=0,
                identity="",
                activity_type=activity,
                activity_id="",
                retry_state=RetryState.NON_RETRYABLE_FAILURE,
            ) from err
    return await workflow.execute_activity(
        activity,
        arg,
        result_type=result_type,
        start_to_close_timeout=DB_WRITE_TIMEOUT,
        retry_policy=DB_WRITE_RETRY,
        summary=summary,
    )


async def send(activity: str, arg: Any, result_type: type[T], *, summary: str) -> T:
    """Run a sending activity: a bounded number of attempts, then the ActivityError is the caller's."""
    return await workflow.execute_activity(
        activity,
        arg,
        result_type=result_type,
        start_to_close_timeout=SEND_TIMEOUT,
        retry_policy=SEND_RETRY,
        summary=summary,
    )
