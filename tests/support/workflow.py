"""The credential-request workflow's test helpers: requests inserted without the API, decisions, cancels,
refusals, gates that hold an activity mid-flight, the activities a history records (``activity_runs``),
the dev server the tests start (``start_dev_server``), and the fixtures ``executor``, ``ts_queue`` and
``gated``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy import Engine
from temporalio import activity
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.requests import RequestActivities
from cli.stack import BIN, dynamic_config_args
from core.otp import JourneySecrets
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import start_workflow_for, workflow_input
from store import request_queries as queries
from store import requests as store
from tests.support.api_client import SignedClient, policy_request
from tests.support.journey_messages import TEST_OUTBOX, pass_otp
from worker import WORKFLOWS, ActivityGroups, build_worker
from workflows.ids import SEARCH_ATTRIBUTE_KEYS, ActivityNames
from workflows.messages import (
    CancelInput,
    CancelResult,
    CredentialRequestResult,
    DecisionInput,
    DecisionResult,
    RecordDecisionInput,
    RecordedDecision,
    RecordExpiryInput,
    RequestStatusView,
)

UPDATE_TIMEOUT = 20

# what the dev server answers when it gave up on a call (it does so on a loaded 2-core machine)
TRANSIENT = (RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.UNAVAILABLE)


async def asked_again(call: Callable[[], Awaitable[Any]], attempts: int = 5) -> Any:
    """An idempotent call to the server, asked again (at most ``attempts`` times) while it answers
    that it gave up on it: fresh-clone CI runs on the loaded 2-core machine have had the dev server
    cancel ``ResetStickyTaskQueue`` after a worker was killed and ``DescribeTaskQueue`` after a
    host's link came back ("operation was canceled")."""
    for attempt in range(attempts):
        try:
            return await call()
        except RPCError as err:
            if err.status not in TRANSIENT or attempt == attempts - 1:
                raise
            await asyncio.sleep(0.5)
    return None


async def start_dev_server(port: int | None = None) -> WorkflowEnvironment:
    """A Temporal dev server as ``make run`` starts it: the project's ``temporal`` binary, our
    search attributes and dynamic configuration (``cli.stack``), with the pydantic converter; on
    ``port``, or a free one."""
    return await WorkflowEnvironment.start_local(
        port=port,
        ip="127.0.0.1",
        dev_server_existing_path=str(BIN / "temporal"),
        data_converter=pydantic_data_converter,
        search_attributes=SEARCH_ATTRIBUTE_KEYS,
        dev_server_extra_args=["--log-level", "error", *dynamic_config_args()],
    )


def insert_request(
    engine: Engine,
    org_id: str,
    *,
    contacts: tuple[str, ...] = ("ana@example.com",),
    credentials: tuple[str, ...] = ("Rent payments",),
    expiry: timedelta = timedelta(days=30),
    internal_id: str | None = None,
    security_level: str = "CONTACT",
) -> store.RequestBundle:
    """A request row as POST /request stores it, without starting its workflow."""
    new = store.NewRequest(
        security_level=security_level,
        contacts=[store.NewContact(c, "email") for c in contacts],
        credentials=[store.NewCredential("POLICY", n, scope="payments") for n in credentials],
        name="Pay the rent",
        internal_id=internal_id,
    )
    result = store.create_request(engine, org_id, new, expiry, 10_000, None, None)
    assert isinstance(result, store.RequestBundle)
    return result


async def start_on_revision(temporal: Client, queue: str, bundle: store.RequestBundle, revision: int) -> None:
    """Start the request's workflow as a request started on ``revision`` of the workflow code
    (ADR 23, 24) would run: the scenarios of the code that requests started earlier still run."""
    await start_workflow_for(
        temporal, queue, workflow_input(bundle).model_copy(update={"revision": revision})
    )


def db_request(engine: Engine, org_id: str, request_id: str) -> store.RequestBundle:
    bundle = queries.get_request(engine, org_id, request_id)
    assert bundle is not None
    return bundle


def fresh_queue() -> str:
    return f"mandatum-test-{uuid.uuid4().hex[:10]}"


async def result_of(handle: WorkflowHandle[Any, Any]) -> CredentialRequestResult:
    raw = await asyncio.wait_for(handle.result(), UPDATE_TIMEOUT)  # untyped handle: a dict
    return CredentialRequestResult.model_validate(raw)


async def status_of(handle: WorkflowHandle[Any, Any]) -> RequestStatusView:
    view = await handle.query("status", result_type=RequestStatusView)
    assert isinstance(view, RequestStatusView)
    return view


async def sends_returned(handle: WorkflowHandle[Any, Any], wait: float = UPDATE_TIMEOUT) -> RequestStatusView:
    """Wait until no code send is still under way: each subject's sends have come back, delivered
    (``channel`` set) or not (``undelivered``). Cancel a request on the time-skipping server only
    then: a cancel that reaches the workflow in the task where the send's activity completes leaves
    the workflow stuck on that server (``ACTIVITY_UNKNOWN``, temporalio/sdk-java#2391), and with it
    time skipping for every test after it. The real server has no such race."""
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        view = await status_of(handle)
        if all(s.channel is not None or s.undelivered >= s.sends for s in view.subjects):
            return view
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"a code send of {handle.id} has not come back in {wait} s: {view}")
        await asyncio.sleep(0.05)


async def decide(
    handle: WorkflowHandle[Any, Any],
    subject_id: str,
    credential_id: str,
    accept: bool = True,
    confirm: bool = True,
    outbox: Path = TEST_OUTBOX,
    secrets: JourneySecrets | None = None,
) -> DecisionResult:
    """The subject's decision, after confirming their code when they have not yet (as the approval
    page does; ``confirm=False`` skips that, for a subject with no code). ``outbox`` and ``secrets``
    are those of the worker that sent the code (the session's by default)."""
    status = await handle.query("status", result_type=RequestStatusView)
    if confirm and subject_id not in status.otp_passed:
        await pass_otp(handle, subject_id, outbox=outbox, secrets=secrets)
    result = await asyncio.wait_for(
        handle.execute_update(
            "decide",
            DecisionInput(
                subject_id=subject_id,
                credential_id=credential_id,
                accept=accept,
                channel="email",
                surface="hosted",
            ),
            result_type=DecisionResult,
        ),
        UPDATE_TIMEOUT,
    )
    assert isinstance(result, DecisionResult)
    return result


async def cancel(handle: WorkflowHandle[Any, Any], by: str = "test") -> CancelResult:
    result = await asyncio.wait_for(
        handle.execute_update("cancel", CancelInput(canceled_by=by), result_type=CancelResult),
        UPDATE_TIMEOUT,
    )
    assert isinstance(result, CancelResult)
    return result


async def refused(update: Any) -> ApplicationError:
    """The ApplicationError a validator (or handler) refused the update with."""
    with pytest.raises(WorkflowUpdateFailedError) as info:
        await asyncio.wait_for(update, UPDATE_TIMEOUT)
    cause = info.value.cause
    assert isinstance(cause, ApplicationError), repr(cause)
    return cause


def subject_uuid(did: str) -> str:
    subject = queries.subject_id_from_did(did)
    assert subject is not None
    return subject


class Gate:
    """Lets a test hold an activity mid-flight: ``entered`` is set when it starts, ``release`` frees it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def pass_through(self) -> None:
        self.entered.set()
        assert self.release.wait(UPDATE_TIMEOUT), "the test never released the gate"

    async def wait_entered(self) -> None:
        assert await asyncio.to_thread(self.entered.wait, UPDATE_TIMEOUT), "the activity never started"


class GatedActivities(RequestActivities):
    """The real activities, with expiry and decision writes held until the test releases them."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.expiry = Gate()
        self.decision = Gate()

    @activity.defn(name=ActivityNames.RECORD_EXPIRY)
    def record_expiry(self, inp: RecordExpiryInput) -> None:
        self.expiry.pass_through()
        super().record_expiry(inp)

    @activity.defn(name=ActivityNames.RECORD_DECISION)
    def record_decision(self, inp: RecordDecisionInput) -> RecordedDecision:
        self.decision.pass_through()
        return super().record_decision(inp)


@pytest.fixture(scope="module")
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        yield pool


@pytest_asyncio.fixture(scope="module")
async def ts_queue(
    ts_env: WorkflowEnvironment, engine: Engine, settings: Settings, executor: ThreadPoolExecutor
) -> AsyncIterator[str]:
    queue = fresh_queue()
    async with build_worker(ts_env.client, engine, queue, executor, settings):
        yield queue


def parse_time(value: str) -> datetime:
    """A time as the API renders it."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def create(api: SignedClient, **overrides: Any) -> dict[str, Any]:
    resp = await api.post("/request", policy_request(**overrides))
    assert resp.status_code == 201, resp.text
    return dict(resp.json()["data"])


async def get(api: SignedClient, request_id: str) -> dict[str, Any]:
    resp = await api.get(f"/request/{request_id}")
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def activities_with(engine: Engine, settings: Settings, *replacing: Any) -> list[Callable[..., Any]]:
    """The worker's activities (``worker.ActivityGroups``), each group of them (requests, mandates,
    webhooks, the journey) taken from the instance in ``replacing`` of a subclass of its class when
    there is one: a test's activities that hold or fail one step."""
    groups = ActivityGroups.of(engine, settings)
    for field in dataclasses.fields(groups):
        real = getattr(groups, field.name)
        stand_in = next((r for r in replacing if isinstance(r, type(real))), None)
        if stand_in is not None:
            groups = dataclasses.replace(groups, **{field.name: stand_in})
    return groups.all()


# A worker stopped under a running activity cancels it at once, and that cancel can reach the
# SDK's activity worker after the activity has ended: temporalio warns "Cannot find activity to
# cancel" (a test that leaves its worker while the event's first POST or a code's send still
# runs). A short grace lets such activities end first; one held by a gate waits it out.
SHUTDOWN_GRACE = timedelta(seconds=2)


@contextlib.asynccontextmanager
async def running_worker(
    client: Client,
    queue: str,
    activities: list[Callable[..., Any]],
    executor: ThreadPoolExecutor | None = None,
) -> AsyncIterator[None]:
    """A worker of the workflows with these activities on ``queue`` while the block runs, on
    ``executor`` or on four threads of its own. When the block ends, activities still running get
    ``SHUTDOWN_GRACE`` to finish before they are cancelled."""
    with contextlib.ExitStack() as stack:
        pool = executor or stack.enter_context(ThreadPoolExecutor(max_workers=4))
        async with Worker(
            client,
            task_queue=queue,
            workflows=WORKFLOWS,
            activities=activities,
            activity_executor=pool,
            graceful_shutdown_timeout=SHUTDOWN_GRACE,
        ):
            yield


@pytest_asyncio.fixture
async def gated(
    temporal: Client, engine: Engine, executor: ThreadPoolExecutor, settings: Settings, cipher: SecretCipher
) -> AsyncIterator[tuple[str, GatedActivities]]:
    queue = fresh_queue()
    acts = GatedActivities(engine)
    async with running_worker(temporal, queue, activities_with(engine, settings, acts), executor):
        try:
            yield queue, acts
        finally:
            acts.expiry.release.set()
            acts.decision.release.set()


async def history_has(handle: WorkflowHandle[Any, Any], field: Any, seconds: float) -> None:
    """Wait until the workflow's history holds an event of that kind and a workflow task completed
    after it (the workflow has acted on it)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        events = list((await handle.fetch_history()).events)
        found = [i for i, e in enumerate(events) if e.HasField(field)]
        if found and any(e.HasField("workflow_task_completed_event_attributes") for e in events[found[0] :]):
            return
        assert asyncio.get_running_loop().time() < deadline, f"no {field} in the history"
        await asyncio.sleep(0.05)


LOCAL_ACTIVITY_MARKER = "core_local_activity"  # the marker name the SDK's core records


@dataclass(frozen=True)
class ActivityRun:
    """An activity's finished attempt as a history records it: a completed or failed activity (its
    scheduled, started and completed or failed events), or a local activity (one marker)."""

    type: str
    attempt: int
    local: bool
    result: Payload | None  # a completed one's
    failure: Failure | None  # a failed one's (the application failure, with its causes)


def activity_runs(events: Iterable[HistoryEvent]) -> list[ActivityRun]:
    """Every finished activity attempt of a history, in order, activities and local activities alike."""
    types: dict[int, str] = {}
    attempts: dict[int, int] = {}
    runs = []
    for e in events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            types[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
        elif e.HasField("activity_task_started_event_attributes"):
            attempts[e.event_id] = e.activity_task_started_event_attributes.attempt
        elif e.HasField("activity_task_completed_event_attributes"):
            done = e.activity_task_completed_event_attributes
            [result] = done.result.payloads or [None]
            kind, attempt = types[done.scheduled_event_id], attempts[done.started_event_id]
            runs.append(ActivityRun(kind, attempt, False, result, None))
        elif e.HasField("activity_task_failed_event_attributes"):
            failed = e.activity_task_failed_event_attributes
            kind, attempt = types[failed.scheduled_event_id], attempts[failed.started_event_id]
            runs.append(ActivityRun(kind, attempt, False, None, failed.failure))
        elif (
            e.HasField("marker_recorded_event_attributes")
            and e.marker_recorded_event_attributes.marker_name == LOCAL_ACTIVITY_MARKER
        ):
            marker = e.marker_recorded_event_attributes
            data = json.loads(marker.details["data"].payloads[0].data)
            result = marker.details["result"].payloads[0] if "result" in marker.details else None
            failure = marker.failure if marker.HasField("failure") else None
            runs.append(ActivityRun(data["activity_type"], int(data["attempt"]), True, result, failure))
    return runs
