"""The decision-to-webhook benchmark's own parts: its receiver (fed the service's own envelopes),
the bare update, latencies an operation measures itself, the history milestones, the report, and
one decision the way the benchmark makes it, through the app and the worker to the receiver.
No timing is asserted: only what each part reads, matches and counts."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.worker import Worker

from bench import verify_setup as setup
from bench import webhook as bench
from bench.bare_update import EchoWorkflow, echo_updates, start_echoes
from bench.measure import Measurement, Phase
from bench.webhook_receiver import Receiver, WebhookSecrets, parse_head
from bench.webhook_timeline import medians, milestones, show
from cli.stack import Stack
from core.settings import Settings
from tests.support.api_client import Credentials
from tests.support.development import development_client
from trust.webhook_envelope import delivery_headers, encrypt_event

KEYS = WebhookSecrets.generate()


def _sent(
    event: dict[str, object], keys: WebhookSecrets = KEYS, stamp: int = 1795406781772
) -> tuple[bytes, dict[str, str]]:
    """A POST as the service's delivery activity builds it."""
    body = encrypt_event(event, keys.encryption, keys.salt)
    return body, delivery_headers(str(event["id"]), keys.signature, body, stamp)


def _event(request_id: str, event_type: str = "credential") -> dict[str, object]:
    return {
        "id": f"urn:via:event:{uuid.uuid4()}",
        "eventType": event_type,
        "requestId": request_id,
        "credential": {"id": "urn:via:credential:1", "status": "ACTIVE"},
        "decision": {"action": "accept"},
    }


async def test_the_receiver_hands_each_request_its_credential_event_and_counts_the_rest() -> None:
    async with Receiver(KEYS) as receiver, httpx.AsyncClient() as http:
        waiting = receiver.expect("r1")
        before = time.perf_counter()
        identity = _event("r1", "identity")
        credential = _event("r1")
        answers = []
        for event in (identity, credential, _event("nobody-waits")):
            body, headers = _sent(event)
            answers.append((await http.post(receiver.url, content=body, headers=headers)).status_code)
        body, headers = _sent(credential)  # a second attempt of a delivered event: same id, new IV
        answers.append((await http.post(receiver.url, content=body, headers=headers)).status_code)
        forged, headers = _sent(_event("r1"), WebhookSecrets.generate())
        answers.append((await http.post(receiver.url, content=forged, headers=headers)).status_code)
        _, headers = _sent(_event("r1"))
        headers["X-Signature"] = delivery_headers("x", KEYS.signature, b"not json", 1)["X-Signature"]
        headers["X-Timestamp"] = "1"
        answers.append((await http.post(receiver.url, content=b"not json", headers=headers)).status_code)
        arrival = await waiting
    assert answers == [200, 200, 200, 200, 401, 400]
    assert arrival.event == credential and before < arrival.at < time.perf_counter()
    assert abs(arrival.wall - time.time()) < 60
    tally = receiver.tally
    assert (tally.received, tally.matched, tally.duplicates, tally.unexpected) == (6, 1, 1, 2)
    assert (tally.bad_signature, tally.undecryptable) == (1, 1)


def test_request_heads_are_read_with_their_names_in_lower_case() -> None:
    head = b"POST / HTTP/1.1\r\nHost: 127.0.0.1:9\r\nWebhook-Id: urn:via:event:x\r\nX-Mixed:a:b\r\n\r\n"
    assert parse_head(head) == {"host": "127.0.0.1:9", "webhook-id": "urn:via:event:x", "x-mixed": "a:b"}


async def test_the_bare_update_answers_at_once(temporal: Client) -> None:
    queue = f"bench-echo-{uuid.uuid4().hex[:8]}"
    async with Worker(temporal, task_queue=queue, workflows=[EchoWorkflow]):
        ids = await start_echoes(temporal, queue, 3)
        update = echo_updates(temporal, ids)
        assert [await update(i) for i in range(3)] == [True, True, True]
        for workflow_id in ids:
            await temporal.get_workflow_handle(workflow_id).signal("finish")
            await temporal.get_workflow_handle(workflow_id).result()


async def test_an_operation_may_measure_its_own_latency(settings: Settings) -> None:
    async def op(i: int) -> bool | float:
        return False if i == 3 else 0.25 + i

    phase = Phase("own clock", op)
    await phase.run(4, 2, Stack(settings, echo=False), "test")
    failed, *own = sorted(phase.latencies)  # a failure keeps the time it took
    assert own == [0.25, 1.25, 2.25] and failed < 0.25 and phase.errors == 1


def _at(event: HistoryEvent, seconds: float) -> HistoryEvent:
    event.event_time.FromDatetime(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds))
    return event


def test_history_events_become_milestones_after_the_decision() -> None:
    since = datetime(2026, 1, 1, tzinfo=UTC).timestamp() + 10
    scheduled = HistoryEvent(event_id=5, event_type=EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    scheduled.activity_task_scheduled_event_attributes.activity_type.name = "issue_credential"
    started = HistoryEvent(event_id=6, event_type=EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    started.activity_task_started_event_attributes.scheduled_event_id = 5
    completed = HistoryEvent(event_id=7, event_type=EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    completed.activity_task_completed_event_attributes.scheduled_event_id = 5
    local = HistoryEvent(event_id=9, event_type=EventType.EVENT_TYPE_MARKER_RECORDED)
    local.marker_recorded_event_attributes.marker_name = "core_local_activity"
    local.marker_recorded_event_attributes.details["data"].payloads.add(
        data=b'{"seq":5,"attempt":1,"activity_type":"create_credential_event"}'
    )
    patch = HistoryEvent(event_id=11, event_type=EventType.EVENT_TYPE_MARKER_RECORDED)
    patch.marker_recorded_event_attributes.marker_name = "core_patch"
    events = [
        _at(HistoryEvent(event_id=1, event_type=EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED), 9),
        _at(
            HistoryEvent(event_id=4, event_type=EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED),
            10.005,
        ),
        _at(scheduled, 10.010),
        _at(started, 10.012),
        _at(completed, 10.030),
        _at(HistoryEvent(event_id=8, event_type=EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED), 10.031),
        _at(local, 10.040),
        _at(HistoryEvent(event_id=10, event_type=EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED), 10.050),
        _at(patch, 10.051),  # a patch's marker is no milestone
    ]
    found = milestones(events, since, "delivery: ")
    assert found == {
        "delivery: decide update accepted": 5.0,
        "delivery: issue_credential scheduled": 10.0,
        "delivery: issue_credential started": 12.0,
        "delivery: issue_credential completed": 30.0,
        "delivery: workflow task started": 31.0,
        "delivery: create_credential_event (local) done": 40.0,
        "delivery: workflow task started #2": 50.0,
    }
    rows = medians([{"a": 1.0, "b": 5.0}, {"a": 3.0, "b": 4.0}, {"b": 9.0}])
    assert rows == [("a", 2.0), ("b", 5.0)]
    assert show(rows).splitlines()[1].split() == ["5.0", "ms", "(+", "3.0)", "b"]


def _measured(name: str, p50: float) -> Measurement:
    return Measurement(name, 100, 1.0, 100.0, p50, 2 * p50, 0, {"worker": 1.5})


def test_the_ratio_is_of_the_medians_and_the_report_says_whether_it_meets_the_target() -> None:
    bare, decision = _measured("bare", 10.0), _measured("decision", 25.0)
    ratio = bench.ratio_of(decision, bare)
    assert ratio == 2.5
    lines = bench.report(bare, decision, [0.010, 0.020, 0.030], ratio)
    assert any("2.5   meets the target 3x" in line for line in lines)
    assert any(line.split()[-2:] == ["20.0", "30.0"] for line in lines if "POST /decide answered" in line)
    missed = bench.report(bare, _measured("decision", 45.0), [], bench.ratio_of(_measured("d", 45.0), bare))
    assert any("4.5   MISSES the target 3x" in line for line in missed)


async def test_a_decision_as_the_benchmark_makes_it_reaches_its_receiver(
    temporal: Client, worker: None, org: Credentials, settings: Settings
) -> None:
    """The journey up to the decision, the webhook set as the benchmark sets it, and one decision
    timed by the benchmark's own operation: its event arrives, matched to its request. The
    benchmark's stack runs in development, whose outbox it reads the codes from: so does this app."""
    caller = setup.Caller(org.organization_id, org.did, org.api_key, org.secret)
    signer = setup.Signer(caller, "mandatum.test")
    async with (
        development_client(settings, temporal) as http,
        Receiver(WebhookSecrets.generate()) as receiver,
    ):
        bench.configure_webhook(settings, org.organization_id, receiver.url, receiver.webhook_secrets)
        journeys = await bench.open_journeys(http, signer, 2)
        decisions = bench.Decisions(http, receiver, journeys)
        outcomes = [await decisions(i) for i in range(2)]
    assert all(isinstance(o, float) and o > 0 for o in outcomes), decisions.failures
    assert receiver.tally.matched == 2 and receiver.tally.received == 2
    traces = decisions.traces
    assert [traces[i].request_id for i in range(2)] == [j.request_id for j in journeys]
    assert all(t.began <= t.answered and t.began <= t.arrived for t in traces.values())
    assert all(t.event_id.startswith("urn:via:event:") for t in traces.values())
