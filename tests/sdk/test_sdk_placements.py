"""Placements and inline credentials through the public SDK's release 1.2.0, unchanged (issue 36,
"Must show"): the release creates a DOCUMENT credential of its own PDF with its stock
``CredentialDto(type="DOCUMENT", data=CredentialDtoData(<base64 PDF>),
placements=[CredentialPlacementDto(...)])``, the subjects accept on the approval page, the release
reads the credential back with ``credentials.detail`` (the PDF's digest and the placements signed
into its document, each signer named by DID), and the PDF's page shows each signer's mark inside
its rectangle, drawn as an image and looked at. A JSON credential (``data`` the object's JSON
text, as the release types it) is accepted and read back signed with its object.

The release types ``identityType`` as an object, so an ``IDENTITY_FIELD`` is sent without one (the
full name). A placement off the PDF's pages is refused with the release's 400.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fpdf import FPDF

from tests.support.live_stack import LiveStack
from tests.support.placements import box, page_image, runs
from tests.support.sdk import RELEASE_120, Sdk, SdkClient, decide, new_contact, new_org, only, raw
from trust.credentials import sri_sha256

pytestmark = only(RELEASE_120)
TERMS = {"plan": "pro", "limits": {"daily": 500}, "renewal": True}


def lease_pdf() -> bytes:
    """A small two-page PDF (fpdf2), its text at the top, away from the placements' rectangles."""
    doc = FPDF()
    doc.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))
    doc.set_font("helvetica", size=12)
    for page in (1, 2):
        doc.add_page()
        doc.cell(text=f"Lease contract, page {page}")
    return bytes(doc.output())


def document(m: Any, placements: list[Any]) -> Any:
    """The release's own DOCUMENT: its data a base64 PDF, as the model types it."""
    data = m.CredentialDtoData(base64.b64encode(lease_pdf()).decode("ascii"))
    return m.CredentialDto(type="DOCUMENT", name="Lease contract", data=data, placements=placements)


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
    [item] = detail.w3c_credential["credentialSubject"]["data"]  # the PDF's digest, signed
    assert (item["type"], item["value"]) == ("PDF", sri_sha256(lease_pdf()))
    assert item["fields"][0]["pages"] == 2
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

    off = m.CredentialPlacementDto(contact=ana, type="SIGNATURE", **{**signature, "pageIndex": 2})
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
    assert "page 2 is off the document, whose PDF has 2 pages" in refused.message


async def test_a_json_credential_through_the_release(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    client = sdk.client(live.url, creds)
    m, ana = sdk.models, new_contact("json")
    terms = m.CredentialDto(type="JSON", name="Terms", data=m.CredentialDtoData(json.dumps(TERMS)))
    created = await create(client, terms, ana)
    [entity] = created.credentials
    await decide(live, {"credentials": [{"id": entity.id}]}, ana)

    async def issued() -> Any:
        found = await client.call(client.api.requests.detail, created.id, returns="RequestDetailEntity")
        return found if found.credentials[0].status == "ACTIVE" else None

    request = await until_async(issued, f"the JSON credential of request {created.id}")
    detail = await client.call(
        client.api.credentials.detail, request.credentials[0].id, returns="CredentialEntity"
    )
    [item] = detail.w3c_credential["credentialSubject"]["data"]
    assert (item["label"], item["type"]) == ("Terms", "JSON")
    assert json.loads(item["value"]) == TERMS

    listed = m.CredentialDto(type="JSON", name="Terms", data=m.CredentialDtoData(json.dumps([1, 2])))
    refused = await client.refusal(
        client.api.requests.create,
        m.GenerateRequestDto(
            credentials=[listed], users=[m.GenerateRequestUserDto(contact=ana)], securityLevel="CONTACT"
        ),
        status=400,
        returns="RequestsCreate400Response",
    )
    assert "credentials.0.data: a JSON credential's data is a JSON object" in refused.message


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
