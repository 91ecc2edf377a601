"""The iframe's key on both databases (``credential_request.iframe_pub_key``, migration 0022) and
``services.journey.encrypted_messages``: each payload a JWE the key's holder opens; a key that no
longer passes gives no message at all, never a readable one."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import journey, requests
from services.context import Context
from store.db import read_session
from store.tables import CredentialRequest
from tests.support.api_client import Credentials, policy_request
from tests.support.frame_keys import new_key_pair
from wire.models import CreateRequestIn

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")
EVENTS = [{"eventType": "credential", "n": 1}, {"eventType": "credential", "n": 2, "text": "é\u2028"}]


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal)


async def test_the_key_is_stored_in_its_one_spelling(ctx: Context, engine: Engine, org: Credentials) -> None:
    pair = new_key_pair()
    body = CreateRequestIn.model_validate(policy_request(iframe={"pubKey": pair.spki.rstrip("=")}))
    created = await requests.create(
        ctx, Actor.shell_operator("alice"), org.organization_id, body, rate_per_minute=100
    )
    assert created.bundle is not None
    with read_session(engine) as session:
        row = session.get(CredentialRequest, created.bundle.request.id)
        assert row is not None and row.iframe_pub_key == pair.spki
    plain = await requests.create(
        ctx,
        Actor.shell_operator("alice"),
        org.organization_id,
        CreateRequestIn.model_validate(policy_request()),
        rate_per_minute=100,
    )
    assert plain.bundle is not None and plain.bundle.request.iframe_pub_key is None


async def test_each_payload_becomes_a_message_only_the_key_opens() -> None:
    pair = new_key_pair()
    messages = await journey.encrypted_messages(pair.spki, EVENTS)
    assert [set(m) for m in messages] == [{"type", "jwe"}] * 2
    assert {m["type"] for m in messages} == {"mandatum.encrypted"}
    assert [pair.open(m["jwe"]) for m in messages] == EVENTS
    assert await journey.encrypted_messages(pair.spki, []) == []


async def test_a_key_that_no_longer_passes_gives_no_message(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="services.journey"):
        assert await journey.encrypted_messages("MFkwEwYHKoZIzj0CAQYI", EVENTS) == []
    assert "no message posted" in caplog.text
