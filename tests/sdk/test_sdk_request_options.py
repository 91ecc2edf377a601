"""A subject's request options through the public SDK's release 1.2.0, unchanged (issue 36): its
``GenerateRequestUserDto(contact=..., secondary_contact=..., signer_quality=...)`` creates the
request; the contact's mailbox gets the link without a code, the secondary contact's the code once
the link is opened; the code opens the decision, and the issued mandate, read through the
release's typed ``RequestDetailEntity``, signs the subject's quality. A secondary contact equal to
the contact is the release's typed refusal.

Only the subject's side (opening the link, the code and acceptance on the approval page) goes
over plain HTTP."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from cli.devstack import EXAMPLE_ACTION_ID
from core.otp import mask_contact
from tests.support.journey_messages import CODE_RE, LINK_RE, SESSION_RE
from tests.support.live_stack import LiveStack
from tests.support.sdk import RELEASE_120, Sdk, new_contact, new_org, only, until
from tests.support.smtp_server import text_of

pytestmark = only(RELEASE_120)


def body_of(sdk: Sdk, user: Any) -> Any:
    m = sdk.models
    credential = m.CredentialDto(
        type="POLICY",
        name="Rent payments",
        scope="payments",
        action=m.ActionDto(id=EXAMPLE_ACTION_ID, userParams={"maxAmount": 1200}),
    )
    return m.GenerateRequestDto(credentials=[credential], users=[user], securityLevel="CONTACT")


def mails_to(live: LiveStack, contact: str) -> list[str]:
    return [text_of(r.message) for r in live.smtp.received_for(contact)]


async def test_the_code_goes_to_the_secondary_contact_and_the_quality_is_signed(
    sdk: Sdk, live: LiveStack
) -> None:
    creds = new_org(live, sdk.release)
    client = sdk.client(live.url, creds)
    contact, secondary = new_contact("link"), new_contact("code")
    user = sdk.models.GenerateRequestUserDto(
        contact=contact, secondary_contact=secondary, signer_quality="CEO of Acme"
    )
    created = await client.call(
        client.api.requests.create, body_of(sdk, user), returns="GenerateRequestEntity"
    )

    # the contact's e-mail: the link alone; nothing to the secondary contact yet
    await until(lambda: mails_to(live, contact), f"the link to {contact}", 20)
    [link_mail] = mails_to(live, contact)
    [path] = LINK_RE.findall(link_mail)
    assert CODE_RE.findall(link_mail.replace(path, "")) == []
    assert mails_to(live, secondary) == []

    # opening the link sends the code there, and the page says where (masked)
    page = await live.http.get(path)
    assert page.status_code == 200 and mask_contact(secondary) in page.text, page.text
    assert "You sign as: CEO of Acme" in page.text
    await until(lambda: mails_to(live, secondary), f"the code to {secondary}", 20)
    [code_mail] = mails_to(live, secondary)
    [code] = CODE_RE.findall(code_mail)
    assert LINK_RE.findall(code_mail) == []
    passed = await live.http.post(f"{path}/otp", data={"code": code})
    assert passed.status_code == 200, passed.text
    [session] = SESSION_RE.findall(passed.text)
    form = {"session": session, **{f"decision-{c.id}": "accept" for c in created.credentials}}
    assert (await live.http.post(f"{path}/decide", data=form)).status_code == 200

    deadline = time.monotonic() + 30
    while True:
        found = await client.call(client.api.requests.detail, created.id, returns="RequestDetailEntity")
        if found.credentials[0].status == "ACTIVE" or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    [mandate] = found.credentials
    assert mandate.status == "ACTIVE"
    [subject] = found.subjects
    assert subject.contact == contact
    assert subject.secondary_contact is None  # kept encrypted, never echoed
    assert mandate.w3c_credential["credentialSubject"]["signerQualities"] == [
        {"id": subject.id, "signerQuality": "CEO of Acme"}
    ]
    assert len(mails_to(live, contact)) == 1 and len(mails_to(live, secondary)) == 1


async def test_a_secondary_contact_equal_to_the_contact_is_refused(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    client = sdk.client(live.url, creds)
    contact = new_contact("same")
    user = sdk.models.GenerateRequestUserDto(contact=contact, secondary_contact=contact.upper())
    refused = await client.refusal(
        client.api.requests.create, body_of(sdk, user), status=400, returns="RequestsCreate400Response"
    )
    # named as the newest version names it (2026-09-01's users are its contacts)
    assert "contacts.0.secondaryContact: must differ from the subject's contact" in refused.message, refused
    long = sdk.models.GenerateRequestUserDto(contact=contact, signer_quality="q" * 101)
    too_long = await client.refusal(
        client.api.requests.create, body_of(sdk, long), status=400, returns="RequestsCreate400Response"
    )
    assert "signerQuality" in too_long.message and "100" in too_long.message, too_long
    await asyncio.sleep(0.5)
    assert live.smtp.received_for(contact) == []  # nothing was created, nobody was written to
