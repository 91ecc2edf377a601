"""A subject with a ``secondaryContact`` (issue 36): their contact receives the link without a
code; opening it sends the code to the secondary contact (once), which the page names masked; a
resend goes there too; the code works as any other; the trail says which channel got it, never the
contact or the code.

The first test delivers for real (SMTP to the test mail server, SMS through the provider
adapter); the resend runs on the time-skipping server (the minute between sends is skipped)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from sqlmodel import select
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from adapters.delivery import Outbox, OutboxEntry
from core import i18n
from core.otp import JourneySecrets, mask_contact
from orchestration.temporal import request_handle
from store.db import read_session
from store.tables import WebhookEvent
from tests.support.api_client import SignedClient, policy_request
from tests.support.journey_messages import SESSION_RE, TEST_OUTBOX, code_in, journey_secrets, message_for
from tests.support.live_stack import LiveStack
from tests.support.smtp_server import text_of
from tests.support.workflow import executor, sends_returned, ts_queue  # noqa: F401 (fixtures)
from workflows.credential_request import CredentialRequestWorkflow


def fresh_number() -> str:
    return f"+35191{uuid.uuid4().int % 10_000_000:07d}"


async def sms_to(live: LiveStack, number: str, count: int) -> list[dict[str, Any]]:
    for _ in range(300):
        if len(live.sms.to(number)) >= count:
            break
        await asyncio.sleep(0.05)
    return live.sms.to(number)


async def test_the_link_to_the_contact_the_code_to_the_secondary(live: LiveStack) -> None:
    contact, number = f"prim-{uuid.uuid4().hex[:8]}@example.com", fresh_number()
    creds = live.new_org()
    api = live.api(creds)
    body = policy_request(
        contacts=[{"contact": contact, "secondaryContact": number, "signerQuality": "CEO of Acme"}]
    )
    created = await api.post("/request", body)
    assert created.status_code == 201, created.text
    request = created.json()["data"]
    subject = request["subjects"][0]["id"].rsplit(":", 1)[1]
    secrets = JourneySecrets(live.settings.master_key_bytes())
    first_code = secrets.code_for(request["id"], subject, 1)

    # the contact's message: the link, no code, and where the code will go
    mail = text_of(await live.smtp.wait_for(contact, timeout=20))
    path = f"/r/{secrets.link_token(request['id'], subject)}"
    assert f"{live.url}{path}" in mail
    assert first_code not in mail.replace(path, "") and "security code:" not in mail
    assert "your security code is sent to your other contact" in mail
    got = await api.get(f"/request/{request['id']}")
    assert got.json()["credentials"][0]["status"] == "PENDING"  # the subject was reached
    assert live.sms.to(number) == []  # no code before the link is opened

    # opening the link sends the code to the secondary contact, by SMS, without the link
    page = await live.http.get(path)
    assert page.status_code == 200, page.text
    assert i18n.text("ENG", "otp_sent_to", contact=mask_contact(number)) in page.text
    assert number not in page.text and contact not in page.text
    assert "You sign as: CEO of Acme" in page.text
    [sms] = await sms_to(live, number, 1)
    assert code_in(sms["text"]) == first_code and "/r/" not in sms["text"]
    assert live.smtp.received_for(number) == [] and len(live.smtp.received_for(contact)) == 1

    # opened again: no second code
    assert (await live.http.get(path)).status_code == 200
    await asyncio.sleep(0.5)
    assert len(live.sms.to(number)) == 1

    # a wrong code is refused, the code sent to the secondary contact opens the decision
    wrong = await live.http.post(f"{path}/otp", data={"code": f"{(int(first_code) + 1) % 10**6:06d}"})
    assert wrong.status_code == 400
    right = await live.http.post(f"{path}/otp", data={"code": first_code})
    assert right.status_code == 200 and "decision-" in right.text, right.text
    session = SESSION_RE.search(right.text)
    assert session is not None
    form = {"session": session.group(1), f"decision-{request['credentials'][0]['id']}": "accept"}
    assert (await live.http.post(f"{path}/decide", data=form)).status_code == 200
    for _ in range(200):
        got = await api.get(f"/request/{request['id']}")
        if got.json()["credentials"][0]["status"] == "ACTIVE":
            break
        await asyncio.sleep(0.05)
    assert got.json()["credentials"][0]["status"] == "ACTIVE"

    # the trail: the code's channel, by the subject who opened the link; never the contact or code
    trail = await api.get("/activity", params={"type": "OTP_SENT", "requestId": request["id"]})
    [record] = trail.json()["data"]
    assert record["actor"] == f"subject:{subject}"
    assert record["data"] == {
        "subject": subject,
        "channel": "sms",
        "sendNumber": 1,
        "recipient": "secondaryContact",
    }
    # the decision is recorded with the channel the subject proved: the secondary contact's
    decisions = await api.get(
        "/activity", params={"type": "HUMAN_DECISION_ACCEPT", "requestId": request["id"]}
    )
    assert [r["data"]["channel"] for r in decisions.json()["data"]] == ["sms"]
    everything = json.dumps((await api.get("/activity", params={"requestId": request["id"]})).json())
    assert number not in everything and number[1:] not in everything and first_code not in everything


async def codes_to(to: str, count: int) -> list[OutboxEntry]:
    """The ``count`` newest messages to ``to`` in the test outbox, newest first (waiting for them)."""
    for _ in range(300):
        found = await asyncio.to_thread(Outbox(TEST_OUTBOX).entries, to, 50)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {count} messages to {to}")


async def test_a_resend_goes_to_the_secondary_contact(
    ts_env: WorkflowEnvironment, ts_api: SignedClient
) -> None:
    number, secondary = fresh_number(), f"second-{uuid.uuid4().hex[:8]}@example.com"
    created = await ts_api.post(
        "/request",
        policy_request(contacts=[{"contact": number, "secondaryContact": secondary}], language="PRT"),
    )
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    request_id, subject = data["id"], data["subjects"][0]["id"].rsplit(":", 1)[1]
    link = await message_for(request_id, subject)  # the link, by SMS to the contact
    assert (link.channel, link.to) == ("sms", number) and "outro contacto" in link.text
    secrets = journey_secrets()
    assert secrets.code_for(request_id, subject, 1) not in link.text.split("http")[0]
    path = f"/r/{secrets.link_token(request_id, subject)}"

    page = await ts_api.http.get(path)
    assert page.status_code == 200 and mask_contact(secondary) in page.text, page.text
    [first] = await codes_to(secondary, 1)
    assert first.channel == "email" and first.subject.endswith(": o seu código de segurança")
    assert code_in(first.text) == secrets.code_for(request_id, subject, 1) and "/r/" not in first.text

    await ts_env.sleep(61)
    resent = await ts_api.http.post(f"{path}/resend", data={})
    assert resent.status_code == 200, resent.text
    second, _ = await codes_to(secondary, 2)
    new_code = code_in(second.text)
    assert new_code == secrets.code_for(request_id, subject, 2)
    assert len(await asyncio.to_thread(Outbox(TEST_OUTBOX).entries, number, 50)) == 1  # the link alone
    right = await ts_api.http.post(f"{path}/otp", data={"code": new_code})
    assert right.status_code == 200 and "decision-" in right.text, right.text

    trail = await ts_api.get(
        "/activity", params={"type": ["OTP_SENT", "OTP_RESENT"], "requestId": request_id}
    )
    rows = sorted(
        (r["type"], r["actor"], r["data"]["channel"], r["data"].get("recipient"))
        for r in trail.json()["data"]
    )
    assert rows == [
        ("OTP_RESENT", f"subject:{subject}", "email", "secondaryContact"),
        ("OTP_SENT", f"subject:{subject}", "email", "secondaryContact"),
    ]
    handle = request_handle(ts_env.client, request_id)
    await sends_returned(handle)
    assert (await ts_api.delete(f"/request/{request_id}")).status_code == 200
    await handle.result()
    # the new path (the link, the open, the codes to the secondary contact) replays deterministically
    replayer = Replayer(workflows=[CredentialRequestWorkflow], data_converter=pydantic_data_converter)
    replayed = await replayer.replay_workflow(await handle.fetch_history())
    assert replayed.replay_failure is None


async def test_a_code_resent_before_the_link_is_opened(
    ts_env: WorkflowEnvironment, ts_api: SignedClient
) -> None:
    """Before the link is opened no code exists (a code entered is "no code", at once); the
    integrator's resend sends it to the secondary contact, and opening the link then sends none."""
    contact, secondary = f"prim-{uuid.uuid4().hex[:8]}@example.com", f"sec-{uuid.uuid4().hex[:8]}@example.com"
    created = await ts_api.post(
        "/request", policy_request(contacts=[{"contact": contact, "secondaryContact": secondary}])
    )
    data = created.json()["data"]
    request_id, subject = data["id"], data["subjects"][0]["id"].rsplit(":", 1)[1]
    await message_for(request_id, subject)  # the link went out
    path = f"/r/{journey_secrets().link_token(request_id, subject)}"
    early = await ts_api.http.post(f"{path}/otp", data={"code": "123456"})
    assert early.status_code == 403 and i18n.text("ENG", "otp_no_code") in early.text

    resent = await ts_api.request("PATCH", f"/request/resend/{request_id}", params={"contact": contact})
    assert resent.status_code == 200, resent.text
    [code] = await codes_to(secondary, 1)
    assert code_in(code.text) == journey_secrets().code_for(request_id, subject, 1)
    assert (await ts_api.http.get(path)).status_code == 200
    await asyncio.sleep(0.3)
    assert len(await asyncio.to_thread(Outbox(TEST_OUTBOX).entries, secondary, 50)) == 1
    trail = await ts_api.get(
        "/activity", params={"type": ["OTP_SENT", "OTP_RESENT"], "requestId": request_id}
    )
    assert [(r["type"], r["actor"], r["data"]["recipient"]) for r in trail.json()["data"]] == [
        ("OTP_RESENT", f"apiKey:{ts_api.creds.key_id}", "secondaryContact")
    ]
    handle = request_handle(ts_env.client, request_id)
    await sends_returned(handle)
    assert (await ts_api.delete(f"/request/{request_id}")).status_code == 200
    await handle.result()


async def otp_failed(live: LiveStack, request_id: str) -> dict[str, Any]:
    """The request's one ``otp.failed`` event (waiting for it)."""
    for _ in range(200):
        with read_session(live.engine) as session:
            found = session.exec(
                select(WebhookEvent).where(
                    WebhookEvent.request_id == request_id, WebhookEvent.event_type == "otp.failed"
                )
            ).all()
        if found:
            [event] = found
            return dict(event.payload)
        await asyncio.sleep(0.05)
    raise AssertionError(f"no otp.failed event for request {request_id}")


async def test_a_link_the_contact_cannot_receive_is_an_otp_failed_event(live: LiveStack) -> None:
    contact, number = f"gone-{uuid.uuid4().hex[:8]}@example.com", fresh_number()
    live.smtp.refuse(contact)
    creds = live.new_org()
    created = await live.api(creds).post(
        "/request", policy_request(contacts=[{"contact": contact, "secondaryContact": number}])
    )
    assert created.status_code == 201, created.text
    payload = await otp_failed(live, created.json()["data"]["id"])
    assert payload["otp"]["error"]["code"] == "UNDELIVERABLE"
    assert payload["user"]["contact"] == contact and number not in json.dumps(payload)
    assert live.sms.to(number) == []  # no code without the link
