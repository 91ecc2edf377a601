"""A decision's issuance and event run as local activities (the ``decision-writes-local`` patch,
workflows/options.py): a write that keeps failing must not hold the workflow task, so its retries
past the first wait on a workflow timer, and the workflow answers other updates meanwhile; a write
that fails for good fails its update as an activity's failure would."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable

import pytest
from sqlalchemy import Engine
from temporalio import activity
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ActivityError, ApplicationError

from activities.mandates import MandateActivities
from activities.webhooks import WebhookActivities
from core.kinds import UpdateRefusal
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle, start_request_workflow
from orchestration.updates import Refused, run_update
from tests.support.api_client import Credentials
from tests.support.journey_messages import pass_otp
from tests.support.webhooks import events_of_request
from tests.support.workflow import (
    UPDATE_TIMEOUT,
    activities_with,
    activity_runs,
    cancel,
    decide,
    fresh_queue,
    insert_request,
    refused,
    running_worker,
)
from workflows.ids import ActivityNames
from workflows.messages import DecisionInput, DecisionResult, IssueCredentialInput, IssueCredentialResult
from workflows.webhook_messages import CreateCredentialEventInput, CreateEventResult


class FailingEvents(WebhookActivities):
    """The real activities; the credential event's write fails until the test heals it."""

    def __init__(self, engine: Engine, cipher: SecretCipher, settings: Settings) -> None:
        super().__init__(engine, cipher, settings)
        self.attempts = 0
        self.failing, self.healed = threading.Event(), threading.Event()

    @activity.defn(name=ActivityNames.CREATE_CREDENTIAL_EVENT)
    def create_credential_event(self, inp: CreateCredentialEventInput) -> CreateEventResult:
        self.attempts += 1
        if not self.healed.is_set():
            self.failing.set()
            raise RuntimeError("the database is unavailable")
        return super().create_credential_event(inp)


def timers(events: Iterable[HistoryEvent]) -> int:
    return sum(1 for e in events if e.HasField("timer_started_event_attributes"))


async def test_a_failing_local_write_retries_on_a_timer_and_frees_the_workflow(
    temporal: Client, engine: Engine, settings: Settings, cipher: SecretCipher, org: Credentials
) -> None:
    bundle = insert_request(engine, org.organization_id, contacts=("ana@example.com", "bea@example.com"))
    ana, cred = bundle.subjects[0][1], bundle.credentials[0].id
    events, queue = FailingEvents(engine, cipher, settings), fresh_queue()
    async with running_worker(temporal, queue, activities_with(engine, settings, events)):
        assert await start_request_workflow(temporal, queue, bundle)
        handle = request_handle(temporal, bundle.request.id)
        before = timers((await handle.fetch_history()).events)  # the expiry's
        rejection = asyncio.create_task(decide(handle, ana.id, cred, accept=False))
        try:
            assert await asyncio.to_thread(events.failing.wait, UPDATE_TIMEOUT), "the write never ran"
            # while the write keeps failing the workflow answers another update
            assert (await refused(cancel(handle))).type == "already_decided"
            # past the first retries (1 s, 2 s) the next ones wait on timers: 4 s, 8 s, ...
            # (with the default threshold they would hold the workflow task for a minute)
            deadline = asyncio.get_running_loop().time() + UPDATE_TIMEOUT
            while timers((await handle.fetch_history()).events) == before:
                assert asyncio.get_running_loop().time() < deadline, "no retry waited on a timer"
                await asyncio.sleep(0.1)
            assert not rejection.done()  # the write cannot land before it is healed
        finally:
            events.healed.set()
        decided = await rejection
    assert decided.request_status == "PENDING"
    runs = [
        r
        for r in activity_runs((await handle.fetch_history()).events)
        if r.type == ActivityNames.WRITE_DECISION  # the record and the event, on revision 3
    ]
    # the attempt that wrote the event is the last one made, recorded as a local activity's marker
    assert [(r.local, r.attempt, r.result is not None) for r in runs][-1] == (True, events.attempts, True)
    assert events.attempts >= 4  # three that failed in or before the first timer, then the one that wrote
    [event] = events_of_request(engine, org.organization_id, bundle.request.id)
    assert event.event_type == "credential" and event.payload["decision"]["action"] == "reject"


class RefusedIssuance(MandateActivities):
    """The real activities; the issuance refuses for good, naming a subject's contact as the
    store's refusals do."""

    @activity.defn(name=ActivityNames.ISSUE_CREDENTIAL)
    def issue_credential(self, inp: IssueCredentialInput) -> IssueCredentialResult:
        raise ApplicationError(
            f"credential {inp.credential_id} is not accepted by ana@example.com",
            type="not_issuable",
            non_retryable=True,
        )


async def test_a_local_activity_that_fails_for_good_fails_the_update_as_an_activity_would(
    temporal: Client, engine: Engine, settings: Settings, cipher: SecretCipher, org: Credentials
) -> None:
    """The SDK hands a local activity's failure to the workflow as the ``ApplicationError`` the
    activity raised; ``workflows.options.write`` wraps it in an ``ActivityError``, so the update it
    fails is refused with the generic answer (``orchestration.updates``), never the activity's
    message (here a contact)."""
    bundle = insert_request(engine, org.organization_id, contacts=("ana@example.com",))
    ana, cred = bundle.subjects[0][1], bundle.credentials[0].id
    queue = fresh_queue()
    refusing = RefusedIssuance(engine, cipher, settings)
    async with running_worker(temporal, queue, activities_with(engine, settings, refusing)):
        assert await start_request_workflow(temporal, queue, bundle)
        handle = request_handle(temporal, bundle.request.id)
        await pass_otp(handle, ana.id)
        with pytest.raises(Refused) as refused_step:  # the update as the API runs it
            await run_update(
                temporal,
                bundle.request.id,
                "decide",
                DecisionInput(
                    subject_id=ana.id, credential_id=cred, accept=True, channel="email", surface="hosted"
                ),
                DecisionResult,
            )
    assert (refused_step.value.kind, refused_step.value.message) == (
        UpdateRefusal.REFUSED,
        "The request refused this step",
    )
    failed = refused_step.value.__cause__
    assert isinstance(failed, WorkflowUpdateFailedError)
    cause = failed.cause
    # revision 3: the issuance is a step of the decision's one write
    assert isinstance(cause, ActivityError) and cause.activity_type == ActivityNames.WRITE_DECISION
    assert isinstance(cause.cause, ApplicationError) and cause.cause.type == "not_issuable"
    assert "ana@example.com" not in str(cause)
