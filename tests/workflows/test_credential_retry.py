"""Support's retry of an issuance that failed for good (issue 32, item 1): its own workflow issues
the FAILED credential once, with one ``credential`` event, and answers every later request."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import Engine
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import retries
from services.context import Context
from services.errors import Conflict
from store import audit
from store.tables import WebhookEvent
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.retries import failed_credential, repair
from tests.support.webhooks import events_of_request
from tests.support.workflow import activity_runs, db_request
from workflows.credential_retry import CredentialRetryWorkflow
from workflows.ids import ActivityNames, credential_retry_workflow_id, webhook_workflow_id

pytestmark = pytest.mark.usefixtures("worker")

SUPPORT = Actor.member("m-support-1")
REASON = "provider fixed the amount"


@pytest.fixture
def tctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal=temporal)


def credential_events(engine: Engine, org_id: str, request_id: str) -> list[WebhookEvent]:
    """The request's ``credential`` events, oldest first."""
    found = [e for e in events_of_request(engine, org_id, request_id) if e.event_type == "credential"]
    return sorted(found, key=lambda e: e.created_at)


def retried_records(engine: Engine, org_id: str, request_id: str) -> list[audit.AuditRecord]:
    return [
        r
        for r in chain(engine, org_id)
        if r.request_id == request_id and r.type == audit.MANDATE_ISSUANCE_RETRIED
    ]


async def test_a_retried_failed_issuance_issues_once_with_one_credential_event(
    tctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    org_id = org.organization_id
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org_id)
    repair(engine, cred)

    answer = await retries.retry_issuance(tctx, SUPPORT, org_id, cred, f"  {REASON} ")

    assert (answer.state, answer.credential_id, answer.request_id) == ("issued", cred, request_id)
    assert answer.workflow_id == f"credential-retry:{cred}"
    stored = db_request(engine, org_id, request_id).credentials[0]
    assert (stored.status, stored.mandate_id) == ("ACTIVE", answer.mandate_id)
    assert stored.mandate_id is not None and stored.mandate_id.startswith("urn:via:credential:")
    [record] = retried_records(engine, org_id, request_id)
    assert (record.actor, record.credential_id, record.data["reason"]) == ("member:m-support-1", cred, REASON)
    events = credential_events(engine, org_id, request_id)
    # the decision's event said FAILED; the retry's one says ACTIVE, with the mandate
    assert [e.payload["credential"]["status"] for e in events] == ["FAILED", "ACTIVE"]
    assert events[1].id == answer.event_id
    assert events[1].payload["credential"]["id"] == stored.mandate_id
    assert events[1].payload["decision"]["action"] == "accept"
    # the Temporal UI names the retry, who asked and why; its delivery is a workflow of its own
    handle = temporal.get_workflow_handle(credential_retry_workflow_id(cred))
    described = await handle.describe()
    assert await described.static_summary() == f"retry issuance of {cred} by member:m-support-1: {REASON}"
    delivery = await temporal.get_workflow_handle(webhook_workflow_id(answer.event_id)).describe()
    assert delivery.parent_id == handle.id
    history = await handle.fetch_history()
    replayed = await Replayer(
        workflows=[CredentialRetryWorkflow], data_converter=pydantic_data_converter
    ).replay_workflow(history)
    assert replayed.replay_failure is None  # deterministic: its own history replays
    runs = activity_runs(history.events)
    assert [r.type for r in runs] == [
        ActivityNames.REOPEN_CREDENTIAL,
        ActivityNames.ISSUE_CREDENTIAL,
        ActivityNames.CREATE_CREDENTIAL_EVENT,
    ]

    # asked again once it succeeded: the same answer, nothing more written or sent
    again = await retries.retry_issuance(tctx, Actor.member("m-support-2"), org_id, cred, "again")
    assert again == answer
    assert len(retried_records(engine, org_id, request_id)) == 1
    assert len(credential_events(engine, org_id, request_id)) == 2


async def test_two_retries_at_once_share_one_run(
    tctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    org_id = org.organization_id
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org_id)
    repair(engine, cred)
    first, second = await asyncio.gather(
        retries.retry_issuance(tctx, SUPPORT, org_id, cred, REASON),
        retries.retry_issuance(tctx, Actor.member("m-support-2"), org_id, cred, "me too"),
    )
    assert first.state == second.state == "issued"
    assert first.mandate_id == second.mandate_id and first.event_id == second.event_id
    assert len(retried_records(engine, org_id, request_id)) == 1
    assert len(credential_events(engine, org_id, request_id)) == 2


async def test_a_retry_that_fails_again_leaves_it_failed_and_another_may_follow(
    tctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    org_id = org.organization_id
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org_id)

    with pytest.raises(Conflict, match="FAILED again"):
        await retries.retry_issuance(tctx, SUPPORT, org_id, cred, REASON)
    stored = db_request(engine, org_id, request_id).credentials[0]
    assert (stored.status, stored.mandate_id) == ("FAILED", None)
    assert [e.payload["credential"]["status"] for e in credential_events(engine, org_id, request_id)] == [
        "FAILED"
    ]

    repair(engine, cred)
    answer = await retries.retry_issuance(tctx, SUPPORT, org_id, cred, "fixed now")
    assert answer.state == "issued"
    assert db_request(engine, org_id, request_id).credentials[0].status == "ACTIVE"
    assert [r.data["reason"] for r in retried_records(engine, org_id, request_id)] == [REASON, "fixed now"]
