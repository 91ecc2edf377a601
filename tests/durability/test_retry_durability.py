"""A worker killed in the middle of support's retry of a FAILED issuance (issue 32) never yields
two mandates or two ``credential`` events.

The real worker process (``python -m worker``) dies abruptly (exit 137) at a crash point of the
retry workflow's activities: as it reopens the credential, before the issuing transaction, or after
its commit before the activity reports back. A normally started worker finishes the retry: one
mandate, one status list entry, one ``MANDATE_ISSUANCE_RETRIED`` record and one more
``credential`` event (the decision's said FAILED). Asked again, the service answers the same.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlmodel import select

from core.actors import Actor
from core.secretbox import SecretCipher
from services import retries
from services.context import Context
from store import audit
from store.db import read_session
from store.tables import AuditRecord, WebhookEvent
from tests.support.durability import MASTER_KEY, IssuingWorker, Stack, allocated, retry_now, worker_settings
from tests.support.journey_messages import journey_secrets
from tests.support.retries import failed_credential, repair
from tests.support.workflow import activity_runs, db_request
from workflows.ids import ActivityNames, credential_retry_workflow_id
from workflows.retry_messages import RetryIssuanceResult

# crash point -> the activity left pending when the worker dies there
CRASH_POINTS = {
    "retry:reopen": ActivityNames.REOPEN_CREDENTIAL,
    "issue:before": ActivityNames.ISSUE_CREDENTIAL,
    "issue:after-commit": ActivityNames.ISSUE_CREDENTIAL,
}
SUPPORT = Actor.member("m-support-crash")


def records_of(stack: Stack, request_id: str, kind: str) -> list[AuditRecord]:
    with read_session(stack.engine) as session:
        return list(
            session.exec(
                select(AuditRecord).where(AuditRecord.request_id == request_id, AuditRecord.type == kind)
            )
        )


def credential_events(stack: Stack, request_id: str) -> list[WebhookEvent]:
    with read_session(stack.engine) as session:
        found = session.exec(
            select(WebhookEvent).where(
                WebhookEvent.request_id == request_id, WebhookEvent.event_type == "credential"
            )
        )
        return sorted(found, key=lambda e: e.created_at)


@pytest.mark.parametrize("crash_at", list(CRASH_POINTS))
async def test_a_worker_killed_mid_retry_issues_once_with_one_event(stack: Stack, crash_at: str) -> None:
    org_id, settings = stack.org.organization_id, worker_settings(stack)
    ctx = Context(settings, stack.engine, SecretCipher(settings.master_key_bytes()), stack.client)
    first = IssuingWorker(stack, "first")
    try:
        outbox, secrets = stack.var_dir / "outbox", journey_secrets(MASTER_KEY)
        request_id, cred = await failed_credential(
            stack.client, stack.queue, stack.engine, org_id, outbox=outbox, secrets=secrets
        )
    finally:
        assert first.stop() == 0, first.output()
    repair(stack.engine, cred)
    before = allocated(stack.engine)

    crashing = IssuingWorker(stack, "crashing", crash_at)
    asked = asyncio.create_task(retries.retry_issuance(ctx, SUPPORT, org_id, cred, "mail provider fixed"))
    try:
        assert await crashing.exit_code(20) == 137, crashing.output()
        assert not asked.done()
    finally:
        crashing.stop()
    handle = stack.client.get_workflow_handle(
        credential_retry_workflow_id(cred), result_type=RetryIssuanceResult
    )
    await retry_now(stack, handle, activity_type=CRASH_POINTS[crash_at])
    restarted = IssuingWorker(stack, "restarted")
    try:
        result = await asyncio.wait_for(handle.result(), 40)
        answer = await asyncio.wait_for(asked, 40)
        if answer.state == "running":  # the first call gave up waiting: asked again, it answers
            answer = await retries.retry_issuance(ctx, SUPPORT, org_id, cred, "mail provider fixed")
    finally:
        assert restarted.stop() == 0, restarted.output()

    assert (answer.state, answer.mandate_id, answer.event_id) == (
        "issued",
        result.mandate_id,
        result.event_id,
    )
    [stored] = db_request(stack.engine, org_id, request_id).credentials
    assert (stored.status, stored.mandate_id) == ("ACTIVE", result.mandate_id)
    assert allocated(stack.engine) == before + 1  # one status list entry: one issuance
    [retried] = records_of(stack, request_id, audit.MANDATE_ISSUANCE_RETRIED)
    assert (retried.actor, retried.data["reason"]) == ("member:m-support-crash", "mail provider fixed")
    assert len(records_of(stack, request_id, audit.MANDATE_ISSUED)) == 1
    events = credential_events(stack, request_id)
    assert [e.payload["credential"]["status"] for e in events] == ["FAILED", "ACTIVE"]
    assert events[1].id == result.event_id and events[1].payload["credential"]["id"] == result.mandate_id
    # the completed runs in the history: each activity once (the dead attempt never completed)
    completed = [r.type for r in activity_runs((await handle.fetch_history()).events) if r.result is not None]
    assert completed == [
        ActivityNames.REOPEN_CREDENTIAL,
        ActivityNames.ISSUE_CREDENTIAL,
        ActivityNames.CREATE_CREDENTIAL_EVENT,
    ]
