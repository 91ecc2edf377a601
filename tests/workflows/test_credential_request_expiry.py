"""The credential-request workflow's expiry: after 30 days or the settings' expiry, at once when
already past, never after a cancel; and its races with updates, forced with activities that wait on
a gate, so each one is deterministic.

Expiry runs on the time-skipping server (30 days pass in a second), but where updates race it, on
the dev server. Cancel, decisions and their races with each other: test_credential_request_decisions.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from api.app import create_app
from core.settings import Settings
from orchestration.temporal import request_handle, start_request_workflow
from store.db import utcnow
from tests.support.api_client import Credentials, SignedClient, assert_error_shape
from tests.support.workflow import (
    UPDATE_TIMEOUT,
    Gate,
    GatedActivities,
    cancel,
    create,
    db_request,
    decide,
    get,
    history_has,
    insert_request,
    parse_time,
    refused,
    result_of,
    start_on_revision,
)
from workflows.ids import (
    SA_INTERNAL_ID,
    SA_ORGANIZATION,
    SA_OUTCOME,
    SA_STATUS,
    ActivityNames,
)
from workflows.messages import (
    CredentialRequestResult,
)

# --- expiry on the time-skipping server ----------------------------------------------------------


async def skip_to_result(
    env: WorkflowEnvironment,
    handle: WorkflowHandle[Any, Any],
) -> CredentialRequestResult:
    """Wait for the result, letting the time-skipping server jump over timers meanwhile.

    (Only handles returned by ``env.client.start_workflow`` unlock time skipping by themselves.)
    """
    async with env.time_skipping_unlocked():  # type: ignore[attr-defined]
        return await result_of(handle)


async def virtual_expiry(env: WorkflowEnvironment, expiry: timedelta) -> timedelta:
    """The expiry to store so that the request expires ``expiry`` after the server's *virtual* now.

    Rows are stamped with the wall clock, while the session's time-skipping server has already
    skipped ahead for earlier tests.
    """
    return expiry + (await env.get_current_time() - utcnow())


async def test_request_expires_after_thirty_days(
    ts_env: WorkflowEnvironment,
    ts_queue: str,
    engine: Engine,
    org: Credentials,
    settings: Settings,
) -> None:
    assert settings.request_expiry == timedelta(days=30)
    bundle = insert_request(
        engine,
        org.organization_id,
        credentials=("Rent", "Utilities"),
        expiry=await virtual_expiry(ts_env, settings.request_expiry),
        internal_id="ext-expiry",
    )
    assert await start_request_workflow(ts_env.client, ts_queue, bundle)
    handle = request_handle(ts_env.client, bundle.request.id)

    result = await skip_to_result(ts_env, handle)

    assert result == CredentialRequestResult(request_id=bundle.request.id, status="EXPIRED")
    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert stored.request.status == "EXPIRED"
    assert stored.request.canceled_at is None
    assert [c.status for c in stored.credentials] == ["EXPIRED", "EXPIRED"]
    desc = await handle.describe()
    assert desc.status == WorkflowExecutionStatus.COMPLETED
    assert desc.typed_search_attributes.get(SA_STATUS) == "EXPIRED"
    assert desc.typed_search_attributes.get(SA_OUTCOME) == "EXPIRED"
    assert desc.typed_search_attributes.get(SA_ORGANIZATION) == org.organization_id
    assert desc.typed_search_attributes.get(SA_INTERNAL_ID) == "ext-expiry"
    assert desc.close_time is not None
    lifetime = desc.close_time - desc.start_time
    assert timedelta(days=30) - timedelta(minutes=1) <= lifetime < timedelta(days=30, minutes=5)


async def test_shorter_expiry_from_settings(
    ts_env: WorkflowEnvironment,
    ts_queue: str,
    engine: Engine,
    org: Credentials,
    settings: Settings,
) -> None:
    short = settings.model_copy(update={"request_expiry": timedelta(hours=2)})
    bundle = insert_request(
        engine, org.organization_id, expiry=await virtual_expiry(ts_env, short.request_expiry)
    )
    assert await start_request_workflow(ts_env.client, ts_queue, bundle)
    handle = request_handle(ts_env.client, bundle.request.id)

    assert (await skip_to_result(ts_env, handle)).status == "EXPIRED"
    desc = await handle.describe()
    assert desc.close_time is not None
    lifetime = desc.close_time - desc.start_time
    assert timedelta(hours=2) - timedelta(minutes=1) <= lifetime < timedelta(hours=2, minutes=5)
    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert stored.request.status == "EXPIRED" and [c.status for c in stored.credentials] == ["EXPIRED"]


async def test_expiry_in_the_past_expires_at_once(
    ts_env: WorkflowEnvironment,
    ts_queue: str,
    engine: Engine,
    org: Credentials,
) -> None:
    """A workflow started late (by the reconciler) for a request already past its expiry."""
    bundle = insert_request(
        engine, org.organization_id, expiry=await virtual_expiry(ts_env, -timedelta(days=1))
    )
    assert await start_request_workflow(ts_env.client, ts_queue, bundle)
    handle = request_handle(ts_env.client, bundle.request.id)
    assert (await skip_to_result(ts_env, handle)).status == "EXPIRED"
    desc = await handle.describe()
    assert desc.close_time is not None and desc.close_time - desc.start_time < timedelta(minutes=1)
    assert [c.status for c in db_request(engine, org.organization_id, bundle.request.id).credentials] == [
        "EXPIRED"
    ]


def api_with(
    settings: Settings, temporal: Client, org: Credentials, **changes: Any
) -> contextlib.AbstractAsyncContextManager[SignedClient]:
    """The real app with some settings changed, for ``org``."""

    @contextlib.asynccontextmanager
    async def signed() -> AsyncIterator[SignedClient]:
        app = create_app(settings.model_copy(update=changes), temporal=temporal)
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
            yield SignedClient(client, org)

    return signed()


async def test_settings_expiry_through_the_api(
    ts_env: WorkflowEnvironment,
    ts_queue: str,
    engine: Engine,
    org: Credentials,
    settings: Settings,
) -> None:
    """The expiry comes from the settings (MANDATUM_REQUEST_EXPIRY), on the time-skipping server:
    two hours pass in virtual time, so no real clock races anything."""
    expiry = await virtual_expiry(ts_env, timedelta(hours=2))
    async with api_with(settings, ts_env.client, org, request_expiry=expiry, task_queue=ts_queue) as api:
        data = await create(api)
        assert parse_time(data["expiresAt"]) - parse_time(data["createdAt"]) == pytest.approx(
            expiry, abs=timedelta(milliseconds=2)
        )
        handle = request_handle(ts_env.client, data["id"])

        assert (await skip_to_result(ts_env, handle)).status == "EXPIRED"

        after = await get(api, data["id"])
    assert (after["status"], after["canceledAt"]) == ("EXPIRED", None)
    assert [c["status"] for c in after["credentials"]] == ["EXPIRED"]
    desc = await handle.describe()
    assert desc.typed_search_attributes.get(SA_STATUS) == "EXPIRED"
    assert desc.close_time is not None
    lifetime = desc.close_time - desc.start_time
    assert timedelta(hours=2) - timedelta(minutes=1) <= lifetime < timedelta(hours=2, minutes=5)


async def test_a_cancel_before_the_settings_expiry(
    temporal: Client,
    worker: None,
    engine: Engine,
    org: Credentials,
    settings: Settings,
) -> None:
    """A cancel before the expiry means the request never expires. On the dev server (the
    time-skipping server loses the updates of workflows that have closed) with an expiry of an
    hour, so the cancel comes first however slow the machine is."""
    async with api_with(settings, temporal, org, request_expiry=timedelta(hours=1)) as api:
        kept, canceled = await create(api), await create(api)
        for data in (kept, canceled):
            assert parse_time(data["expiresAt"]) - parse_time(data["createdAt"]) == pytest.approx(
                timedelta(hours=1), abs=timedelta(milliseconds=2)
            )
        assert (await api.delete(f"/request/{canceled['id']}")).status_code == 200

        handle = request_handle(temporal, canceled["id"])
        assert (await result_of(handle)).status == "CANCELED"
        stored = db_request(engine, org.organization_id, canceled["id"])
        assert stored.request.status == "CANCELED" and stored.request.canceled_at is not None
        assert [c.status for c in stored.credentials] == ["CANCELED"]
        desc = await handle.describe()
        assert desc.typed_search_attributes.get(SA_STATUS) == "CANCELED"
        assert desc.close_time is not None and desc.close_time < parse_time(canceled["expiresAt"])
        # the workflow is closed: no expiry timer is left to fire, and the expiry was never recorded
        history = await handle.fetch_history()
        assert not any(e.HasField("timer_fired_event_attributes") for e in history.events)
        assert ActivityNames.RECORD_EXPIRY not in [
            e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        ]
        assert_error_shape(await api.delete(f"/request/{canceled['id']}"), 409)
        # the other one waits for its expiry, untouched by the cancel
        assert (
            await request_handle(temporal, kept["id"]).describe()
        ).status == WorkflowExecutionStatus.RUNNING
        assert db_request(engine, org.organization_id, kept["id"]).request.status == "PENDING"
        assert (await api.delete(f"/request/{kept['id']}")).status_code == 200


# --- races with expiry, forced with gated activities ---------------------------------------------


async def test_cancel_and_decide_while_expiry_is_being_recorded(
    temporal: Client,
    engine: Engine,
    org: Credentials,
    gated: tuple[str, GatedActivities],
) -> None:
    queue, acts = gated
    bundle = insert_request(engine, org.organization_id, expiry=timedelta(seconds=1))
    assert await start_request_workflow(temporal, queue, bundle)
    handle = request_handle(temporal, bundle.request.id)
    await acts.expiry.wait_entered()  # the expiry timer fired and its database write is under way

    late_cancel = await refused(cancel(handle))
    assert late_cancel.type == "not_active"
    late_decision = await refused(decide(handle, bundle.subjects[0][1].id, bundle.credentials[0].id))
    assert late_decision.type == "not_active"
    acts.expiry.release.set()

    assert (await result_of(handle)).status == "EXPIRED"
    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert stored.request.status == "EXPIRED" and stored.request.canceled_at is None
    assert [c.status for c in stored.credentials] == ["EXPIRED"] and stored.decisions == {}
    assert (await handle.describe()).typed_search_attributes.get(SA_STATUS) == "EXPIRED"


async def test_expiry_waits_for_a_decision_in_flight(
    temporal: Client,
    engine: Engine,
    org: Credentials,
    gated: tuple[str, GatedActivities],
) -> None:
    """A decision accepted before the expiry is stored, and stored before the expiry is.

    The decision must be under way when the expiry timer fires (real time, on the dev server: the
    time-skipping server does not skip while an activity is held). That precondition is checked,
    not assumed: on a machine too slow to get the decision in before the expiry, the scenario runs
    again with twice the expiry. Then the test waits for the timer to have fired, not a fixed time.
    """
    queue, acts = gated
    expiry = timedelta(seconds=3)
    while True:
        bundle = insert_request(
            engine, org.organization_id, contacts=("ana@example.com", "bea@example.com"), expiry=expiry
        )
        # revision 1: the decision's write is an activity, during which the timer fires; from
        # revision 2 it runs in the update's task (ADR 24), which the timer's firing waits for
        await start_on_revision(temporal, queue, bundle, 1)
        handle = request_handle(temporal, bundle.request.id)
        ana, credential = bundle.subjects[0][1].id, bundle.credentials[0].id
        decision = asyncio.create_task(decide(handle, ana, credential, accept=False))
        entered = asyncio.create_task(asyncio.to_thread(acts.decision.entered.wait, 60))
        await asyncio.wait({decision, entered}, return_when=asyncio.FIRST_COMPLETED)
        if acts.decision.entered.is_set():
            break
        # too slow: the expiry came first and refused the decision; try again with a longer one
        assert (await refused(decision)).type == "not_active"
        acts.expiry.release.set()
        assert (await result_of(handle)).status == "EXPIRED"
        acts.decision.entered.set()  # ends the wait above: this gate is done with
        await entered
        acts.expiry, acts.decision = Gate(), Gate()
        expiry *= 2
        assert expiry <= timedelta(minutes=1), "the decision never got in before the expiry"
    await history_has(handle, "timer_fired_event_attributes", expiry.total_seconds() + UPDATE_TIMEOUT)
    assert not acts.expiry.entered.is_set()  # the expiry waits for the accepted decision
    assert (await refused(cancel(handle))).type in {"already_decided", "not_active"}
    acts.decision.release.set()
    acts.expiry.release.set()

    assert (await decision).request_status == "PENDING"
    assert (await result_of(handle)).status == "EXPIRED"
    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert stored.request.status == "EXPIRED"
    assert [c.status for c in stored.credentials] == ["REJECTED"]
    assert [(d.subject_id, d.accepted) for d, _ in stored.decisions[credential]] == [(ana, False)]
