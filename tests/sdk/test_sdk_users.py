"""Users through each SDK release, unchanged (issue 36): ``users.create`` imports users (each
answered as the release's ``CreateSubjectEntity``), ``users.detail`` reads one back by its contact,
its id and its internalId (the release's ``SubjectIssuerEntity``), never showing the identity; and,
with 1.2.0, a request's ``GenerateRequestUserDto(doc_id=...)`` whose identity check reads another
document fails (INACTIVE, no mandate), while the same document passes.

The subject's side (code, identity check on the development provider's page) goes over plain HTTP."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from cli.devstack import EXAMPLE_ACTION_ID
from tests.support.live_stack import LiveStack
from tests.support.sdk import (
    RELEASE_105,
    RELEASE_120,
    Sdk,
    SdkClient,
    message_to,
    new_contact,
    new_org,
    only,
    pass_code,
    read_request,
)


async def test_create_then_detail_by_contact_id_and_internal_id(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    client = sdk.client(live.url, creds)
    m, contact, ref = sdk.models, new_contact("user"), f"crm-{uuid.uuid4().hex[:8]}"
    identity = m.IdentityDto(
        fullName="Ana Maria Silva", birth="1990-04-01", docId="QX-5521", countryAlpha3="PRT"
    )
    items = [
        m.CreateSubjectDto(
            contact=contact, internalId=ref, extraContacts=["+351912000222"], identity=identity
        ),
        m.CreateSubjectDto(contact=contact),
    ]
    made = await client.call(client.api.users.create, items, idempotency_key=f"import-{ref}", returns="list")
    assert [type(r).__name__ for r in made] == ["CreateSubjectEntity"] * 2
    first, twice = made
    assert first.status == (200 if sdk.release == RELEASE_105 else 201) and first.message == "Subject created"
    assert first.user.contact == contact and first.user.internal_id == ref
    assert first.user.id.startswith("did:web:")
    assert twice.status == (407 if sdk.release == RELEASE_105 else 409)

    for by in ({"contact": contact}, {"id": first.user.id}, {"internal_id": ref}):
        user = await client.call(client.api.users.detail, **by, returns="SubjectIssuerEntity")
        assert [(c.id, c.contact) for c in user.contacts] == [(first.user.id, contact)]
        assert user.internal_id == ref and user.identity_status == "KYC"  # an identity the organization holds
        assert user.organization.contacts == ["+351912000222"]
    shown = client.transport.exchanges[-1].response or ""
    assert "QX-5521" not in shown and "Silva" not in shown and "1990" not in shown

    missing = await client.refusal(
        client.api.users.detail, contact=new_contact("nobody"), status=404, returns="UserDetail404Response"
    )
    assert missing.message and "No user" in missing.message


def _request(sdk: Sdk, contact: str, doc_id: str) -> Any:
    m = sdk.models
    credential = m.CredentialDto(
        type="POLICY",
        name="Rent payments",
        scope="payments",
        action=m.ActionDto(id=EXAMPLE_ACTION_ID, userParams={"maxAmount": 1200}),
    )
    return m.GenerateRequestDto(
        credentials=[credential],
        users=[m.GenerateRequestUserDto(contact=contact, doc_id=doc_id)],
        name="Pay the rent",
        securityLevel="HUMANOS_REVALIDATION",
    )


async def _identity_check(live: LiveStack, contact: str, document_number: str) -> int:
    """The subject enters the code and passes the provider's check, its document saying
    ``document_number``; the status of the page they come back to."""
    message = await message_to(live, contact)
    session = await pass_code(live, message)
    started = await live.http.post(f"{message.link}/kyc", data={"session": session})
    assert started.status_code == 303, started.text
    page = await live.http.get(started.headers["location"])
    [return_url] = re.findall(r'name="return" value="([^"]+)"', page.text)
    finished = await live.http.post(
        started.headers["location"].split("?")[0],
        data={"documentNumber": document_number, "return": return_url.replace("&amp;", "&")},
    )
    assert finished.status_code == 303, finished.text
    return (await live.http.get(finished.headers["location"])).status_code


@only(RELEASE_120)
async def test_a_doc_id_the_identity_check_does_not_return_fails_it(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    client: SdkClient = sdk.client(live.url, creds)
    wrong, right = new_contact("docid"), new_contact("docid")
    failing = await client.call(
        client.api.requests.create, _request(sdk, wrong, "AB 123 456"), returns="GenerateRequestEntity"
    )
    passing = await client.call(
        client.api.requests.create, _request(sdk, right, "ab-123456"), returns="GenerateRequestEntity"
    )

    assert await _identity_check(live, wrong, "ZZ 999 999") == 403

    async def closed() -> Any:
        found = await client.call(client.api.requests.detail, failing.id, returns="RequestDetailEntity")
        return found if found.credentials[0].status == "INACTIVE" else None

    record = await until_async(closed, f"request {failing.id} closed")
    assert record.credentials[0].inactive_at == {"reason": "REJECTED"}

    assert await _identity_check(live, right, "AB123456") == 200
    fresh = await read_request(live, creds, passing.id)
    assert (
        fresh["subjects"][0]["identityStatus"] == "VERIFIED"
        and fresh["credentials"][0]["status"] == "PENDING"
    )


async def until_async(check: Callable[[], Awaitable[Any]], what: str, seconds: float = 30.0) -> Any:
    """``await check()``'s first value that is not None, polled every 100 ms."""
    deadline = time.monotonic() + seconds
    while (found := await check()) is None:
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds:.0f} s"
        await asyncio.sleep(0.1)
    return found
