"""Placements through the public SDK's release 1.2.0, unchanged (issue 36, "Must show"): the release
creates a DOCUMENT credential with its ``CredentialDto(placements=[CredentialPlacementDto(...)])``,
the subjects accept on the approval page, the release reads the credential back with
``credentials.detail`` (the placements signed into its document, each signer named by DID), and the
PDF's page shows each signer's mark inside its rectangle, drawn as an image and looked at.

1.2.0 types a DOCUMENT's ``data`` as a base64 PDF; a Mandatum document is its items (SPEC.md), so
the test hands the release's own ``CredentialDtoData`` the item list (``model_construct``), which
the release sends as it is. Its ``identityType`` is typed as an object, so an ``IDENTITY_FIELD``
is sent without one (the full name). A placement off the page is refused with the release's 400.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.documents import LEASE
from tests.support.live_stack import LiveStack
from tests.support.placements import box, page_image, runs
from tests.support.sdk import RELEASE_120, Sdk, SdkClient, decide, new_contact, new_org, only, raw

pytestmark = [
    only(RELEASE_120),
    # the release's CredentialDtoData holds the item list where its model says a string
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
]


def document(m: Any, placements: list[Any]) -> Any:
    data = m.CredentialDtoData.model_construct(actual_instance=[dict(item) for item in LEASE["data"]])
    return m.CredentialDto(type="DOCUMENT", name=LEASE["name"], data=data, placements=placements)


async def create(client: SdkClient, credential: Any, *contacts: str) -> Any:
    m = client.sdk.models
    body = m.GenerateRequestDto(
        credentials=[credential],
        users=[m.GenerateRequestUserDto(contact=c) for c in contacts],
        name="Sign the lease",
        securityLevel="CONTACT",
    )
    return await client.call(client.api.requests.create, body, returns="GenerateRequestEntity")


async def test_placed_signatures_on_the_pdf_through_the_release(
    sdk: Sdk, live: LiveStack, tmp_path: Path
) -> None:
    creds = new_org(live, sdk.release)
    client = sdk.client(live.url, creds)
    m, ana, bea = sdk.models, new_contact("place-a"), new_contact("place-b")
    signature = {"x": 55, "y": 80, "width": 40, "height": 10, "pageIndex": 0}
    name = {"x": 5, "y": 80, "width": 45, "height": 6, "pageIndex": 0}
    placements = [
        m.CredentialPlacementDto(contact=ana, type="SIGNATURE", **signature),
        m.CredentialPlacementDto(contact=bea.upper(), type="IDENTITY_FIELD", **name),
    ]
    created = await create(client, document(m, placements), ana, bea)
    [entity] = created.credentials
    for contact in (ana, bea):
        await decide(live, {"credentials": [{"id": entity.id}]}, contact)

    async def issued() -> Any:
        found = await client.call(client.api.requests.detail, created.id, returns="RequestDetailEntity")
        return found if found.credentials[0].status == "ACTIVE" else None

    request = await until_async(issued, f"the document of request {created.id}")
    urn = request.credentials[0].id
    detail = await client.call(client.api.credentials.detail, urn, returns="CredentialEntity")
    record = await raw_json(live, creds, f"/request/{created.id}")
    subjects = {s["contact"]: s["id"] for s in record["subjects"]}
    signed = detail.w3c_credential["credentialSubject"]["placements"]
    assert signed == [
        {"subject": subjects[ana], "type": "SIGNATURE", **signature},
        {"subject": subjects[bea], "type": "IDENTITY_FIELD", "identityType": "FULL_NAME", **name},
    ]
    decision = {d["contact"]: d for d in record["credentials"][0]["decisions"]}[ana]

    # 1.2.0's credentials.detail takes no includePdf: the PDF is read over signed HTTP
    got = await raw_json(live, creds, f"/credential/{quote(urn, safe='')}?includePdf=true")
    pdf = base64.b64decode(got["pdf"])
    masked_ana = f"{ana[0]}\u2022\u2022\u2022@example.com"
    in_signature = " ".join(r.text for r in runs(pdf) if r.page == 0 and box(pdf, signature).holds(r))
    assert in_signature.startswith(f"{masked_ana} accepted 20"), in_signature
    assert decision["id"] in in_signature.replace(" ", ""), in_signature
    assert [r.text for r in runs(pdf) if r.page == 0 and box(pdf, name).holds(r)] == ["\u2014"]
    image = page_image(pdf, 0, tmp_path / "sdk-placements-page-0.png")
    assert image.stat().st_size > 10_000

    off = m.CredentialPlacementDto(contact=ana, type="SIGNATURE", **{**signature, "pageIndex": 3})
    refused = await client.refusal(
        client.api.requests.create,
        m.GenerateRequestDto(
            credentials=[document(m, [off])],
            users=[m.GenerateRequestUserDto(contact=ana)],
            securityLevel="CONTACT",
        ),
        status=400,
        returns="RequestsCreate400Response",
    )
    assert "page 3 is off the document" in refused.message


async def raw_json(live: LiveStack, creds: Any, path: str) -> dict[str, Any]:
    got = await raw(live, creds, "GET", path)
    assert got.status_code == 200, got.text
    return dict(got.json())


async def until_async(check: Callable[[], Awaitable[Any]], what: str, seconds: float = 30.0) -> Any:
    """``await check()``'s first truthy value, polled every 50 ms."""
    deadline = time.monotonic() + seconds
    while (found := await check()) is None:
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds:.0f} s"
        await asyncio.sleep(0.05)
    return found
