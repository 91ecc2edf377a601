"""Temporal's own buttons never leave a request wrong (issue 12, item 14).

"Request Cancellation" in the Temporal UI (``temporal workflow cancel``) is recorded by the
workflow like the API's cancel, by the actor ``temporal``; a terminated workflow (or one that
timed out or failed) is found by the reconciler, which closes its still PENDING row.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, update
from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError

from activities.journey import JourneyActivities
from core.otp import JourneySecrets
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import (
    reconcile_forever,
    repair_closed_once,
    request_handle,
    start_request_workflow,
)
from store import audit
from store.db import utcnow, write_session
from store.requests import RequestBundle
from store.tables import CredentialRequest
from tests.support.api_client import Credentials, SignedClient, assert_error_shape
from tests.support.audit import chain
from tests.support.journey_messages import message_for
from tests.support.webhooks import events_of_request, wait_for
from tests.support.workflow import (
    UPDATE_TIMEOUT,
    Gate,
    GatedActivities,
    activities_with,
    cancel,
    create,
    db_request,
    decide,
    fresh_queue,
    get,
    history_has,
    insert_request,
    result_of,
    running_worker,
)
from worker import build_worker
from workflows.ids import SA_STATUS, ActivityNames
from workflows.messages import SendOtpInput, SendOtpResult

pytestmark = pytest.mark.usefixtures("worker")
# the gated activities of the workflow tests (their fixtures, by name)


def audit_of(engine: Engine, org_id: str, request_id: str, kind: str) -> list[Any]:
    return [r for r in chain(engine, org_id) if r.request_id == request_id and r.type == kind]


async def test_a_cancel_requested_in_temporal_is_recorded_like_the_apis(
    api: SignedClient,
    temporal: Client,
    engine: Engine,
    org: Credentials,
) -> None:
    data = await create(api, internalId="ext-temporal-cancel")
    handle = request_handle(temporal, data["id"])
    subject = db_request(engine, org.organization_id, data["id"]).subjects[0][1].id
    await message_for(data["id"], subject)  # the workflow runs and has sent its first code

    await handle.cancel()  # what "Request Cancellation" in the Temporal UI does

    with pytest.raises(WorkflowFailureError) as failure:
        await asyncio.wait_for(handle.result(), 30)
    assert isinstance(failure.value.cause, CancelledError)
    desc = await handle.describe()
    assert desc.status == WorkflowExecutionStatus.CANCELED
    assert desc.typed_search_attributes.get(SA_STATUS) == "CANCELED"
    stored = db_request(engine, org.organization_id, data["id"])
    assert (stored.request.status, stored.request.canceled_by) == ("CANCELED", "temporal")
    assert stored.request.canceled_at is not None
    assert [c.status for c in stored.credentials] == ["CANCELED"]
    [record] = audit_of(engine, org.organization_id, data["id"], audit.MANDATE_CANCELED)
    assert record.actor == "temporal" and record.data["canceledBy"] == "temporal"
    after = await get(api, data["id"])
    assert after["status"] == "CANCELED" and after["canceledAt"] is not None
    assert_error_shape(await api.delete(f"/request/{data['id']}"), 409)
    # the API's cancel makes no webhook event: neither does this one
    assert events_of_request(engine, org.organization_id, data["id"]) == []


async def closed_pending_repaired(temporal: Client, engine: Engine, request_id: str) -> list[str]:
    """Reconciler passes until the terminated workflow shows in visibility (it lags the close);
    the passes look at the last minute's closes, as the reconciler's later passes do."""
    for _ in range(100):
        repaired = await repair_closed_once(temporal, engine, utcnow() - timedelta(minutes=1))
        if request_id in repaired:
            return repaired
        await asyncio.sleep(0.1)
    raise AssertionError(f"request {request_id} was never repaired")


async def terminated(temporal: Client, settings: Settings, bundle: RequestBundle) -> WorkflowHandle[Any, Any]:
    """The request's workflow started, its first code sent, then terminated by an operator."""
    assert await start_request_workflow(temporal, settings.task_queue, bundle)
    handle = request_handle(temporal, bundle.request.id)
    await message_for(bundle.request.id, bundle.subjects[0][1].id)
    await handle.terminate(reason="an operator's button")
    return handle


async def test_a_terminated_workflow_is_repaired_by_the_reconciler(
    temporal: Client,
    engine: Engine,
    org: Credentials,
    settings: Settings,
) -> None:
    bundle = insert_request(engine, org.organization_id, internal_id="ext-terminated")
    handle = await terminated(temporal, settings, bundle)
    assert db_request(engine, org.organization_id, bundle.request.id).request.status == "PENDING"

    await closed_pending_repaired(temporal, engine, bundle.request.id)

    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert (stored.request.status, stored.request.canceled_by) == ("CANCELED", "temporal")
    desc = await handle.describe()
    assert desc.status == WorkflowExecutionStatus.TERMINATED
    assert stored.request.canceled_at == desc.close_time
    assert [c.status for c in stored.credentials] == ["CANCELED"]
    [record] = audit_of(engine, org.organization_id, bundle.request.id, audit.MANDATE_CANCELED)
    assert record.actor == "temporal" and record.data["workflowStatus"] == "TERMINATED"
    # a second pass finds the workflow again, but the row is closed: nothing more is written
    assert bundle.request.id not in await repair_closed_once(temporal, engine)
    assert len(audit_of(engine, org.organization_id, bundle.request.id, audit.MANDATE_CANCELED)) == 1


async def test_a_workflow_terminated_after_the_expiry_is_repaired_as_expired(
    temporal: Client,
    engine: Engine,
    org: Credentials,
    settings: Settings,
) -> None:
    bundle = insert_request(engine, org.organization_id)
    handle = await terminated(temporal, settings, bundle)
    closed = (await handle.describe()).close_time
    assert closed is not None
    with write_session(engine) as session:  # as if it had been terminated after its expiry
        session.execute(
            update(CredentialRequest)
            .where(CredentialRequest.id == bundle.request.id)  # type: ignore[arg-type]
            .values(expires_at=closed - timedelta(seconds=1))
        )

    await closed_pending_repaired(temporal, engine, bundle.request.id)

    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert (stored.request.status, stored.request.canceled_at) == ("EXPIRED", None)
    assert [c.status for c in stored.credentials] == ["EXPIRED"]
    [record] = audit_of(engine, org.organization_id, bundle.request.id, audit.REQUEST_EXPIRED)
    assert record.actor == "temporal" and record.data["workflowStatus"] == "TERMINATED"


# --- a cancel before the first code went out is not an undeliverable code (item 15) -------------


class HeldSends(JourneyActivities):
    """The real journey activities, with the code's send held until the test releases it."""

    def __init__(self, engine: Engine, settings: Settings) -> None:
        super().__init__(engine, settings, JourneySecrets(settings.master_key_bytes()))
        self.gate = Gate()

    @activity.defn(name=ActivityNames.SEND_OTP)
    def send_otp(self, inp: SendOtpInput) -> SendOtpResult:
        self.gate.pass_through()
        return super().send_otp(inp)


@pytest.fixture
async def held_sends(
    temporal: Client, engine: Engine, settings: Settings, cipher: SecretCipher
) -> AsyncIterator[tuple[str, HeldSends]]:
    queue = fresh_queue()
    journey = HeldSends(engine, settings)
    async with running_worker(temporal, queue, activities_with(engine, settings, journey)):
        try:
            yield queue, journey
        finally:
            journey.gate.release.set()


@pytest.mark.parametrize("how", ["api-cancel", "temporal-cancel"])
async def test_a_cancel_before_the_first_code_went_out_reports_no_failed_code(
    temporal: Client,
    engine: Engine,
    org: Credentials,
    held_sends: tuple[str, HeldSends],
    how: str,
) -> None:
    queue, journey = held_sends
    bundle = insert_request(engine, org.organization_id)
    assert await start_request_workflow(temporal, queue, bundle)
    handle = request_handle(temporal, bundle.request.id)
    await journey.gate.wait_entered()  # the first send is under way and cannot finish

    if how == "api-cancel":
        await cancel(handle, by="apiKey:k1")
        assert (await result_of(handle)).status == "CANCELED"
    else:
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), 30)
    journey.gate.release.set()

    assert db_request(engine, org.organization_id, bundle.request.id).request.status == "CANCELED"
    assert [e.event_type for e in events_of_request(engine, org.organization_id, bundle.request.id)] == []
    history = await handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert ActivityNames.CREATE_OTP_FAILED_EVENT not in scheduled


async def test_a_cancel_sent_while_no_worker_runs_reports_no_failed_code(
    temporal: Client,
    engine: Engine,
    settings: Settings,
    org: Credentials,
) -> None:
    """The request is canceled while the worker is down: the cancel reaches the workflow with its
    start, before its first code was sent (the send is canceled before it ever ran)."""
    queue = fresh_queue()
    bundle = insert_request(engine, org.organization_id)
    assert await start_request_workflow(temporal, queue, bundle)
    handle = request_handle(temporal, bundle.request.id)
    pending = asyncio.create_task(cancel(handle, by="apiKey:k1"))
    await asyncio.sleep(1)  # (not a race: earlier or later, no otp.failed event may follow)

    with ThreadPoolExecutor(max_workers=4) as pool:
        async with build_worker(temporal, engine, queue, pool, settings):
            await pending
            assert (await result_of(handle)).status == "CANCELED"

    assert events_of_request(engine, org.organization_id, bundle.request.id) == []
    assert db_request(engine, org.organization_id, bundle.request.id).request.status == "CANCELED"


async def test_the_worker_reconciler_repairs_a_terminated_workflow(
    temporal: Client,
    engine: Engine,
    org: Credentials,
    settings: Settings,
) -> None:
    """The loop the worker runs (``reconcile_forever``) includes the repair."""
    bundle = insert_request(engine, org.organization_id)
    await terminated(temporal, settings, bundle)
    loop = asyncio.create_task(
        reconcile_forever(
            temporal, engine, settings.task_queue, timedelta(milliseconds=100), timedelta(seconds=10)
        )
    )
    try:
        await wait_for(
            lambda: db_request(engine, org.organization_id, bundle.request.id).request.status == "CANCELED"
        )
    finally:
        loop.cancel()
    assert db_request(engine, org.organization_id, bundle.request.id).request.canceled_by == "temporal"


async def test_a_cancel_in_temporal_stores_a_decision_in_flight_first(
    temporal: Client,
    engine: Engine,
    org: Credentials,
    gated: tuple[str, GatedActivities],
) -> None:
    """The operator's cancel cannot be refused like the API's (409 once a subject decided): the
    decision under way is stored first, then the request is canceled; a rejected credential stays
    REJECTED."""
    queue, acts = gated
    bundle = insert_request(engine, org.organization_id, contacts=("ana@example.com", "bea@example.com"))
    assert await start_request_workflow(temporal, queue, bundle)
    handle = request_handle(temporal, bundle.request.id)
    ana, credential = bundle.subjects[0][1].id, bundle.credentials[0].id
    decision = asyncio.create_task(decide(handle, ana, credential, accept=False))
    await acts.decision.wait_entered()

    await handle.cancel()
    await history_has(handle, "workflow_execution_cancel_requested_event_attributes", UPDATE_TIMEOUT)
    assert db_request(engine, org.organization_id, bundle.request.id).request.status == "PENDING"
    acts.decision.release.set()

    assert (await decision).request_status == "PENDING"
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(handle.result(), 30)
    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert (stored.request.status, stored.request.canceled_by) == ("CANCELED", "temporal")
    assert [c.status for c in stored.credentials] == ["REJECTED"]
    kinds = [r.type for r in chain(engine, org.organization_id) if r.request_id == bundle.request.id]
    assert kinds[-2:] == [audit.DECISION_REJECT, audit.MANDATE_CANCELED]


async def test_a_cancel_in_temporal_while_no_worker_runs(
    temporal: Client,
    engine: Engine,
    settings: Settings,
    org: Credentials,
) -> None:
    """Requested before the workflow's first task ran: delivered with the start, it is recorded all
    the same (and the first code's send, canceled, is not an undeliverable code)."""
    queue = fresh_queue()
    bundle = insert_request(engine, org.organization_id)
    assert await start_request_workflow(temporal, queue, bundle)
    handle = request_handle(temporal, bundle.request.id)
    await handle.cancel()

    with ThreadPoolExecutor(max_workers=4) as pool:
        async with build_worker(temporal, engine, queue, pool, settings):
            with pytest.raises(WorkflowFailureError):
                await asyncio.wait_for(handle.result(), 30)

    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert (stored.request.status, stored.request.canceled_by) == ("CANCELED", "temporal")
    assert (await handle.describe()).typed_search_attributes.get(SA_STATUS) == "CANCELED"
    assert events_of_request(engine, org.organization_id, bundle.request.id) == []
