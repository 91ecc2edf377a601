"""Support's restart of an identity check that errored at the provider (issue 32, item 3): a check
the provider never reported (it stays PENDING) is closed as ERROR by the request workflow's
``restart_identity`` update, the subject's standing goes back to NOT_STARTED so the approval page
offers a fresh check, and a late report of the closed check is no result. A failed check stays
failed."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from core.actors import Actor
from core.kinds import UpdateRefusal
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration import identity
from orchestration.temporal import request_handle, start_request_workflow
from services import retries
from services.context import Context
from services.errors import Conflict, Forbidden, NotFound, Refused
from store import audit
from store import kyc as kyc_store
from store.db import read_session, utcnow
from store.tables import KycCheck, Subject
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.workflow import insert_request, status_of
from workflows.credential_request import CredentialRequestWorkflow

pytestmark = pytest.mark.usefixtures("worker")

SUPPORT = Actor.member("m-support-kyc")


@pytest.fixture
def tctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal=temporal)


def stored(engine: Engine, check_id: str, subject_id: str) -> tuple[str, str]:
    with read_session(engine) as session:
        check, subject = session.get(KycCheck, check_id), session.get(Subject, subject_id)
        assert check is not None and subject is not None
        return check.status, subject.kyc


async def test_an_errored_check_is_closed_and_a_fresh_one_can_start(
    tctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    bundle = insert_request(engine, org.organization_id, security_level="PLATFORM_KYC")
    assert await start_request_workflow(temporal, settings.task_queue, bundle)
    request_id, subject = bundle.request.id, bundle.subjects[0][1].id
    stuck = kyc_store.start_check(engine, request_id, subject, "development", utcnow())
    assert stored(engine, stuck.id, subject) == ("PENDING", "PENDING")

    done = await retries.restart_identity(
        tctx, SUPPORT, org.organization_id, request_id, subject, "provider outage"
    )

    assert done.checks == [stuck.id]
    assert stored(engine, stuck.id, subject) == ("ERROR", "NOT_STARTED")
    [record] = [
        r
        for r in chain(engine, org.organization_id)
        if r.type == audit.IDENTITY_CHECK_RESTARTED and r.request_id == request_id
    ]
    assert (record.actor, record.data) == (
        "member:m-support-kyc",
        {
            "subjectId": subject,
            "checks": [stuck.id],
            "reason": "provider outage",
            "kyc": "NOT_STARTED",  # the standing it moved back, and from what
            "previous": {"kyc": "PENDING"},
        },
    )
    # the Temporal UI names the restart (its activity's summary)
    history = await request_handle(temporal, request_id).fetch_history()
    summaries = [
        json.loads(e.user_metadata.summary.data)
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes") and e.user_metadata.summary.data
    ]
    assert (
        f"restart identity check of subject {subject} by member:m-support-kyc: provider outage" in summaries
    )
    replayed = await Replayer(
        workflows=[CredentialRequestWorkflow], data_converter=pydantic_data_converter
    ).replay_workflow(history)
    assert replayed.replay_failure is None  # the new update replays from its own history
    # nothing is left waiting: asked again, refused
    with pytest.raises(Conflict, match="nothing errored"):
        await retries.restart_identity(tctx, SUPPORT, org.organization_id, request_id, subject, "again")
    # the provider's late report of the closed check is no result: the subject may still be checked
    late = await identity.complete_check(engine, temporal, stuck.id, True, None)
    assert late.status == "ERROR"
    [progress] = (await status_of(request_handle(temporal, request_id))).subjects
    assert progress.identity == "required"
    fresh = kyc_store.start_check(engine, request_id, subject, "development", utcnow())
    passed = await identity.complete_check(engine, temporal, fresh.id, True, None)
    assert passed.status == "VERIFIED"
    [progress] = (await status_of(request_handle(temporal, request_id))).subjects
    assert progress.identity == "passed"


async def test_a_failed_check_stays_failed(
    tctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    bundle = insert_request(
        engine,
        org.organization_id,
        security_level="PLATFORM_KYC",
        contacts=("ana@example.com", "bea@example.com"),
    )
    assert await start_request_workflow(temporal, settings.task_queue, bundle)
    request_id, subject = bundle.request.id, bundle.subjects[0][1].id
    failed = kyc_store.start_check(engine, request_id, subject, "development", utcnow())
    await identity.complete_check(engine, temporal, failed.id, False, "selfie does not match")
    with pytest.raises(Conflict):  # no check waits for the provider
        await retries.restart_identity(tctx, SUPPORT, org.organization_id, request_id, subject, "try again")
    kyc_store.start_check(engine, request_id, subject, "development", utcnow())  # one started after
    with pytest.raises(Refused) as refused:
        await retries.restart_identity(tctx, SUPPORT, org.organization_id, request_id, subject, "try again")
    assert refused.value.refusal == UpdateRefusal.IDENTITY_RECORDED
    assert [
        r
        for r in chain(engine, org.organization_id)
        if r.type == audit.IDENTITY_CHECK_RESTARTED and r.request_id == request_id
    ] == []


async def test_bad_values_another_subject_and_a_level_without_checks_are_refused(
    tctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    bundle = insert_request(engine, org.organization_id)  # CONTACT: no identity check
    assert await start_request_workflow(temporal, settings.task_queue, bundle)
    request_id, subject = bundle.request.id, bundle.subjects[0][1].id
    with pytest.raises(NotFound):
        await retries.restart_identity(
            tctx, SUPPORT, org.organization_id, request_id, "00000000-0000-4000-8000-000000000000", "why"
        )
    with pytest.raises(Conflict):
        await retries.restart_identity(tctx, SUPPORT, org.organization_id, request_id, subject, "why")
    kyc_store.start_check(engine, request_id, subject, "development", utcnow())  # written around the page
    with pytest.raises(Refused) as refused:
        await retries.restart_identity(tctx, SUPPORT, org.organization_id, request_id, subject, "why")
    assert refused.value.refusal == UpdateRefusal.IDENTITY_NOT_REQUIRED
    with pytest.raises(Forbidden):
        await retries.operator_restart_identity(tctx, SUPPORT, request_id, subject, "why")
