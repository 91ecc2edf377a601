"""Every webhook event the service sends, read by each SDK release the way its integrators do:
``humanos_sdk.process_webhook`` (signature, freshness, decryption) on the POST as received, then
the release's typed event models (``WebhookCallEvent`` and the event's own). The organization is
pinned to the release's API version, so its events carry that version's shapes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.secretbox import SecretCipher
from tests.support.api_client import Credentials
from tests.support.live_stack import LiveStack
from tests.support.portal import revoke_in_portal
from tests.support.sdk import (
    RELEASE_105,
    Sdk,
    create_request,
    decide,
    message_to,
    new_contact,
    new_org,
    raw,
    read_request,
    typed_event,
    wait_for_event,
)
from tests.support.webhook_receiver import ENCRYPTION_SECRET, SALT, SIGNATURE_SECRET, Receiver, receiving
from tests.support.webhooks import configure, create_test_event, deliver
from trust.did import web_service_did


@dataclass
class Hooked:
    """An organization pinned to the release's version, its webhook sent to ``receiver``."""

    creds: Credentials
    receiver: Receiver


@pytest.fixture(scope="module")
def hooked(sdk: Sdk, live: LiveStack) -> Iterator[Hooked]:
    creds = new_org(live, sdk.release)
    with receiving(lambda _: 204) as receiver:
        configure(
            live.engine, SecretCipher(live.settings.master_key_bytes()), creds.organization_id, receiver
        )
        yield Hooked(creds, receiver)


def recent(moment: datetime) -> bool:
    return moment.tzinfo is not None and abs(moment - datetime.now(UTC)) < timedelta(minutes=5)


def envelope_ok(sdk: Sdk, live: LiveStack, event: Any, event_type: str, request_id: str) -> None:
    """What every event carries (CONTRACT 7), as the release reads it."""
    assert event.event_type == event_type
    assert event.request_id == request_id
    assert event.issuer_did == web_service_did(live.url)
    assert event.api_version == sdk.release.api_version


async def test_credential_event_of_an_acceptance(sdk: Sdk, live: LiveStack, hooked: Hooked) -> None:
    contact = new_contact("hook")
    request = await create_request(
        live, hooked.creds, contacts=[{"contact": contact, "internalId": "subject-w"}], internalId="order-w"
    )
    await decide(live, request, contact, accept=True)
    hook = await wait_for_event(hooked.receiver, "credential", request["id"])
    event = typed_event(sdk, hook, "CredentialEvent")

    envelope_ok(sdk, live, event, "credential", request["id"])
    assert event.internal_id == "order-w"
    subject = request["subjects"][0]
    assert (event.user.contact, event.user.id, event.user.internal_id) == (
        contact,
        subject["id"],
        "subject-w",
    )
    assert event.decision.action == "accept" and recent(event.decision.var_date)
    # the mandate: credential.id is its URN
    issued = await read_request(live, hooked.creds, request["id"])
    assert event.credential.id == issued["credentials"][0]["id"]
    assert event.credential.id.startswith("urn:via:credential:")
    assert (event.credential.status, event.credential.name) == ("ACTIVE", "Rent payments")
    assert event.credential.w3c_credential["id"] == event.credential.id


async def test_credential_event_of_a_rejection(sdk: Sdk, live: LiveStack, hooked: Hooked) -> None:
    contact = new_contact("hook")
    request = await create_request(live, hooked.creds, contacts=[contact])
    await decide(live, request, contact, accept=False)
    event = typed_event(
        sdk, await wait_for_event(hooked.receiver, "credential", request["id"]), "CredentialEvent"
    )

    envelope_ok(sdk, live, event, "credential", request["id"])
    assert event.user.contact == contact
    assert event.decision.action == "reject" and recent(event.decision.var_date)
    assert event.credential.id == request["credentials"][0]["id"]  # no mandate was issued
    assert event.credential.status == ("REJECTED" if sdk.release == RELEASE_105 else "INACTIVE")


@pytest.mark.parametrize("success", [True, False], ids=["verified", "failed"])
async def test_identity_event(sdk: Sdk, live: LiveStack, hooked: Hooked, success: bool) -> None:
    """The organization reports its own check of a subject of an ORGANIZATION_KYC request."""
    contact = new_contact("kyc")
    request = await create_request(live, hooked.creds, contacts=[contact], securityLevel="ORGANIZATION_KYC")
    await message_to(live, contact)
    message = "Passport seen at the branch" if success else "The passport has expired"
    reported = await raw(
        live,
        hooked.creds,
        "POST",
        "/subject/identity",
        {"contact": contact, "success": success, "message": message},
    )
    assert reported.status_code == 200, reported.text
    event = typed_event(
        sdk, await wait_for_event(hooked.receiver, "identity", request["id"]), "IdentityEvent"
    )

    envelope_ok(sdk, live, event, "identity", request["id"])
    assert event.user.contact == contact
    assert event.user.id == request["subjects"][0]["id"]
    assert event.decision.success is success
    assert event.decision.message == message and recent(event.decision.var_date)
    if sdk.release == RELEASE_105:
        assert event.decision.is_fraud is False


async def test_otp_failed_event(sdk: Sdk, live: LiveStack, hooked: Hooked) -> None:
    """Five wrong codes lock the subject's code and tell the integrator, with where to resend one."""
    contact = new_contact("otp")
    request = await create_request(live, hooked.creds, contacts=[contact])
    message = await message_to(live, contact)
    wrong = f"{(int(message.code) + 1) % 1_000_000:06d}"
    for _ in range(5):
        answer = await live.http.post(f"{message.link}/otp", data={"code": wrong})
        assert answer.status_code in (400, 403, 429), answer.status_code
    event = typed_event(
        sdk, await wait_for_event(hooked.receiver, "otp.failed", request["id"]), "OtpFailedEvent"
    )

    envelope_ok(sdk, live, event, "otp.failed", request["id"])
    assert event.user.contact == contact
    assert event.otp.error.code == "INVALID_CODE_LIMIT" and event.otp.error.message
    assert event.otp.resend_endpoint.startswith(f"{live.url}/request/resend/{request['id']}?")


async def test_test_event(sdk: Sdk, live: LiveStack, hooked: Hooked) -> None:
    """The dashboard's "send a test event"."""
    created = create_test_event(live.engine, live.settings, hooked.creds.organization_id)
    await deliver(live.temporal, live.settings.task_queue, created)
    hook = await wait_for_event(hooked.receiver, "test", "0" * 24)
    assert hook.event is not None and hook.event["id"] == created.id
    event = typed_event(sdk, hook, "TestEvent")

    envelope_ok(sdk, live, event, "test", "0" * 24)
    assert event.message
    assert event.user.contact == "test@example.com"


async def test_mandate_revoked_event_of_a_subjects_revocation_in_the_portal(
    sdk: Sdk, live: LiveStack, hooked: Hooked
) -> None:
    """The subject revokes their mandate in the portal (issue 32): the release's
    ``process_webhook`` takes the event, and its credential reads as the release's
    ``CredentialEntity``; ``revocation.reason`` is ``subject``."""
    contact = new_contact("portal")
    request = await create_request(live, hooked.creds, contacts=[contact])
    await decide(live, request, contact, accept=True)
    await revoke_in_portal(live, contact)
    hook = await wait_for_event(hooked.receiver, "mandate.revoked", request["id"])
    config = sdk.package.WebhookConfig(
        signature_secret=SIGNATURE_SECRET, encryption_secret=ENCRYPTION_SECRET, encryption_salt=SALT
    )
    payload = sdk.package.process_webhook(hook.raw_body.decode("utf-8"), hook.headers, config)
    assert (payload["eventType"], payload["requestId"]) == ("mandate.revoked", request["id"])
    assert payload["api_version"] == sdk.release.api_version
    assert payload["revocation"]["reason"] == "subject" and payload["revocation"]["receipt"]
    credential = sdk.model("CredentialEntity").from_dict(payload["credential"])
    issued = await read_request(live, hooked.creds, request["id"])
    assert credential.id == issued["credentials"][0]["id"]
    assert credential.status == ("REVOKED" if sdk.release == RELEASE_105 else "INACTIVE")
