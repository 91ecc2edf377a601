"""Rotating a webhook's signature secret with an overlap (issue 34, "Must show"): a receiver that
holds only the old secret and one that holds only the new one both verify every delivery during the
overlap (each accepts a delivery when ``X-Signature`` or ``X-Signature-Next`` matches its secret);
after it, only the new one does. Deliveries by the real worker to a real HTTP receiver."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import Engine, update
from sqlmodel import col
from temporalio.client import Client

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import webhooks
from services.context import Context
from services.errors import Invalid, NotFound
from store import webhooks as store
from store.db import utcnow, write_session
from store.tables import WebhookEndpoint
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import changes
from tests.support.webhook_receiver import Delivery, receiving
from trust.webhook_envelope import signature_matches

OWNER = Actor.member("6b0a00000000000000000001")


@pytest.fixture
def live_ctx(
    settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client, worker: None
) -> Context:
    return Context(settings, engine, cipher, temporal)


def verifies(secret: str, delivery: Delivery) -> bool:
    """The documented receiver: either signature header matching its one secret."""
    stamp = str(delivery.timestamp_ms)
    return any(
        signature_matches(secret, stamp, delivery.raw_body, delivery.headers[name])
        for name in ("X-Signature", "X-Signature-Next")
        if name in delivery.headers
    )


async def deliver_one(ctx: Context, org_id: str, count: int, receiver: object) -> None:
    event = webhooks.create_test_event(ctx, OWNER, org_id)
    await webhooks.start_delivery(ctx, OWNER, event)
    for _ in range(400):
        if receiver.count() >= count:  # type: ignore[attr-defined]
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the delivery did not arrive")


async def test_old_and_new_secrets_both_verify_during_the_overlap_then_only_the_new(
    live_ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    with receiving(lambda n: 200) as receiver:
        webhooks.configure(live_ctx, OWNER, org.organization_id, receiver.url)
        old = store.get_config(engine, cipher, org.organization_id)
        assert old is not None and old.previous_signature_secret is None
        await deliver_one(live_ctx, org.organization_id, 1, receiver)
        assert "X-Signature-Next" not in receiver.deliveries[0].headers

        rotated = webhooks.rotate_signature_secret(live_ctx, OWNER, org.organization_id, overlap_hours=2)
        new = rotated.signature_secret
        assert new != old.signature_secret
        assert timedelta(hours=1, minutes=59) < rotated.overlap_until - utcnow() <= timedelta(hours=2)
        for n in (2, 3):
            await deliver_one(live_ctx, org.organization_id, n, receiver)
        during = receiver.deliveries[1:3]
        assert all(verifies(old.signature_secret, d) for d in during)  # the old receiver, unchanged
        assert all(verifies(new, d) for d in during)  # a receiver already moved to the new secret
        assert all(
            signature_matches(old.signature_secret, str(d.timestamp_ms), d.raw_body, d.headers["X-Signature"])
            for d in during
        )

        with write_session(engine) as session:  # the overlap's end, as time would bring it
            session.execute(
                update(WebhookEndpoint)
                .where(col(WebhookEndpoint.organization_id) == org.organization_id)
                .values(previous_until=utcnow() - timedelta(seconds=1))
            )
        await deliver_one(live_ctx, org.organization_id, 4, receiver)
        after = receiver.deliveries[3]
        assert "X-Signature-Next" not in after.headers
        assert verifies(new, after) and not verifies(old.signature_secret, after)

    [*_, record] = changes(engine, org.organization_id)
    assert record.type == "WEBHOOK_CONFIGURED" and record.data["secretsChanged"] == ["signatureSecret"]
    assert new not in str(record.data) and old.signature_secret not in str(record.data)


async def test_a_rotation_needs_a_webhook_and_an_overlap_in_range(
    live_ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    bare = new_org(engine, cipher, settings)
    with pytest.raises(NotFound):
        webhooks.rotate_signature_secret(live_ctx, OWNER, bare.organization_id)
    webhooks.configure(live_ctx, OWNER, bare.organization_id, "https://hooks.example.com/x")
    for hours in (0, 169, -1):
        with pytest.raises(Invalid, match="1 to 168 hours"):
            webhooks.rotate_signature_secret(live_ctx, OWNER, bare.organization_id, overlap_hours=hours)
    first = webhooks.rotate_signature_secret(live_ctx, OWNER, bare.organization_id, overlap_hours=24)
    again = webhooks.rotate_signature_secret(live_ctx, OWNER, bare.organization_id, overlap_hours=48)
    # a rotation during the overlap replaces the secret being phased in; the oldest keeps its end
    assert again.overlap_until == first.overlap_until
    kept = store.get_config(engine, cipher, bare.organization_id)
    assert kept is not None and kept.signature_secret == again.signature_secret
