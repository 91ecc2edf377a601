"""What only a request's workflow history holds, for the operators' timeline: every code sent
(where it went, whether it arrived, the transport's answer when it did not), and every code the
subject entered with its outcome (wrong, locked, passed). Read from the history's activities, so
nothing is stored twice; the code itself is never in it (only its keyed hash, which is not shown).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from orchestration.temporal import request_handle
from workflows.ids import ActivityNames
from workflows.messages import CheckOtpInput, SendOtpInput, SendOtpResult, VerifyOtpResult

MAX_EVENTS = 5_000  # a request's history is a few hundred events; a page stops reading there


@dataclass(frozen=True)
class CodeSent:
    at: datetime
    subject_id: str
    send_number: int
    resent_by: str | None
    channel: str | None  # None while the send has no answer yet
    delivered: bool | None
    error: str | None  # the transport's answer when it did not deliver, or the activity's failure


@dataclass(frozen=True)
class CodeChecked:
    at: datetime
    subject_id: str
    outcome: str  # core.kinds.OtpOutcome


async def journey_of(client: Client, request_id: str) -> tuple[list[CodeSent], list[CodeChecked]]:
    """The codes sent and checked in the request's workflow, in history order."""
    scheduled: dict[int, tuple[str, object]] = {}
    sent: list[CodeSent] = []
    checked: list[CodeChecked] = []
    converter = client.data_converter
    count = 0
    async for event in request_handle(client, request_id).fetch_history_events():
        count += 1
        if count > MAX_EVENTS:
            break
        at = event.event_time.ToDatetime().replace(tzinfo=UTC)
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            name = attrs.activity_type.name
            if name == ActivityNames.SEND_OTP:
                [inp] = await converter.decode(attrs.input.payloads, [SendOtpInput])
                scheduled[event.event_id] = (name, inp)
            elif name == ActivityNames.CHECK_OTP:
                [inp] = await converter.decode(attrs.input.payloads, [CheckOtpInput])
                scheduled[event.event_id] = (name, inp)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            done = event.activity_task_completed_event_attributes
            found = scheduled.pop(done.scheduled_event_id, None)
            if found is None:
                continue
            name, inp = found
            if name == ActivityNames.SEND_OTP and isinstance(inp, SendOtpInput):
                [result] = await converter.decode(done.result.payloads, [SendOtpResult])
                error = (
                    None if result.delivered else f"{result.error_code}: {result.error_message or ''}".strip()
                )
                sent.append(
                    CodeSent(
                        at,
                        inp.subject_id,
                        inp.send_number,
                        inp.resent_by,
                        result.channel,
                        result.delivered,
                        error,
                    )
                )
            elif isinstance(inp, CheckOtpInput):
                [outcome] = await converter.decode(done.result.payloads, [VerifyOtpResult])
                checked.append(CodeChecked(at, inp.subject_id, str(outcome.outcome)))
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            failed = event.activity_task_failed_event_attributes
            found = scheduled.pop(failed.scheduled_event_id, None)
            if found is not None and isinstance(found[1], SendOtpInput):
                inp = found[1]
                message = failed.failure.message[:200]
                sent.append(
                    CodeSent(at, inp.subject_id, inp.send_number, inp.resent_by, None, False, message)
                )
    return sent, checked
