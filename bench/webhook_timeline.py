"""Where a decision's time goes, from the workflows' own histories.

For a sample of the measured decisions, after the clock has stopped, the request's workflow
history and its ``credential`` event's delivery workflow history are read, and every milestone
(an activity scheduled, started, completed; the update accepted and completed; the delivery
started) is placed in milliseconds after the form post began. The Temporal server stamps its
events with the clock of this same machine, so they line up with ours (to a millisecond or so).
The medians over the sample, in order, show each step: an activity's ``scheduled`` to ``started``
is its wait for a worker's poll, ``started`` to ``completed`` its run, and one activity's
``completed`` to the next one's ``scheduled`` a workflow task round trip. A local activity has one
milestone, ``(local) done``: its marker, which the server records when the workflow task that
ran it completes. The workflow tasks themselves are milestones too (``workflow task scheduled``,
``started``, ``completed``, numbered from the second on): ``scheduled`` to ``started`` is the
task's wait for a worker's poll.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from workflows.ids import request_workflow_id, webhook_workflow_id

E = EventType
EDGES = {  # event type -> what happened (activities: after their name)
    E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: "scheduled",
    E.EVENT_TYPE_ACTIVITY_TASK_STARTED: "started",
    E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "completed",
    E.EVENT_TYPE_ACTIVITY_TASK_FAILED: "failed",
    E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: "decide update accepted",
    E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: "decide update completed",
    E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: "delivery workflow start asked",
    E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED: "delivery workflow started",
    E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED: "workflow task scheduled",
    E.EVENT_TYPE_WORKFLOW_TASK_STARTED: "workflow task started",
    E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: "workflow task completed",
}
REPEATED = {"workflow task scheduled", "workflow task started", "workflow task completed"}
LOCAL_ACTIVITY_MARKER = "core_local_activity"


@dataclass(frozen=True)
class Trace:
    """One measured decision, in wall-clock seconds (time.time())."""

    request_id: str
    event_id: str  # of its credential event
    began: float  # right before the form post
    answered: float  # the form post's answer
    arrived: float  # the event at the receiver


def milestones(events: Iterable[HistoryEvent], since: float, prefix: str = "") -> dict[str, float]:
    """The first time of each milestone at or after ``since``, in ms after it."""
    activity: dict[int, str] = {}  # scheduled event id -> activity type
    found: dict[str, float] = {}
    for event in events:
        if event.event_type == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            activity[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        at = event.event_time.ToMicroseconds() / 1e6
        edge = EDGES.get(event.event_type) or _local_activity(event)
        if edge is None or at < since:
            continue
        if edge in ("scheduled", "started", "completed", "failed"):
            scheduled = event.event_id if edge == "scheduled" else _scheduled_id(event)
            edge = f"{activity.get(scheduled, '?')} {edge}"
        name, n = prefix + edge, 1
        while edge in REPEATED and name in found:  # the second workflow task's are "#2", ...
            n += 1
            name = f"{prefix}{edge} #{n}"
        found.setdefault(name, round((at - since) * 1000, 1))
    return found


def _local_activity(event: HistoryEvent) -> str | None:
    marker = event.marker_recorded_event_attributes
    if event.event_type != E.EVENT_TYPE_MARKER_RECORDED or marker.marker_name != LOCAL_ACTIVITY_MARKER:
        return None
    return f"{json.loads(marker.details['data'].payloads[0].data)['activity_type']} (local) done"


def _scheduled_id(event: HistoryEvent) -> int:
    for name in (
        "activity_task_started_event_attributes",
        "activity_task_completed_event_attributes",
        "activity_task_failed_event_attributes",
    ):
        if event.HasField(name):
            return int(getattr(event, name).scheduled_event_id)
    return 0


async def timeline_of(client: Client, trace: Trace) -> dict[str, float]:
    request = await client.get_workflow_handle(request_workflow_id(trace.request_id)).fetch_history()
    found = milestones(request.events, trace.began)
    try:  # a first attempt that succeeded in the request's workflow started no delivery (ADR 24)
        delivery = await client.get_workflow_handle(webhook_workflow_id(trace.event_id)).fetch_history()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
    else:
        found.update(milestones(delivery.events, trace.began, "delivery: "))
    found["POST /decide answered"] = round((trace.answered - trace.began) * 1000, 1)
    found["webhook received"] = round((trace.arrived - trace.began) * 1000, 1)
    return found


def medians(timelines: list[dict[str, float]]) -> list[tuple[str, float]]:
    """Each milestone's median over the timelines that have it, in time order."""
    names = {name for found in timelines for name in found}
    rows = [(name, median(t[name] for t in timelines if name in t)) for name in names]
    return sorted(rows, key=lambda row: row[1])


def show(rows: list[tuple[str, float]]) -> str:
    lines, last = [], 0.0
    for name, at in rows:
        lines.append(f"    {at:8.1f} ms  (+{at - last:6.1f})  {name}")
        last = at
    return "\n".join(lines)
