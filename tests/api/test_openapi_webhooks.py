"""The OpenAPI document's webhooks against what the service really sends: every event type (and each
shape of the credential event) delivered by the running stack to a receiver, its headers and
encrypted body valid against the webhook's POST, and the event it decrypts to valid against the
event's schema (``wire.webhook_models``). With ``MANDATUM_RECORD_OPENAPI_EXAMPLES=1`` the deliveries
become the document's webhook examples (docs/api.md)."""

from __future__ import annotations

import copy
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI

from core.secretbox import SecretCipher
from tests.support.api_client import Credentials
from tests.support.live_stack import LiveStack
from tests.support.openapi import Oracle, write_examples
from tests.support.sdk import (
    EXAMPLE_ACTION_ID,
    create_request,
    decide,
    events_of,
    message_to,
    new_contact,
    raw,
    until,
    wait_for_event,
)
from tests.support.webhook_receiver import Delivery, Receiver, receiving
from tests.support.webhooks import configure, create_test_event, deliver
from wire import versioning
from wire.webhook_models import EVENTS, OTP_FAILURES

RECORD = os.environ.get("MANDATUM_RECORD_OPENAPI_EXAMPLES") == "1"
ONE_USE = {
    "type": "POLICY",
    "name": "One payment",
    "scope": "payments",
    "action": {"id": EXAMPLE_ACTION_ID, "userParams": {"maxAmount": 1200}},
    "maxExecutions": 1,
}
JSON = "application/json"


def problems(oracle: Oracle, event_type: str, hook: Delivery) -> list[str]:
    """Why ``hook`` is not a delivery of ``event_type`` as the document declares it."""
    at = ("webhooks", event_type, "post")
    operation = oracle.document["webhooks"][event_type]["post"]
    found: list[str] = []
    for i, header in enumerate(operation["parameters"]):
        value = hook.headers.get(header["name"])
        if value is None:
            found.append(f"header {header['name']} is missing")
        else:
            found += [
                f"header {header['name']}: {p}"
                for p in oracle.problems(value, *at, "parameters", str(i), "schema")
            ]
    if hook.content_type.split(";")[0] != JSON:
        found.append(f"content type {hook.content_type}")
    found += oracle.problems(json.loads(hook.raw_body), *at, "requestBody", "content", JSON, "schema")
    assert hook.event is not None and hook.signature_ok
    name = EVENTS[event_type].__name__
    found += [f"event: {p}" for p in oracle.problems(hook.event, "components", "schemas", name)]
    return found


@pytest.fixture(scope="module")
def hooked(live: LiveStack) -> Iterator[tuple[Credentials, Receiver]]:
    creds = live.new_org()
    with receiving(lambda _: 204) as receiver:
        configure(
            live.engine, SecretCipher(live.settings.master_key_bytes()), creds.organization_id, receiver
        )
        yield creds, receiver


async def deliveries(live: LiveStack, creds: Credentials, receiver: Receiver) -> dict[str, list[Delivery]]:
    """One delivery of every shape an event takes, by event type."""
    got: dict[str, list[Delivery]] = {event_type: [] for event_type in EVENTS}

    # credential: an acceptance that completes it (the mandate), one still waiting, a rejection
    ana, bea = new_contact("ana"), new_contact("bea")
    both = await create_request(
        live, creds, contacts=[{"contact": ana, "internalId": "tenant-7"}, bea], internalId="lease-42"
    )
    await decide(live, both, ana)
    got["credential"].append(await wait_for_event(receiver, "credential", both["id"]))
    await decide(live, both, bea)
    [_, complete] = await until(
        lambda: (
            len(events_of(receiver, "credential", both["id"])) == 2
            and events_of(receiver, "credential", both["id"])
        ),
        "the second acceptance's event",
    )
    got["credential"].append(complete)
    cleo = new_contact("cleo")
    refused = await create_request(live, creds, contacts=[cleo])
    await decide(live, refused, cleo, accept=False)
    got["credential"].append(await wait_for_event(receiver, "credential", refused["id"]))

    # identity: the organization's report of its own check, passed and failed
    for success in (True, False):
        contact = new_contact("kyc")
        request = await create_request(live, creds, contacts=[contact], securityLevel="ORGANIZATION_KYC")
        await message_to(live, contact)
        body: dict[str, Any] = {"contact": contact, "success": success}
        if not success:
            body["message"] = "The passport has expired"
        reported = await raw(live, creds, "POST", "/subject/identity", body)
        assert reported.status_code == 200, reported.text
        got["identity"].append(await wait_for_event(receiver, "identity", request["id"]))

    # otp.failed: five wrong codes, and an address the mail server refuses
    contact = new_contact("otp")
    request = await create_request(live, creds, contacts=[contact])
    message = await message_to(live, contact)
    wrong = f"{(int(message.code) + 1) % 1_000_000:06d}"
    for _ in range(5):
        answer = await live.http.post(f"{message.link}/otp", data={"code": wrong})
        assert answer.status_code in (400, 403, 429), answer.status_code
    got["otp.failed"].append(await wait_for_event(receiver, "otp.failed", request["id"]))
    gone = f"gone-{uuid.uuid4().hex[:8]}@example.com"
    live.smtp.refuse(gone)
    request = await create_request(live, creds, contacts=[gone])
    got["otp.failed"].append(await wait_for_event(receiver, "otp.failed", request["id"]))

    # mandate.revoked: the one allowed use of a mandate with maxExecutions 1
    dana = new_contact("dana")
    once = await create_request(live, creds, contacts=[dana], credentials=[ONE_USE])
    await decide(live, once, dana)
    accepted = (await wait_for_event(receiver, "credential", once["id"])).event or {}
    mandate_path = quote(accepted["credential"]["id"], safe="")
    presented = await raw(live, creds, "POST", f"/credential/{mandate_path}/presentation")
    vp = presented.json()["data"]["presentation"]
    execution = {"amount": 100, "payee": "Bob"}
    used = await raw(
        live, creds, "POST", "/credential/verify", {"presentation": vp, "executionParams": execution}
    )
    assert used.status_code == 200, used.text
    got["mandate.revoked"].append(await wait_for_event(receiver, "mandate.revoked", once["id"]))

    created = create_test_event(live.engine, live.settings, creds.organization_id)
    await deliver(live.temporal, live.settings.task_queue, created)
    got["test"].append(await wait_for_event(receiver, "test", "0" * 24))
    return got


async def test_every_event_is_delivered_as_the_document_declares(
    live: LiveStack, hooked: tuple[Credentials, Receiver]
) -> None:
    creds, receiver = hooked
    document = (await live.http.get("/openapi.json")).json()
    oracle = Oracle(document)
    assert sorted(document["webhooks"]) == sorted(EVENTS)
    got = await deliveries(live, creds, receiver)

    for event_type, hooks in got.items():
        assert hooks, event_type
        for hook in hooks:
            found = problems(oracle, event_type, hook)
            assert not found, (event_type, found)
            assert hook.event is not None
            assert hook.event["api_version"] == versioning.newest()
            assert hook.headers["Webhook-Id"] == hook.event["id"]

    # the shapes the schemas allow were all met: optional members present and absent
    [waiting, complete] = [h.event for h in got["credential"][:2]]
    assert waiting and complete and waiting["internalId"] == "lease-42"
    assert waiting["user"]["internalId"] == "tenant-7"
    assert waiting["credential"]["status"] == "PENDING" and waiting["credential"]["w3cCredential"] is None
    assert complete["credential"]["id"].startswith("urn:via:credential:")
    rejected = got["credential"][2].event
    assert rejected and rejected["decision"]["action"] == "reject" and "internalId" not in rejected
    assert [("message" in (h.event or {})["decision"]) for h in got["identity"]] == [False, True]
    codes = [(h.event or {})["otp"]["error"]["code"] for h in got["otp.failed"]]
    assert codes == ["INVALID_CODE_LIMIT", "UNDELIVERABLE"] and set(codes) <= set(OTP_FAILURES)

    if RECORD:
        record({t: hooks[0] for t, hooks in got.items()} | {"credential": got["credential"][1]})


def test_the_event_schemas_refuse_what_the_service_does_not_send(app: FastAPI) -> None:
    """The schemas are exact: the recorded events pass, and a member too many, one missing, a null
    for an absent member, or an unknown code fails."""
    document = app.openapi()
    oracle = Oracle(document)
    schemas = document["components"]["schemas"]
    for event_type in EVENTS:
        name = EVENTS[event_type].__name__
        [example] = schemas[name]["examples"]
        assert not oracle.problems(example, "components", "schemas", name), event_type
        assert example["eventType"] == event_type
        extra = {**example, "extra": 1}
        assert oracle.problems(extra, "components", "schemas", name), event_type
        missing = {k: v for k, v in example.items() if k != "user"}
        assert oracle.problems(missing, "components", "schemas", name), event_type
        null = copy.deepcopy(example)
        null["internalId"] = None
        assert oracle.problems(null, "components", "schemas", name), event_type
        other = {**example, "eventType": "credential" if event_type != "credential" else "test"}
        assert oracle.problems(other, "components", "schemas", name), event_type
    otp = copy.deepcopy(schemas["OtpFailedEvent"]["examples"][0])
    otp["otp"]["error"]["code"] = "SOMETHING_ELSE"
    assert oracle.problems(otp, "components", "schemas", "OtpFailedEvent")
    body = document["webhooks"]["test"]["post"]["requestBody"]["content"][JSON]["example"]
    assert list(body) == ["iv", "data", "tag"]
    assert not oracle.problems(body, "components", "schemas", "WebhookBody")
    assert oracle.problems({**body, "iv": "not base64!"}, "components", "schemas", "WebhookBody")


def record(chosen: dict[str, Delivery]) -> None:
    """The chosen deliveries become the webhooks' examples (``api/openapi_examples.json``)."""
    write_examples(
        {
            f"webhook:{event_type}": {
                "headers": {
                    name: hook.headers[name] for name in ("X-Timestamp", "X-Signature", "Webhook-Id")
                },
                "body": json.loads(hook.raw_body),
                "event": hook.event,
            }
            for event_type, hook in chosen.items()
        }
    )
