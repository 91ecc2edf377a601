"""The integrator's ``mandate.revoked`` event of a mandate revoked by its last use (issue 31):
sent after the verification's commit, signed and encrypted like every event, made once; and made
by the worker's pass when the API could not."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from core.secretbox import SecretCipher
from core.settings import Settings
from services import limit_events
from store import limit_use
from store import webhooks as webhook_store
from store.db import utcnow
from store.keys import did_resolver
from tests.support.api_client import SignedClient, policy_request
from tests.support.mandates import issued_mandate
from tests.support.presentations import GOOD, checked, presented, verify
from tests.support.webhook_receiver import receiving
from tests.support.webhooks import configure, events_of_request, wait_for
from trust.did import web_service_did
from trust.receipts import verify_receipt

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")


async def one_use_mandate(api: SignedClient, temporal: Client) -> dict[str, Any]:
    return await issued_mandate(
        api, temporal, credentials=[{**policy_request()["credentials"][0], "maxExecutions": 1}]
    )


def revoked_events(engine: Engine, org_id: str, request_id: str) -> list[Any]:
    return [e for e in events_of_request(engine, org_id, request_id) if e.event_type == "mandate.revoked"]


async def test_the_last_use_sends_one_mandate_revoked_event(
    api: SignedClient, temporal: Client, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    org_id = api.creds.organization_id
    with receiving(lambda n: 200) as receiver:
        configure(engine, cipher, org_id, receiver)
        mandate = await one_use_mandate(api, temporal)
        vp = (await presented(api, mandate["id"]))["presentation"]
        checked(await verify(api, vp, GOOD), engine, settings)

        def revoked_delivered() -> bool:
            return any(d.event and d.event["eventType"] == "mandate.revoked" for d in receiver.deliveries)

        await wait_for(revoked_delivered)
        [delivery] = [d for d in receiver.deliveries if d.event and d.event["eventType"] == "mandate.revoked"]
    assert delivery.signature_ok
    sent = delivery.event or {}
    assert (sent["requestId"], sent["credential"]["id"], sent["credential"]["status"]) == (
        mandate["requestId"],
        mandate["id"],
        "REVOKED",
    )
    assert sent["credential"]["executionsRemaining"] == 0 and sent["credential"]["maxExecutions"] == 1
    assert sent["revocation"]["reason"] == "exhausted"
    receipt = sent["revocation"]["receipt"]
    assert (receipt["type"], receipt["reason"], receipt["credentialId"]) == (
        "MANDATE_REVOKED",
        "exhausted",
        mandate["id"],
    )
    verify_receipt(receipt, did_resolver(engine, settings), issuer_did=web_service_did(settings.public_url))
    [event] = revoked_events(engine, org_id, mandate["requestId"])
    assert event.fact_key == f"mandate.revoked:{mandate['id']}" and event.payload == sent
    await wait_for(lambda: webhook_store.get_event(engine, event.id).state == "delivered")
    # the worker's pass finds nothing to do for it, even past its grace: the event was made and
    # started (other tests' mandates in the same database may be left for it: not counted here)
    now = utcnow()
    left = limit_use.unannounced(engine, now - limit_events.LOOK_BACK, now + timedelta(hours=1))
    assert mandate["requestId"] not in {m.request_id for m in left}


async def test_the_workers_pass_makes_an_event_the_api_did_not(
    api: SignedClient, temporal: Client, engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def api_died(*_: Any) -> None:  # the API's process ends between its commit and the event
        return None

    monkeypatch.setattr(limit_events, "announce", api_died)
    mandate = await one_use_mandate(api, temporal)
    vp = (await presented(api, mandate["id"]))["presentation"]
    checked(await verify(api, vp, GOOD), engine, settings)
    org_id = api.creds.organization_id
    assert revoked_events(engine, org_id, mandate["requestId"]) == []
    monkeypatch.undo()
    later = settings.model_copy(update={"reconcile_grace": settings.reconcile_grace * 0})
    assert await limit_events.announce_missed_once(engine, later, temporal) >= 1
    [event] = revoked_events(engine, org_id, mandate["requestId"])
    assert event.payload["revocation"]["reason"] == "exhausted"
    await wait_for(lambda: webhook_store.get_event(engine, event.id).state in ("delivered", "skipped"))
    assert await limit_events.announce_missed_once(engine, later, temporal) == 0  # made once
