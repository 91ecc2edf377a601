"""The trusted browser session through the public SDK's release 1.2.0, unchanged (issue 36,
``iframe.cookie``): the release's ``GenerateRequestIFrameDto(pub_key=..., cookie=
GenerateRequestIFrameCookieDto(allow=True, duration=7200))`` opens a 2-hour session when the
subject enters the code, and the same browser skips the code on the organization's next request to
that contact. A duration out of 1 to 24 hours is refused with a 400 in the release's error model
(the hosted service clamps it; docs/adr/0019-trusted-browser-session.md says why not here), and
nothing is stored.

Only the subject's side (the code, the decision) goes over plain HTTP, in a browser of its own."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sqlmodel import select

from cli.devstack import EXAMPLE_ACTION_ID
from store.db import read_session
from store.tables import CredentialRequest, Decision, TrustedSession
from tests.support.api_client import LIVE_LIMITS
from tests.support.journey_messages import SESSION_RE
from tests.support.live_stack import LiveStack
from tests.support.sdk import RELEASE_120, Sdk, SdkClient, message_to, new_contact, new_org, only

pytestmark = only(RELEASE_120)


def p256_spki() -> str:
    """A P-256 public key as the release documents ``pubKey``: base64 of its SPKI (DER)."""
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(der).decode()


def request_body(sdk: Sdk, contact: str, duration: float | None = 7200) -> Any:
    m = sdk.models
    return m.GenerateRequestDto(
        credentials=[
            m.CredentialDto(
                type="POLICY",
                name="Rent payments",
                scope="payments",
                action=m.ActionDto(id=EXAMPLE_ACTION_ID, userParams={"maxAmount": 1200}),
            )
        ],
        users=[m.GenerateRequestUserDto(contact=contact)],
        name="Pay the rent",
        securityLevel="CONTACT",
        iframe=m.GenerateRequestIFrameDto(
            pub_key=p256_spki(),
            cookie=m.GenerateRequestIFrameCookieDto(allow=True, duration=duration),
        ),
    )


async def create(client: SdkClient, body: Any) -> Any:
    return await client.call(client.api.requests.create, body, returns="GenerateRequestEntity")


async def test_the_release_opens_a_session_and_the_next_request_skips_the_code(
    sdk: Sdk, live: LiveStack
) -> None:
    creds = new_org(live, sdk.release)
    client = sdk.client(live.url, creds)
    contact = new_contact("trusted")
    first = await create(client, request_body(sdk, contact))
    with read_session(live.engine) as session:
        row = session.get(CredentialRequest, first.id)
    assert row is not None and row.trusted_session_seconds == 7200

    async with httpx.AsyncClient(base_url=live.url, timeout=30, limits=LIVE_LIMITS) as browser:
        message = await message_to(live, contact)
        page = await browser.post(f"{message.link}/otp", data={"code": message.code})
        assert page.status_code == 200 and "This browser is remembered for 2 h" in page.text, page.text
        [cookie] = page.headers.get_list("set-cookie")
        assert cookie.startswith("mandatum_trusted=") and "Max-Age=7200; Path=/r/; HttpOnly" in cookie
        [session] = set(SESSION_RE.findall(page.text))
        form = {"session": session, f"decision-{first.credentials[0].id}": "accept"}
        assert (await browser.post(f"{message.link}/decide", data=form)).status_code == 200

        second = await create(client, request_body(sdk, contact))
        link = (await message_to(live, contact, nth=2)).link
        page = await browser.get(link)  # no code entered
        assert page.status_code == 200 and "no code was needed this time" in page.text, page.text
        [session] = set(SESSION_RE.findall(page.text))
        form = {"session": session, f"decision-{second.credentials[0].id}": "accept"}
        decided = await browser.post(f"{link}/decide", data=form)
        assert decided.status_code == 200 and "You approved: Rent payments." in decided.text

    async def issued() -> Any:
        found = await client.call(client.api.requests.detail, second.id, returns="RequestDetailEntity")
        return found if found.credentials[0].status == "ACTIVE" else None

    await until_async(issued, f"the mandate of request {second.id}")
    with read_session(live.engine) as session_:
        [decision] = session_.exec(select(Decision).where(Decision.credential_id == second.credentials[0].id))
        [trusted] = session_.exec(select(TrustedSession).where(TrustedSession.request_id == first.id))
    assert decision.channel == "trusted"
    assert trusted.last_used_at is not None and trusted.revoked_at is None


async def test_a_duration_out_of_range_is_refused_and_nothing_stored(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    client = sdk.client(live.url, creds)
    for duration in (3599, 86401, 7200.5):
        refused = await client.refusal(
            client.api.requests.create,
            request_body(sdk, new_contact("trusted"), duration),
            status=400,
            returns="RequestsCreate400Response",
        )
        assert isinstance(refused.message, str) and "iframe.cookie.duration" in refused.message, refused
    with read_session(live.engine) as session:
        stored = session.exec(
            select(CredentialRequest).where(CredentialRequest.organization_id == creds.organization_id)
        )
        assert list(stored) == []
    # the bounds themselves are taken
    for duration in (3600, 86400):
        made = await create(client, request_body(sdk, new_contact("trusted"), duration))
        with read_session(live.engine) as session:
            row = session.get(CredentialRequest, made.id)
        assert row is not None and row.trusted_session_seconds == duration


async def until_async(check: Callable[[], Awaitable[Any]], what: str, seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while (found := await check()) is None:
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds:.0f} s"
        await asyncio.sleep(0.05)
    return found
