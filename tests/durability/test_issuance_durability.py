"""A worker killed in the middle of issuing a credential never yields two credentials.

The real worker process (``python -m worker``) dies abruptly (exit 137, like a kill -9) at a crash
point of the issuance activity (``activities/mandates.py``): before the issuing transaction, or
after its commit but before the activity reports back, with the ``decide`` update that completes
the acceptance in flight. A normally started worker must finish it, with exactly one signed
credential and one status list entry.
Stacks are built as in tests/durability/test_durability.py (fixture ``stack``:
tests/support/durability.py). Last, two
acceptances of one credential at once issue it once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import select
from temporalio import activity
from temporalio.api.enums.v1 import PendingWorkflowTaskState
from temporalio.client import Client, WorkflowHandle

from activities.requests import RequestActivities
from cli.devstack import EXAMPLE_ACTION_ID
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle, start_request_workflow
from store import actions, keys
from store import requests as store
from store.db import read_session
from store.tables import Credential, Decision
from tests.support.api_client import Credentials
from tests.support.durability import (
    MASTER_KEY,
    IssuingWorker,
    Stack,
    allocated,
    retry_now,
    worker_settings,
)
from tests.support.journey_messages import journey_secrets
from tests.support.workflow import (
    Gate,
    activities_with,
    activity_runs,
    db_request,
    decide,
    fresh_queue,
    insert_request,
    result_of,
    running_worker,
    start_on_revision,
)
from trust import credentials as vc
from trust.did import web_subject_did
from workflows.ids import SA_STATUS, ActivityNames
from workflows.messages import (
    DecisionInput,
    DecisionResult,
    DecisionWritten,
    IssueCredentialResult,
    RecordDecisionInput,
    RecordedDecision,
)

CRASH_POINTS = ["issue:before", "issue:after-commit"]


@dataclass
class Scene:
    """Two subjects; ``mandate`` pins the example action, ``other`` is rejected by ana."""

    handle: WorkflowHandle[Any, Any]
    request_id: str
    ana: str
    bea: str
    mandate: str
    other: str


async def started_request(stack: Stack) -> Scene:
    org_id = stack.org.organization_id
    pin, problems = actions.pin_for_request(
        stack.engine, org_id, EXAMPLE_ACTION_ID, {"maxAmount": 1200}, where="credentials.0.action"
    )
    assert pin is not None, problems
    new = store.NewRequest(
        security_level="CONTACT",
        contacts=[store.NewContact("ana@example.com", "email"), store.NewContact("bea@example.com", "email")],
        credentials=[
            store.NewCredential("POLICY", "Rent payments", scope="payments", action=pin),
            store.NewCredential("POLICY", "Other", scope="other"),
        ],
        name="Pay the rent",
    )
    bundle = store.create_request(stack.engine, org_id, new, timedelta(days=30), 10_000, None, None)
    assert isinstance(bundle, store.RequestBundle)
    assert await start_request_workflow(stack.client, stack.queue, bundle)
    (_, ana), (_, bea) = bundle.subjects
    mandate, other = (c.id for c in bundle.credentials)
    return Scene(
        request_handle(stack.client, bundle.request.id), bundle.request.id, ana.id, bea.id, mandate, other
    )


def credentials_of(engine: Engine, request_id: str) -> dict[str, Credential]:
    with read_session(engine) as session:
        rows = session.exec(select(Credential).where(Credential.request_id == request_id))
        return {row.id: row for row in rows}


def holders_of_entry(engine: Engine, list_id: str, index: int) -> list[str]:
    with read_session(engine) as session:
        return list(
            session.exec(
                select(Credential.id).where(
                    Credential.status_list_id == list_id, Credential.status_list_index == index
                )
            )
        )


async def decide_until_the_worker_dies(
    stack: Stack, scene: Scene, crash_at: str
) -> asyncio.Task[DecisionResult]:
    """Every decision but the last on a worker told to crash at ``crash_at``; the last one, which
    completes ``scene.mandate``'s acceptance, is left in flight when the worker dies in issuance."""
    crashing = IssuingWorker(stack, "crashing", crash_at)
    try:
        box, keys = stack.var_dir / "outbox", journey_secrets(MASTER_KEY)  # the worker process's
        for subject, credential, accept in (
            (scene.ana, scene.mandate, True),
            (scene.ana, scene.other, False),
            (scene.bea, scene.other, True),
        ):
            decided = await decide(scene.handle, subject, credential, accept, outbox=box, secrets=keys)
            assert decided.mandate_id is None
        final = asyncio.create_task(
            scene.handle.execute_update(
                "decide",
                DecisionInput(
                    subject_id=scene.bea,
                    credential_id=scene.mandate,
                    accept=True,
                    channel="email",
                    surface="hosted",
                ),
                result_type=DecisionResult,
            )
        )
        try:
            assert await crashing.exit_code(20) == 137, crashing.output()
            await asyncio.sleep(0.2)
            assert not final.done(), final
        except BaseException:
            final.cancel()
            raise
    finally:
        crashing.stop()
    return final


async def restart_and_finish(
    stack: Stack, scene: Scene, final: asyncio.Task[DecisionResult]
) -> DecisionResult:
    """A normal worker process; the in-flight update completes once the issuance is run again.

    The issuance is a local activity: it died with the workflow task that ran it, which the server
    hands to another worker once that task's timeout (10 s) has passed."""
    described = (await scene.handle.describe()).raw_description
    assert list(described.pending_activities) == []
    assert (described.pending_workflow_task.state, described.pending_workflow_task.attempt) == (
        PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED,
        1,
    )
    await retry_now(stack, scene.handle, activity_type=None)
    restarted = IssuingWorker(stack, "restarted")
    try:
        result = await asyncio.wait_for(final, 30)
        assert (await result_of(scene.handle)).status == "COMPLETED"
    finally:
        assert restarted.stop() == 0, restarted.output()
    return result


async def issuance_attempts(handle: WorkflowHandle[Any, Any]) -> list[tuple[int, bool, bool]]:
    """(attempt, local, newly_issued) of every completed issuance in the workflow's history: an
    issuance's own activity (revision 2), or a decision's one write that issued (revision 3)."""
    attempts = []
    for run in activity_runs((await handle.fetch_history()).events):
        if run.result is None:
            continue
        if run.type == ActivityNames.ISSUE_CREDENTIAL:
            issued = IssueCredentialResult.model_validate_json(run.result.data)
        elif run.type == ActivityNames.WRITE_DECISION:
            written = DecisionWritten.model_validate_json(run.result.data)
            if written.issued is None:
                continue
            issued = written.issued
        else:
            continue
        attempts.append((run.attempt, run.local, issued.newly_issued))
    return attempts


@pytest.mark.parametrize("crash_at", CRASH_POINTS)
async def test_a_worker_killed_mid_issuance_issues_exactly_once(stack: Stack, crash_at: str) -> None:
    scene = await started_request(stack)
    before = allocated(stack.engine)
    final = await decide_until_the_worker_dies(stack, scene, crash_at)
    try:
        # what the crash left: nothing issued (before), or the credential committed (after commit)
        crashed = credentials_of(stack.engine, scene.request_id)[scene.mandate]
        if crash_at == "issue:before":
            assert (crashed.status, crashed.mandate_id, allocated(stack.engine)) == ("PENDING", None, before)
        else:
            assert crashed.status == "ACTIVE" and crashed.mandate_id is not None
            assert allocated(stack.engine) == before + 1
        result = await restart_and_finish(stack, scene, final)
    finally:
        final.cancel()

    rows = credentials_of(stack.engine, scene.request_id)
    issued = [row for row in rows.values() if row.mandate_id is not None]
    assert [row.id for row in issued] == [scene.mandate]
    [cred] = issued
    assert result.mandate_id == cred.mandate_id and result.request_status == "COMPLETED"
    assert cred.mandate_id is not None and cred.mandate_id.startswith("urn:via:credential:")
    # the run in the new worker's task (its first attempt there) issued (crash before) or found
    # what the dead attempt committed (after); the dead one left nothing in the history
    assert await issuance_attempts(scene.handle) == [(1, True, crash_at == "issue:before")]
    if crash_at == "issue:after-commit":
        assert (cred.mandate_id, cred.issued_at, cred.w3c_credential) == (
            crashed.mandate_id,
            crashed.issued_at,
            crashed.w3c_credential,
        )
    assert (cred.status, rows[scene.other].status, rows[scene.other].mandate_id) == (
        "ACTIVE",
        "REJECTED",
        None,
    )
    mandate = cred.w3c_credential
    assert mandate is not None and mandate["id"] == cred.mandate_id
    assert mandate["credentialSubject"]["mandate"]["action"] == cred.action
    vc.verify_mandate(mandate, keys.did_resolver(stack.engine, worker_settings(stack)))
    assert cred.status_list_id is not None and cred.status_list_index is not None
    assert mandate["credentialStatus"]["statusListIndex"] == str(cred.status_list_index)
    assert allocated(stack.engine) == before + 1  # one entry, for this issuance
    assert holders_of_entry(stack.engine, cred.status_list_id, cred.status_list_index) == [cred.id]
    assert db_request(stack.engine, stack.org.organization_id, scene.request_id).request.status == "COMPLETED"


async def test_a_resubmit_after_the_crash_answers_as_the_first_submit(stack: Stack) -> None:
    """Issue 32: the subject's form got no answer while the worker died issuing the mandate their
    decision completed; the same decision submitted again (with the decision and the request's
    close already claimed) answers what the first answers once a worker finishes it."""
    scene = await started_request(stack)
    final = await decide_until_the_worker_dies(stack, scene, "issue:after-commit")
    again = asyncio.create_task(
        scene.handle.execute_update(
            "decide",
            DecisionInput(
                subject_id=scene.bea,
                credential_id=scene.mandate,
                accept=True,
                channel="email",
                surface="hosted",
            ),
            result_type=DecisionResult,
        )
    )
    try:
        first = await restart_and_finish(stack, scene, final)
        second = await asyncio.wait_for(again, 30)
    finally:
        again.cancel()
    assert second == first and first.request_status == "COMPLETED" and first.mandate_id is not None
    issued = [r.mandate_id for r in credentials_of(stack.engine, scene.request_id).values() if r.mandate_id]
    assert issued == [first.mandate_id]


# --- two acceptances at once -------------------------------------------------------------------


class HoldingOneDecision(RequestActivities):
    """The real activities; the decision of subject ``held`` is written once the test releases it."""

    def __init__(self, engine: Engine, held: str) -> None:
        super().__init__(engine)
        self.held, self.gate = held, Gate()

    @activity.defn(name=ActivityNames.RECORD_DECISION)
    def record_decision(self, inp: RecordDecisionInput) -> RecordedDecision:
        if inp.subject_id == self.held:
            self.gate.pass_through()
        return super().record_decision(inp)


def _written(engine: Engine, subject_id: str, credential_id: str) -> bool:
    with read_session(engine) as session:
        found = session.exec(
            select(Decision).where(Decision.subject_id == subject_id, Decision.credential_id == credential_id)
        ).first()
    return found is not None


async def _decision_written(engine: Engine, subject_id: str, credential_id: str) -> None:
    for _ in range(200):
        if _written(engine, subject_id, credential_id):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the decision of {subject_id} was never written")


@pytest.mark.parametrize("revision", [1, 2])
async def test_two_subjects_accepting_at_once_issue_one_credential(
    temporal: Client,
    engine: Engine,
    settings: Settings,
    cipher: SecretCipher,
    org: Credentials,
    revision: int,
) -> None:
    """ana's acceptance is still being written when bea's, the last one, lands: bea's update waits
    for ana's write before issuing (the issuance reads the decisions from the database), and both
    answer with the one mandate. On revision 1 bea's decision is written meanwhile (an activity);
    on revision 2 ana's write runs in her update's task (ADR 24), and bea's update waits for it."""
    bundle = insert_request(engine, org.organization_id, contacts=("ana@example.com", "bea@example.com"))
    (_, ana), (_, bea) = bundle.subjects
    cred = bundle.credentials[0].id
    queue, acts = fresh_queue(), HoldingOneDecision(engine, ana.id)
    async with running_worker(temporal, queue, activities_with(engine, settings, acts)):
        await start_on_revision(temporal, queue, bundle, revision)
        handle = request_handle(temporal, bundle.request.id)
        first = asyncio.create_task(decide(handle, ana.id, cred))
        try:
            await acts.gate.wait_entered()  # ana's acceptance is being written
            second = asyncio.create_task(decide(handle, bea.id, cred))  # bea's completes it
            if revision == 1:
                await _decision_written(engine, bea.id, cred)
            await asyncio.sleep(0.3)
            assert revision == 1 or not _written(engine, bea.id, cred)
            assert not second.done(), "bea's update issued before ana's acceptance was written"
            assert credentials_of(engine, bundle.request.id)[cred].mandate_id is None
        finally:
            acts.gate.release.set()
        earlier, last = await first, await second
        assert last.request_status == "COMPLETED"
        assert last.mandate_id is not None
        # revision 2: ana's answer came before bea's update ran, when the credential was not issued
        assert earlier.mandate_id == (last.mandate_id if revision == 1 else None)
        assert (await result_of(handle)).status == "COMPLETED"
        assert (await handle.describe()).typed_search_attributes.get(SA_STATUS) == "COMPLETED"
        issued = credentials_of(engine, bundle.request.id)[cred]
        assert issued.status == "ACTIVE" and issued.mandate_id == last.mandate_id
        mandate = issued.w3c_credential
        assert mandate is not None
        assert mandate["credentialSubject"]["mandate"]["grantor"] == [
            web_subject_did(settings.public_url, ana.id),
            web_subject_did(settings.public_url, bea.id),
        ]
        attempts = [
            run
            for run in activity_runs((await handle.fetch_history()).events)
            if run.type == ActivityNames.ISSUE_CREDENTIAL
        ]
        assert len(attempts) == 1  # one issuance, shared by both updates
