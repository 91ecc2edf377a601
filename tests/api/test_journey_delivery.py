"""Delivering codes for real: e-mail over SMTP, SMS through the HTTP provider adapter, and contacts
that cannot receive them (an ``otp.failed`` event each, CONTRACT 7)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any
from urllib.parse import quote

from sqlmodel import select

from core import i18n
from store import orgs
from store import otp as otp_store
from store.db import read_session
from store.tables import WebhookEvent
from tests.support.api_client import assert_error_shape, policy_request
from tests.support.journey_messages import code_in
from tests.support.live_stack import LiveStack, SmsProvider
from tests.support.smtp_server import text_of


def fresh_number() -> str:
    """A valid Portuguese mobile number (+351 91 and seven digits) no other test uses."""
    return f"+35191{uuid.uuid4().int % 10_000_000:07d}"


async def create(live: LiveStack, contact: str, **overrides: Any) -> dict[str, Any]:
    creds = live.new_org()
    resp = await live.api(creds).post("/request", policy_request(contacts=[contact], **overrides))
    assert resp.status_code == 201, resp.text
    return {**resp.json()["data"], "org": creds}


async def otp_failed(live: LiveStack, request_id: str) -> dict[str, Any]:
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


async def test_a_code_by_sms_through_the_provider(live: LiveStack) -> None:
    number = fresh_number()
    request = await create(live, number, language="SPA")
    for _ in range(200):
        if live.sms.to(number):
            break
        await asyncio.sleep(0.05)
    [sms] = live.sms.to(number)
    assert sms["authorization"] == f"Bearer {SmsProvider.TOKEN}"
    code = code_in(sms["text"])
    assert sms["text"].startswith(f"{code} es su código de seguridad")  # the request's language
    assert f"{live.url}/r/" in sms["text"] and len(sms["text"]) < 300
    # the page accepts that code
    path = sms["text"].split(live.url, 1)[1].split()[0]
    page = await live.http.post(f"{path}/otp", data={"code": code})
    assert page.status_code == 200 and "decision-" in page.text, page.text
    got = await live.api(request["org"]).get(f"/request/{request['id']}")
    assert got.json()["credentials"][0]["status"] == "PENDING"  # sent: no longer DRAFT


async def test_a_number_the_provider_refuses(live: LiveStack) -> None:
    number = fresh_number()
    live.sms.answer(number, 400)
    request = await create(live, number)
    payload = await otp_failed(live, request["id"])
    assert payload["otp"]["error"]["code"] == "INVALID_PHONE_NUMBER"
    assert payload["user"]["contact"] == number
    subject = request["subjects"][0]["id"].rsplit(":", 1)[1]
    challenge = otp_store.get_challenge(live.engine, request["id"], subject)
    assert challenge is not None and challenge.delivery_error == "INVALID_PHONE_NUMBER"
    assert challenge.code_hash == ""  # a code nobody received can never be entered


async def test_an_address_the_mail_server_refuses(live: LiveStack) -> None:
    contact = f"gone-{uuid.uuid4().hex[:8]}@example.com"
    live.smtp.refuse(contact)
    request = await create(live, contact)
    payload = await otp_failed(live, request["id"])
    assert payload["otp"]["error"]["code"] == "UNDELIVERABLE"
    did = quote(request["subjects"][0]["id"], safe="")
    assert payload["otp"]["resendEndpoint"] == f"{live.url}/request/resend/{request['id']}?id={did}"
    assert live.smtp.received_for(contact) == []


async def test_the_message_by_email(live: LiveStack) -> None:
    contact = f"mail-{uuid.uuid4().hex[:8]}@example.com"
    request = await create(live, contact, language="FRA")
    message = await live.smtp.wait_for(contact, timeout=20)
    org = request["org"]
    name = orgs.get_organization(live.engine, org.organization_id).name
    assert message["Subject"] == i18n.text("FRA", "email_subject", org=name)
    assert message["To"] == contact and message["From"] == live.settings.smtp_sender
    body = text_of(message)
    assert "Rent payments" in body and f"{live.url}/r/" in body and code_in(body)
    resend = await live.api(org).request(
        "PATCH", f"/request/resend/{request['id']}", params={"contact": contact}
    )
    assert_error_shape(resend, 429)
