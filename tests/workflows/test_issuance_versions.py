"""Versions and issuance: an issued mandate keeps the action version it was issued against, a
rejection issues nothing, and workflows recorded before issuance existed keep replaying.

CONTRACT 6: a published version is immutable and mandates pin the version they were issued
against; publishing a new version changes what new requests pin, never an issued mandate.
"""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import pytest
from sqlalchemy import Engine
from sqlmodel import select
from temporalio import workflow
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from cli.devstack import EXAMPLE_ACTION, EXAMPLE_ACTION_ID
from core.actors import TEMPORAL
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle
from policy.actions import parse_action_spec
from services import mandates
from store import actions, keys
from store.db import read_session
from store.tables import ActionVersion, Credential
from tests.support.api_client import SignedClient
from tests.support.durability import allocated
from tests.support.histories import HISTORIES, load
from tests.support.issuance import local_activities, patch_and_issuance, payload_text
from tests.support.mandates import accept_all, create_request, issued_mandate
from tests.support.workflow import activity_runs, decide, subject_uuid
from trust import credentials as vc
from workflows.credential_request import CredentialRequestWorkflow
from workflows.ids import ActivityNames
from workflows.messages import DecisionWritten
from workflows.patches import ISSUANCE_PATCH, LOCAL_DECISION_PATCH

issuing = pytest.mark.usefixtures("worker", "no_server_errors")


def example(key: str) -> list[Any]:
    value = EXAMPLE_ACTION[key]
    assert isinstance(value, list)
    return value


# v2 of the example action: another userParam (currency), and a rule that uses it
ACTION_V2: dict[str, Any] = {
    **EXAMPLE_ACTION,
    "userParams": [*example("userParams"), {"name": "currency", "type": "string", "default": "EUR"}],
    "executionParams": [*example("executionParams"), {"name": "currency", "type": "string"}],
    "rules": [
        *example("rules"),
        {
            "name": "sameCurrency",
            "description": "Paid in the approved currency.",
            "expression": "executionParams.currency == userParams.currency",
        },
    ],
}


def credential_row(engine: Engine, mandate_id: str) -> Credential:
    with read_session(engine) as session:
        row = session.exec(select(Credential).where(Credential.mandate_id == mandate_id)).one()
    return row


def publish_v2(engine: Engine, org_id: str) -> ActionVersion:
    spec, errors = parse_action_spec(ACTION_V2)
    assert spec is not None, errors
    draft = actions.add_version(engine, org_id, EXAMPLE_ACTION_ID, spec)
    return actions.publish(engine, draft.id, org_id, actor="operator:tests")


@issuing
async def test_republishing_the_action_changes_no_issued_mandate(
    api: SignedClient,
    temporal: Client,
    engine: Engine,
    settings: Settings,
    cipher: SecretCipher,
) -> None:
    org_id = api.creds.organization_id
    first = await issued_mandate(api, temporal)
    resolved = actions.resolve_for_request(engine, org_id, EXAMPLE_ACTION_ID)
    assert resolved is not None
    v1 = resolved[0]
    assert v1.number == 1 and v1.digest_sri == vc.digest_sri(v1.content)
    pin = first["w3cCredential"]["credentialSubject"]["mandate"]["action"]
    assert (pin["id"], pin["version"], pin["digestSRI"]) == (EXAMPLE_ACTION_ID, v1.id, v1.digest_sri)
    stored = credential_row(engine, first["id"]).model_dump()

    v2 = publish_v2(engine, org_id)

    assert (v2.number, v2.status) == (2, "published") and v2.id != v1.id
    assert v2.digest_sri == vc.digest_sri(v2.content) and v2.digest_sri != v1.digest_sri
    v1_now = actions.get_version(engine, v1.id)
    assert v1_now is not None and v1_now.model_dump() == v1.model_dump()  # v1 itself is untouched
    assert credential_row(engine, first["id"]).model_dump() == stored
    resolver = keys.did_resolver(engine, settings)
    vc.verify_mandate(stored["w3c_credential"], resolver)
    [shown] = (await api.get(f"/request/{first['requestId']}")).json()["credentials"]
    assert shown["w3cCredential"] == first["w3cCredential"] == stored["w3c_credential"]
    # a retried issuance (what a restarted activity does) returns the v1 mandate as it is
    again = mandates.issue(engine, cipher, settings, stored["id"], actor=TEMPORAL)
    assert (again.mandate_id, again.newly_issued) == (first["id"], False)
    assert credential_row(engine, first["id"]).model_dump() == stored

    # a new request pins v2: its userParams are v2's (currency is unknown to v1)
    request = await create_request(
        api,
        credentials=[
            {
                "type": "POLICY",
                "name": "Rent payments",
                "scope": "payments",
                "action": {"id": EXAMPLE_ACTION_ID, "userParams": {"maxAmount": 900}},
            }
        ],
    )
    pinned = request["credentials"][0]["action"]
    assert (pinned["version"], pinned["digestSRI"]) == (v2.id, v2.digest_sri)
    assert pinned["userParams"] == {"maxAmount": 900, "payees": [], "currency": "EUR"}
    [cred] = await accept_all(api, temporal, request)
    assert cred["status"] == "ACTIVE"
    assert cred["w3cCredential"]["credentialSubject"]["mandate"]["action"] == pinned
    vc.verify_mandate(cred["w3cCredential"], resolver)
    assert credential_row(engine, first["id"]).model_dump() == stored


@issuing
async def test_a_rejection_issues_nothing(api: SignedClient, temporal: Client, engine: Engine) -> None:
    before = allocated(engine)
    request = await create_request(api, contacts=["ana@example.com", "bea@example.com"])
    handle = request_handle(temporal, request["id"])
    ana, bea = (subject_uuid(s["id"]) for s in request["subjects"])
    cred_id = request["credentials"][0]["id"]

    rejected = await decide(handle, ana, cred_id, accept=False)
    accepted = await decide(handle, bea, cred_id, accept=True)

    assert (rejected.mandate_id, accepted.mandate_id, accepted.request_status) == (None, None, "COMPLETED")
    with read_session(engine) as session:
        row = session.get(Credential, cred_id)
    assert row is not None
    assert (
        row.status,
        row.mandate_id,
        row.w3c_credential,
        row.document_credential,
        row.issued_at,
        row.status_list_id,
        row.status_list_index,
    ) == ("REJECTED", None, None, None, None, None, None)
    assert allocated(engine) == before
    await handle.result()  # the workflow ends once its deliveries' first attempts have answered
    runs = activity_runs((await handle.fetch_history()).events)
    scheduled = [r.type for r in runs]
    # each subject is sent a code and confirms it (the "subject-journey" patch); each decision's
    # record and webhook event are one local activity (revision 3); nothing is issued
    assert {r.type for r in runs if r.local} == {ActivityNames.WRITE_DECISION}
    assert [json.loads(r.result.data)["issued"] for r in runs if r.local and r.result] == [None, None]
    journey = (ActivityNames.SEND_OTP, ActivityNames.CHECK_OTP)
    assert (
        sorted(n for n in scheduled if n in journey)
        == [ActivityNames.CHECK_OTP] * 2 + [ActivityNames.SEND_OTP] * 2
    )
    assert [n for n in scheduled if n not in journey] == [
        ActivityNames.WRITE_DECISION,
        ActivityNames.DELIVER_WEBHOOK,  # revision 2: the event's first attempt (ADR 24)
    ] * 2


# --- workflow versions: the histories tests/workflows/test_replay.py replays -------------------------------


def test_the_histories_cover_both_sides_of_the_patch() -> None:
    """decide_then_issue ran with issuance; the others were recorded before it and must stay so."""
    assert patch_and_issuance("decide_then_issue") == (
        [ISSUANCE_PATCH],
        [ActivityNames.RECORD_DECISION, ActivityNames.ISSUE_CREDENTIAL],
    )
    for old in ("cancel", "expiry", "decide_then_complete", "decide_then_expiry"):
        patches, activities = patch_and_issuance(old)
        assert patches == [] and ActivityNames.ISSUE_CREDENTIAL not in activities, old
    # decide_then_complete has a credential every subject accepted: issuance would run today
    assert patch_and_issuance("decide_then_complete")[1].count(ActivityNames.RECORD_DECISION) == 4


def test_the_histories_cover_both_sides_of_the_local_writes_patch() -> None:
    """decide_local_writes ran each decision's issuance and event as local activities (markers);
    every other history was recorded before and has them as activities of their own. Each is
    replayed by tests/workflows/test_replay.py."""
    patches, activities = patch_and_issuance("decide_local_writes")
    assert LOCAL_DECISION_PATCH in patches
    event, issue = ActivityNames.CREATE_CREDENTIAL_EVENT, ActivityNames.ISSUE_CREDENTIAL
    assert local_activities("decide_local_writes") == [event, issue, event, event, event]
    assert activities.count(ActivityNames.RECORD_DECISION) == 4  # the records stay activities
    for old in sorted(p.stem for p in HISTORIES.glob("*.json")):
        if old in RECORDED_WITH_LOCAL_WRITES:  # recorded after the patch (issue 36's paths)
            assert LOCAL_DECISION_PATCH in patch_and_issuance(old)[0], old
        elif old not in ("decide_local_writes", *RECORDED_ON_REVISION_1):
            assert LOCAL_DECISION_PATCH not in patch_and_issuance(old)[0] and not local_activities(old), old


# histories recorded after the local-writes patch, which run it as decide_local_writes does
RECORDED_WITH_LOCAL_WRITES = ("secondary_contact", "trusted_session")
# histories of requests started on revision 1 or later (workflows/patches.py, ADR 23, 24)
RECORDED_ON_REVISION_1 = ("revision_1", "revision_2", "revision_3")


def test_revision_1_takes_every_patch_without_a_marker() -> None:
    """The same path as decide_local_writes, on a request started on revision 1: the same
    activities and local activities, and neither a patch marker nor a search-attribute upsert
    for one (only the outcome's, once); the replay of both is test_replay's."""
    events = json.loads((HISTORIES / "revision_1.json").read_text())["events"]
    started = events[0]["workflowExecutionStartedEventAttributes"]
    assert json.loads(payload_text(started["input"]))["revision"] == 1
    assert patch_and_issuance("revision_1") == ([], patch_and_issuance("decide_local_writes")[1])
    assert local_activities("revision_1") == local_activities("decide_local_writes")
    upserts = [e for e in events if e["eventType"] == "EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES"]
    assert len(upserts) == 1 and "TemporalChangeVersion" not in json.dumps(upserts)
    old = json.loads((HISTORIES / "decide_local_writes.json").read_text())["events"]
    assert len(old) - len(events) >= 18  # 6 markers, 6 upserts and 2 workflow tasks fewer


def test_revision_2_records_in_the_update_and_delivers_without_a_child() -> None:
    """The same path on revision 2 (ADR 24): each of the four decisions' records is a local
    activity instead of an activity, each of their events' first attempt an activity of the
    request's workflow, no delivery workflow starts (every attempt answered), and the history is
    shorter than on revision 1."""
    events = json.loads((HISTORIES / "revision_2.json").read_text())["events"]
    started = events[0]["workflowExecutionStartedEventAttributes"]
    assert json.loads(payload_text(started["input"]))["revision"] == 2
    journey = ["send_otp", "send_otp", "check_otp", "check_otp"]
    assert patch_and_issuance("revision_1") == ([], journey + [ActivityNames.RECORD_DECISION] * 4)
    assert patch_and_issuance("revision_2") == ([], journey + [ActivityNames.DELIVER_WEBHOOK] * 4)
    record, event = ActivityNames.RECORD_DECISION, ActivityNames.CREATE_CREDENTIAL_EVENT
    issue = ActivityNames.ISSUE_CREDENTIAL
    assert local_activities("revision_2") == [record, event, record, issue, event] + [record, event] * 2
    kinds = [e["eventType"] for e in events]
    assert "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED" not in kinds
    old = json.loads((HISTORIES / "revision_1.json").read_text())["events"]
    assert (len(old), len(events)) == (111, 92)


def test_revision_3_writes_each_decision_in_one_local_activity() -> None:
    """The same path on revision 3 (ADR 27): each decision's record, issuance and event are one
    local activity; the second acceptance of the first credential, made after the first was
    written, is the one that issued; the history is shorter than on revision 2."""
    events = json.loads((HISTORIES / "revision_3.json").read_text())["events"]
    started = events[0]["workflowExecutionStartedEventAttributes"]
    assert json.loads(payload_text(started["input"]))["revision"] == 3
    journey = ["send_otp", "send_otp", "check_otp", "check_otp"]
    assert patch_and_issuance("revision_3") == ([], journey + [ActivityNames.DELIVER_WEBHOOK] * 4)
    assert local_activities("revision_3") == [ActivityNames.WRITE_DECISION] * 4
    writes = [
        DecisionWritten.model_validate_json(run.result.data)
        for run in activity_runs(load(HISTORIES / "revision_3.json").events)
        if run.local and run.result is not None
    ]
    assert [(w.decision.accepted, w.issued is not None, w.issuance_failed) for w in writes] == [
        (True, False, False),
        (True, True, False),
        (False, False, False),
        (True, False, False),
    ]
    assert writes[1].issued is not None and writes[1].issued.newly_issued
    old = json.loads((HISTORIES / "revision_2.json").read_text())["events"]

    def markers(history: list[dict[str, Any]]) -> int:
        return sum(e["eventType"] == "EVENT_TYPE_MARKER_RECORDED" for e in history)

    # a marker per decision instead of two or three; the workflow tasks vary with timing (14 in both)
    assert (markers(old), markers(events)) == (9, 4)
    assert (len(old), len(events)) == (92, 87)


class AlwaysPatched:
    """``temporalio.workflow`` as the workflow module sees it, with ``patched`` always true."""

    def __getattr__(self, name: str) -> Any:
        return getattr(workflow, name)

    @staticmethod
    def patched(patch_id: str) -> bool:
        return True


async def test_without_the_patch_guard_an_old_history_breaks() -> None:
    """What ``workflow.patched`` protects: with the guard taken as always true, the history of a
    workflow started before issuance (two subjects accepted a credential, nothing issued) fails
    replay; with the guard as it is, the same replayer replays it. Unsandboxed, so that only this
    replayer sees the module attribute replaced (a sandboxed worker loads its own copy)."""
    old = load(HISTORIES / "decide_then_complete.json")
    replayer = Replayer(
        workflows=[CredentialRequestWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    with (
        mock.patch("workflows.patches.workflow", AlwaysPatched()),
        pytest.raises(workflow.NondeterminismError),
    ):
        await replayer.replay_workflow(old)
    assert (await replayer.replay_workflow(old)).replay_failure is None
