"""The credential-request workflow's updates, on the dev server and through the API where the API is
the caller: cancel, decisions and their validators, search attributes and visibility, an update in
the first workflow task, and races between updates (one forced with activities that wait on a
gate, so it is deterministic). Expiry: test_credential_request_expiry.py.
"""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Engine
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from core.settings import Settings
from orchestration.temporal import request_handle, start_request_workflow
from tests.support.api_client import Credentials, SignedClient, assert_error_shape, policy_request
from tests.support.workflow import (
    GatedActivities,
    cancel,
    create,
    db_request,
    decide,
    fresh_queue,
    get,
    insert_request,
    parse_time,
    refused,
    result_of,
    start_on_revision,
    status_of,
    subject_uuid,
)
from worker import build_worker
from workflows.ids import (
    SA_INTERNAL_ID,
    SA_ORGANIZATION,
    SA_OUTCOME,
    SA_SECURITY_LEVEL,
    SA_STATUS,
)
from workflows.messages import (
    CredentialRequestResult,
    DecisionResult,
)

DECISION_ID = re.compile(
    r"^urn:via:decision:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)


# --- helpers -------------------------------------------------------------------------------------


def to_ms(value: datetime) -> datetime:
    """The API renders times to the millisecond."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


async def wait_for_visibility(client: Client, query: str, expected: int) -> list[str]:
    """Workflow ids matching a visibility query; visibility lags a little behind the writes."""
    ids: list[str] = []
    for _ in range(50):
        ids = [wf.id async for wf in client.list_workflows(query=query)]
        if len(ids) >= expected:
            return ids
        await asyncio.sleep(0.1)
    return ids


# --- the workflow through the API, on the dev server --------------------------------------------


def two_credentials() -> list[dict[str, Any]]:
    base = policy_request()["credentials"][0]
    return [{**base, "name": "Rent payments"}, {**base, "name": "Utility payments"}]


async def test_cancel_through_the_api(
    api: SignedClient,
    temporal: Client,
    engine: Engine,
    org: Credentials,
) -> None:
    data = await create(api, internalId="ext-cancel")
    handle = request_handle(temporal, data["id"])

    resp = await api.delete(f"/request/{data['id']}")

    assert resp.status_code == 200 and resp.json() == {"success": True}
    assert await result_of(handle) == CredentialRequestResult(request_id=data["id"], status="CANCELED")
    after = await get(api, data["id"])
    assert after["status"] == "CANCELED"
    assert [c["status"] for c in after["credentials"]] == ["CANCELED"]
    view = await status_of(handle)
    assert view.status == "CANCELED" and view.canceled_at is not None
    stored = db_request(engine, org.organization_id, data["id"]).request
    assert stored.canceled_at == view.canceled_at  # the workflow's time, stored as is
    assert stored.canceled_by == f"apiKey:{org.key_id}"
    assert parse_time(after["canceledAt"]) == to_ms(view.canceled_at)
    desc = await handle.describe()
    assert desc.typed_search_attributes.get(SA_STATUS) == "CANCELED"
    assert desc.typed_search_attributes.get(SA_OUTCOME) == "CANCELED"
    assert desc.typed_search_attributes.get(SA_INTERNAL_ID) == "ext-cancel"
    assert_error_shape(await api.delete(f"/request/{data['id']}"), 409)


async def test_search_attributes_at_start_and_visibility(
    api: SignedClient,
    temporal: Client,
    org: Credentials,
) -> None:
    data = await create(api, internalId="ext-sa", securityLevel="PLATFORM_KYC")
    other = await create(api)
    handle = request_handle(temporal, data["id"])

    desc = await handle.describe()
    sa = desc.typed_search_attributes
    assert sa.get(SA_ORGANIZATION) == org.organization_id
    assert sa.get(SA_STATUS) == "PENDING"
    assert sa.get(SA_SECURITY_LEVEL) == "PLATFORM_KYC"
    assert sa.get(SA_INTERNAL_ID) == "ext-sa"
    assert sa.get(SA_OUTCOME) is None  # pending: no outcome yet
    assert (await request_handle(temporal, other["id"]).describe()).typed_search_attributes.get(
        SA_INTERNAL_ID
    ) is None
    assert desc.status == WorkflowExecutionStatus.RUNNING

    query = f'MandatumOrganization="{org.organization_id}"'
    found = await wait_for_visibility(temporal, query, 2)
    assert sorted(found) == sorted(f"credential-request:{d['id']}" for d in (data, other))
    by_internal = await wait_for_visibility(
        temporal, f'{query} AND MandatumInternalId="ext-sa" AND MandatumStatus="PENDING"', 1
    )
    assert by_internal == [f"credential-request:{data['id']}"]
    for d in (data, other):
        assert (await api.delete(f"/request/{d['id']}")).status_code == 200
    canceled = await wait_for_visibility(temporal, f'{query} AND MandatumStatus="CANCELED"', 2)
    assert len(canceled) == 2


async def test_decision_is_recorded_and_blocks_cancel(
    api: SignedClient,
    temporal: Client,
    engine: Engine,
    org: Credentials,
) -> None:
    data = await create(api, contacts=["ana@example.com", "bea@example.com"])
    handle = request_handle(temporal, data["id"])
    ana, bea = (subject_uuid(s["id"]) for s in data["subjects"])
    credential_id = data["credentials"][0]["id"]

    result = await decide(handle, ana, credential_id, accept=True)

    assert DECISION_ID.match(result.decision_id)
    assert result.request_status == "PENDING"
    after = await get(api, data["id"])
    assert after["status"] == "PENDING" and after["canceledAt"] is None
    [decision] = after["credentials"][0]["decisions"]
    assert decision == {
        "id": result.decision_id,
        "contact": "ana@example.com",
        "accepted": True,
        "decidedAt": decision["decidedAt"],
    }
    assert parse_time(decision["decidedAt"]) == to_ms(result.decided_at)
    [(stored, _)] = db_request(engine, org.organization_id, data["id"]).decisions[credential_id]
    assert (stored.id, stored.decided_at, stored.channel, stored.surface) == (
        result.decision_id,
        result.decided_at,
        "email",
        "hosted",
    )
    view = await status_of(handle)
    assert view.status == "PENDING" and view.awaiting == 1
    assert [(d.subject_id, d.credential_id, d.accepted, d.decision_id) for d in view.decisions] == [
        (ana, credential_id, True, result.decision_id)
    ]

    body = assert_error_shape(await api.delete(f"/request/{data['id']}"), 409)
    assert "decided" in body["message"]
    assert (await status_of(handle)).status == "PENDING"
    assert (await get(api, data["id"]))["canceledAt"] is None
    # bea has not decided yet: the workflow keeps running and still takes her decision
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    assert (await decide(handle, bea, credential_id, accept=False)).request_status == "COMPLETED"
    assert (await result_of(handle)).status == "COMPLETED"


async def test_decide_validators(api: SignedClient, temporal: Client) -> None:
    data = await create(api, contacts=["ana@example.com", "bea@example.com"])
    other = await create(api, contacts=["carl@example.com"])
    handle = request_handle(temporal, data["id"])
    ana = subject_uuid(data["subjects"][0]["id"])
    credential_id = data["credentials"][0]["id"]

    unknown_subject = await refused(
        decide(handle, subject_uuid(other["subjects"][0]["id"]), credential_id, confirm=False)
    )
    assert unknown_subject.type == "unknown_subject"
    unknown_credential = await refused(decide(handle, ana, other["credentials"][0]["id"]))
    assert unknown_credential.type == "unknown_credential"
    await decide(handle, ana, credential_id, accept=False)
    twice = await refused(decide(handle, ana, credential_id, accept=True))
    assert twice.type == "already_decided"
    assert (await refused(cancel(handle))).type == "already_decided"

    view = await status_of(handle)
    assert view.awaiting == 1 and [d.accepted for d in view.decisions] == [False]
    after = await get(api, data["id"])
    assert [d["accepted"] for d in after["credentials"][0]["decisions"]] == [False]
    assert after["credentials"][0]["status"] == "REJECTED"
    assert (await get(api, other["id"]))["credentials"][0]["decisions"] == []


async def test_every_decision_completes_the_request(api: SignedClient, temporal: Client) -> None:
    data = await create(api, contacts=["ana@example.com", "bea@example.com"], credentials=two_credentials())
    handle = request_handle(temporal, data["id"])
    subjects = [subject_uuid(s["id"]) for s in data["subjects"]]
    rent, utilities = (c["id"] for c in data["credentials"])
    plan = [
        (subjects[0], rent, True),
        (subjects[1], rent, True),
        (subjects[0], utilities, False),
        (subjects[1], utilities, True),
    ]

    results = []
    for i, (subject, credential, accept) in enumerate(plan):
        results.append(await decide(handle, subject, credential, accept))
        view = await status_of(handle)
        assert view.awaiting == len(plan) - i - 1
    assert [r.request_status for r in results] == ["PENDING", "PENDING", "PENDING", "COMPLETED"]
    assert await result_of(handle) == CredentialRequestResult(request_id=data["id"], status="COMPLETED")

    after = await get(api, data["id"])
    assert after["status"] == "COMPLETED" and after["canceledAt"] is None
    # rent was accepted by both and is issued (shown under its mandate id); utilities was rejected
    assert [c["status"] for c in after["credentials"]] == ["ACTIVE", "REJECTED"]
    assert [r.mandate_id is not None for r in results] == [False, True, False, False]
    assert after["credentials"][0]["id"] == results[1].mandate_id
    rent = str(results[1].mandate_id)
    stored = {(d["contact"], c["id"]): d for c in after["credentials"] for d in c["decisions"]}
    assert {k: v["accepted"] for k, v in stored.items()} == {
        ("ana@example.com", rent): True,
        ("bea@example.com", rent): True,
        ("ana@example.com", utilities): False,
        ("bea@example.com", utilities): True,
    }
    assert sorted(v["id"] for v in stored.values()) == sorted(r.decision_id for r in results)
    completed = (await handle.describe()).typed_search_attributes
    # ana rejected utilities: the request is partly approved
    assert (completed.get(SA_STATUS), completed.get(SA_OUTCOME)) == ("COMPLETED", "PARTLY_APPROVED")
    assert (await status_of(handle)).awaiting == 0
    assert_error_shape(await api.delete(f"/request/{data['id']}"), 409)


async def test_decision_and_cancel_racing_never_both_land(
    api: SignedClient,
    temporal: Client,
) -> None:
    """Sent at the same moment, exactly one of them wins and the database agrees with it."""
    for _ in range(3):
        data = await create(api, contacts=["ana@example.com", "bea@example.com"])
        handle = request_handle(temporal, data["id"])
        ana = subject_uuid(data["subjects"][0]["id"])
        outcomes = await asyncio.gather(
            decide(handle, ana, data["credentials"][0]["id"]),
            cancel(handle),
            return_exceptions=True,
        )
        won = [not isinstance(o, BaseException) for o in outcomes]
        assert won.count(True) == 1, outcomes
        after = await get(api, data["id"])
        decisions = after["credentials"][0]["decisions"]
        if won[0]:
            assert isinstance(outcomes[1], WorkflowUpdateFailedError)
            assert len(decisions) == 1 and after["canceledAt"] is None and after["status"] == "PENDING"
            assert (await api.delete(f"/request/{data['id']}")).status_code == 409
        else:
            assert decisions == [] and after["canceledAt"] is not None
            assert after["status"] == "CANCELED"
            assert (await result_of(handle)).status == "CANCELED"


async def test_update_in_the_first_workflow_task(
    temporal: Client,
    engine: Engine,
    settings: Settings,
    org: Credentials,
    executor: ThreadPoolExecutor,
) -> None:
    """A cancel sent right after the start (DELETE of a request the reconciler had not started yet)
    is delivered with the start itself, before run() begins: the handlers must already have the input.
    """
    queue = fresh_queue()
    bundle = insert_request(engine, org.organization_id)
    assert await start_request_workflow(temporal, queue, bundle)
    handle = request_handle(temporal, bundle.request.id)
    pending = asyncio.create_task(cancel(handle, by="first-task"))
    await asyncio.sleep(1)  # admitted by the server while no worker polls: it joins the first task
    assert not pending.done()

    async with build_worker(temporal, engine, queue, executor, settings):
        canceled = await pending
        assert await result_of(handle) == CredentialRequestResult(
            request_id=bundle.request.id, status="CANCELED"
        )
    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert stored.request.canceled_at == canceled.canceled_at
    assert stored.request.canceled_by == "first-task"


# --- a race forced with gated activities ---------------------------------------------------------


async def test_cancel_while_a_completing_decision_is_recorded(
    temporal: Client,
    engine: Engine,
    org: Credentials,
    gated: tuple[str, GatedActivities],
) -> None:
    queue, acts = gated
    bundle = insert_request(engine, org.organization_id)
    assert await start_request_workflow(temporal, queue, bundle)
    handle = request_handle(temporal, bundle.request.id)
    decision = asyncio.create_task(decide(handle, bundle.subjects[0][1].id, bundle.credentials[0].id))
    await acts.decision.wait_entered()

    assert (await refused(cancel(handle))).type == "already_decided"
    acts.decision.release.set()

    assert (await decision).request_status == "COMPLETED"
    assert (await result_of(handle)).status == "COMPLETED"
    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert stored.request.status == "COMPLETED" and stored.request.canceled_at is None


@pytest.mark.parametrize("revision", [1, 2])
async def test_a_resubmit_while_the_closing_decision_is_recorded_answers_as_the_first(
    temporal: Client,
    engine: Engine,
    org: Credentials,
    gated: tuple[str, GatedActivities],
    revision: int,
) -> None:
    """The subject's form got a 503 while the decision that closes the request was being written
    (a worker crash); their second submit of the same choice waits for that write and answers as
    the first does, never "no longer open". Another choice is refused. On revision 1 the write is
    an activity, and the workflow refuses the other choice while it runs; on revision 2 it runs in
    the update's own task (ADR 24), so both submits wait for it."""
    queue, acts = gated
    bundle = insert_request(engine, org.organization_id)
    await start_on_revision(temporal, queue, bundle, revision)
    handle = request_handle(temporal, bundle.request.id)
    subject, credential = bundle.subjects[0][1].id, bundle.credentials[0].id
    first = asyncio.create_task(decide(handle, subject, credential, accept=True))
    await acts.decision.wait_entered()

    other = asyncio.create_task(refused(decide(handle, subject, credential, accept=False)))
    if revision == 1:
        assert (await other).type == "already_decided"
    second = asyncio.create_task(decide(handle, subject, credential, accept=True))
    await asyncio.sleep(0.5)
    assert not second.done()  # it waits for the first's write, which the gate holds
    assert revision == 1 or not other.done()
    acts.decision.release.set()

    answers = [await first]
    if revision == 1:
        assert (await other).type == "already_decided"
        answers.append(await second)
    else:
        # they reach the workflow after the write, in the task that closes it or after it: each
        # is answered (as the first; refused as decided) or aborted with the closing workflow,
        # which services.journey.decide answers from the database (tests/services/test_journey.py)
        resubmit, changed = await asyncio.gather(second, other, return_exceptions=True)
        assert _aborted(changed) or (
            isinstance(changed, ApplicationError) and changed.type == "already_decided"
        )
        assert isinstance(resubmit, DecisionResult) or _aborted(resubmit)
        answers.append(resubmit if isinstance(resubmit, DecisionResult) else answers[0])
    assert answers[0] == answers[1]
    assert answers[0].request_status == "COMPLETED" and answers[0].mandate_id is not None
    assert DECISION_ID.match(answers[0].decision_id)
    assert (await result_of(handle)).status == "COMPLETED"
    stored = db_request(engine, org.organization_id, bundle.request.id)
    assert [d.id for d, _ in stored.decisions[credential]] == [answers[0].decision_id]
    assert [c.mandate_id for c in stored.credentials] == [answers[0].mandate_id]


def _aborted(outcome: object) -> bool:
    closed = ("aborted by closing workflow", "workflow execution already completed")
    return isinstance(outcome, RPCError) and any(phrase in str(outcome) for phrase in closed)
