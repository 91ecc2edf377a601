"""``credential`` events from the real request workflow: one per decision, after issuance, so an
acceptance's event carries the mandate; delivered signed and encrypted to a real receiver."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from sqlalchemy import Engine
from temporalio.client import Client
from temporalio.service import RPCError

from activities.webhooks import WebhookActivities
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle, start_request_workflow
from tests.support.api_client import Credentials
from tests.support.issuance import patch_and_issuance
from tests.support.webhook_receiver import receiving
from tests.support.webhooks import configure, events_of_request, wait_for
from tests.support.workflow import activity_runs, decide, insert_request, result_of
from trust.did import web_service_did, web_subject_did
from wire import versioning
from wire.webhook_payloads import api_version_of
from workflows.ids import ActivityNames, webhook_workflow_id
from workflows.patches import ISSUANCE_PATCH, WEBHOOK_PATCH
from workflows.webhook_messages import CreateCredentialEventInput


async def test_an_acceptance_and_a_rejection_each_send_one_credential_event(
    temporal: Client,
    worker: None,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
) -> None:
    org_id = org.organization_id
    with receiving(lambda n: 200) as receiver:
        configure(engine, cipher, org_id, receiver)
        accepted = insert_request(engine, org_id, internal_id="loan-7")
        rejected = insert_request(engine, org_id, contacts=("bea@example.com",))
        for bundle in (accepted, rejected):
            assert await start_request_workflow(temporal, settings.task_queue, bundle)
        (_, ana), (_, bea) = accepted.subjects[0], rejected.subjects[0]
        yes = await decide(request_handle(temporal, accepted.request.id), ana.id, accepted.credentials[0].id)
        no = await decide(
            request_handle(temporal, rejected.request.id), bea.id, rejected.credentials[0].id, accept=False
        )
        await wait_for(lambda: receiver.count() >= 2)
        await asyncio.sleep(1)  # and no more
        got = {d.event["requestId"]: d for d in receiver.deliveries if d.event}
        assert receiver.count() == 2 and all(d.signature_ok for d in receiver.deliveries)
        for bundle in (accepted, rejected):
            assert (await result_of(request_handle(temporal, bundle.request.id))).status == "COMPLETED"

    assert yes.mandate_id is not None and yes.mandate_id.startswith("urn:via:credential:")
    [accept_event] = events_of_request(engine, org_id, accepted.request.id)
    [reject_event] = events_of_request(engine, org_id, rejected.request.id)
    pairs = ((accept_event, got[accepted.request.id]), (reject_event, got[rejected.request.id]))
    for event, delivery in pairs:
        assert delivery.event == event.payload and delivery.webhook_id == event.id
        assert (event.state, event.attempts, event.event_type) == ("delivered", 1, "credential")
        assert event.fact_key.startswith("credential:urn:via:decision:")
        # delivered by the request workflow's own first attempt (ADR 24): no delivery workflow
        history = await request_handle(temporal, str(event.request_id)).fetch_history()
        attempts = [r for r in activity_runs(history.events) if r.type == ActivityNames.DELIVER_WEBHOOK]
        assert [r.local for r in attempts] == [False]
        with pytest.raises(RPCError, match="not found"):
            await temporal.get_workflow_handle(webhook_workflow_id(event.id)).describe()

    sent = accept_event.payload
    assert list(sent)[:8] == [
        "id",
        "eventType",
        "requestId",
        "internalId",
        "issuerDid",
        "user",
        "api_version",
        "createdAt",
    ]
    assert (sent["id"], sent["eventType"], sent["requestId"], sent["internalId"]) == (
        accept_event.id,
        "credential",
        accepted.request.id,
        "loan-7",
    )
    assert sent["issuerDid"] == web_service_did(settings.public_url)
    assert sent["user"] == {"contact": "ana@example.com", "id": web_subject_did(settings.public_url, ana.id)}
    assert sent["api_version"] == versioning.newest()
    assert sent["credential"]["id"] == yes.mandate_id
    assert sent["credential"]["status"] == "ACTIVE"
    assert sent["credential"]["w3cCredential"]["id"] == yes.mandate_id
    assert [d["id"] for d in sent["credential"]["decisions"]] == [yes.decision_id]
    assert sent["decision"]["action"] == "accept"
    assert datetime.fromisoformat(sent["decision"]["date"].replace("Z", "+00:00")).replace(
        microsecond=0
    ) == yes.decided_at.replace(microsecond=0)

    refused = reject_event.payload
    assert "internalId" not in refused
    assert refused["decision"]["action"] == "reject"
    assert refused["credential"]["id"] == rejected.credentials[0].id  # no mandate
    assert refused["credential"]["status"] == "REJECTED" and refused["credential"]["w3cCredential"] is None
    assert refused["user"]["contact"] == "bea@example.com"
    assert reject_event.fact_key == f"credential:{no.decision_id}"


def test_creating_an_event_twice_for_one_decision_gives_the_first(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
) -> None:
    """What a retried activity (or a replayed workflow) gets: the event made the first time."""
    bundle = insert_request(engine, org.organization_id)
    acts = WebhookActivities(engine, cipher, settings)
    inp = CreateCredentialEventInput(
        request_id=bundle.request.id,
        organization_id=org.organization_id,
        decision_id="urn:via:decision:00000000-0000-4000-8000-000000000001",
        subject_id=bundle.subjects[0][1].id,
        credential_id=bundle.credentials[0].id,
        accepted=False,
        decided_at=datetime.fromisoformat("2026-11-23T10:00:00+00:00"),
    )
    first, second = acts.create_credential_event(inp), acts.create_credential_event(inp)
    assert (first.created, second.created) == (True, False)
    assert first.event_id == second.event_id and first.event_id.startswith("urn:via:event:")
    assert len(events_of_request(engine, org.organization_id, bundle.request.id)) == 1


def test_api_version_is_the_pinned_one_or_the_newest() -> None:
    assert api_version_of("2026-01-15") == "2026-01-15"
    assert api_version_of(None) == versioning.newest()


def test_the_recorded_histories_cover_both_sides_of_the_webhook_patch() -> None:
    """decide_then_events (replayed by tests/workflows/test_replay.py) ran with events: each of its four
    decisions made one event and started its delivery child; the older histories have neither."""
    patches, activities = patch_and_issuance("decide_then_events")
    assert set(patches) == {ISSUANCE_PATCH, WEBHOOK_PATCH}
    assert activities.count(ActivityNames.CREATE_CREDENTIAL_EVENT) == 4
    assert activities.count(ActivityNames.ISSUE_CREDENTIAL) == 1
    for old in ("cancel", "expiry", "decide_then_complete", "decide_then_expiry", "decide_then_issue"):
        patches, activities = patch_and_issuance(old)
        assert WEBHOOK_PATCH not in patches and ActivityNames.CREATE_CREDENTIAL_EVENT not in activities
