"""The iframe's messages encrypted to the integrator's key through each stock SDK release (issue 36,
"Must show"): 1.2.0 registers the key with ``GenerateRequestIFrameDto(pub_key=...)``, 1.0.5 with
its ``pubKey``; the subject decides in the iframe; the message the page posts to the parent is
decrypted with the private key into exactly the ``credential`` event the release's own
``process_webhook`` opens from the webhook, and read by the release's typed ``CredentialEvent``.
A key that is not P-256 is the release's typed 400 naming it, and nothing is stored.

Only the subject's side (the code and the decision in the iframe) goes over plain HTTP."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from sqlmodel import col, select

from cli.devstack import EXAMPLE_ACTION_ID
from core.secretbox import SecretCipher
from store import orgs
from store.db import read_session
from store.tables import Subject
from tests.support.api_client import Credentials
from tests.support.frame_keys import new_key_pair, posted
from tests.support.journey_messages import SESSION_RE
from tests.support.live_stack import LiveStack
from tests.support.sdk import (
    RELEASE_105,
    Sdk,
    SdkClient,
    message_to,
    new_contact,
    new_org,
    raw,
    typed_event,
    wait_for_event,
)
from tests.support.webhook_receiver import Receiver, receiving
from tests.support.webhooks import configure

PARENT = "https://app.example.com"


@dataclass
class Integrator:
    creds: Credentials
    client: SdkClient
    receiver: Receiver


@pytest.fixture(scope="module")
def integrator(sdk: Sdk, live: LiveStack) -> Iterator[Integrator]:
    """An organization pinned to the release's version, its webhook received, PARENT allowed."""
    creds = new_org(live, sdk.release)
    orgs.set_frame_origins(live.engine, creds.organization_id, [PARENT], True, actor="operator:tests")
    with receiving(lambda _: 204) as receiver:
        configure(
            live.engine, SecretCipher(live.settings.master_key_bytes()), creds.organization_id, receiver
        )
        yield Integrator(creds, sdk.client(live.url, creds), receiver)


def request_body(sdk: Sdk, contact: str, pub_key: str) -> Any:
    """The release's GenerateRequestDto with the iframe's key, as its integrator builds it."""
    m = sdk.models
    credential = m.CredentialDto(
        type="POLICY",
        name="Rent payments",
        scope="payments",
        action=m.ActionDto(id=EXAMPLE_ACTION_ID, userParams={"maxAmount": 1200}),
    )
    fields: dict[str, Any] = {"credentials": [credential], "name": "Pay the rent", "securityLevel": "CONTACT"}
    if sdk.release == RELEASE_105:
        return m.GenerateRequestDto(contacts=[contact], pubKey=pub_key, **fields)
    iframe = m.GenerateRequestIFrameDto(pub_key=pub_key)
    return m.GenerateRequestDto(users=[m.GenerateRequestUserDto(contact=contact)], iframe=iframe, **fields)


async def decide_in_the_iframe(live: LiveStack, creds: Credentials, request_id: str, contact: str) -> str:
    """The subject enters the code and accepts in the iframe inside PARENT: the last page's HTML."""
    link = await raw(
        live, creds, "GET", f"/request/link/{request_id}", params={"contact": contact, "parent": PARENT}
    )
    assert link.status_code == 200, link.text
    url = link.json()["data"]["iframeUrl"]
    frame = {"surface": "iframe", "parent": PARENT}
    message = await message_to(live, contact)
    assert (await live.http.get(url)).status_code == 200
    otp = await live.http.post(f"{message.link}/otp", data={"code": message.code, **frame})
    assert otp.status_code == 200, otp.text
    [session] = SESSION_RE.findall(otp.text)
    credential_id = otp.text.split('name="decision-', 1)[1].split('"', 1)[0]
    done = await live.http.post(
        f"{message.link}/decide", data={"session": session, f"decision-{credential_id}": "accept", **frame}
    )
    assert done.status_code == 200, done.text
    return done.text


async def test_the_posted_message_opens_to_the_webhooks_event(
    sdk: Sdk, live: LiveStack, integrator: Integrator
) -> None:
    pair, contact = new_key_pair(), new_contact("iframe")
    client = integrator.client
    created = await client.call(
        client.api.requests.create, request_body(sdk, contact, pair.spki), returns="GenerateRequestEntity"
    )
    html = await decide_in_the_iframe(live, integrator.creds, created.id, contact)

    [message] = posted(html)
    assert set(message) == {"type", "jwe"} and message["type"] == "mandatum.encrypted"
    opened = pair.open(message["jwe"])
    hook = await wait_for_event(integrator.receiver, "credential", created.id)
    assert opened == hook.event  # the release's process_webhook opens the same event from the webhook
    event = typed_event(sdk, hook, "CredentialEvent")
    from_frame = sdk.model("CredentialEvent").from_dict(opened)  # the release reads it as it is
    assert from_frame == event
    assert (from_frame.request_id, from_frame.decision.action, from_frame.user.contact) == (
        created.id,
        "accept",
        contact,
    )
    assert from_frame.api_version == sdk.release.api_version  # in the release's own shapes
    for readable in (created.id, contact, opened["credential"]["id"]):  # none of it in the page
        assert readable not in html
    with pytest.raises(Exception):  # noqa: B017 (another P-256 key opens nothing)
        new_key_pair().open(message["jwe"])


def spki(key: Any) -> str:
    return base64.b64encode(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).decode()


@pytest.mark.parametrize(
    ("kind", "key", "why"),
    [
        ("RSA", spki(rsa.generate_private_key(65537, 2048).public_key()), "not an RSA key"),
        ("P-384", spki(ec.generate_private_key(ec.SECP384R1()).public_key()), "not on secp384r1"),
        ("garbage", "bm90IGEga2V5", "not a DER SubjectPublicKeyInfo"),
    ],
)
async def test_a_key_that_is_not_p256_is_the_releases_typed_400(
    sdk: Sdk, live: LiveStack, integrator: Integrator, kind: str, key: str, why: str
) -> None:
    client, contact = integrator.client, new_contact("badkey")
    refused = await client.refusal(
        client.api.requests.create,
        request_body(sdk, contact, key),
        status=400,
        returns="RequestsCreate400Response",
    )
    assert refused.message.startswith("iframe.pubKey") and why in refused.message, (kind, refused)
    with read_session(live.engine) as session:  # nothing stored: no subject of that contact
        assert session.exec(select(Subject).where(col(Subject.contact) == contact)).first() is None
    assert live.smtp.received_for(contact) == []
