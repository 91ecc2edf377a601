"""A DOCUMENT approval's placements (issue 36): the credential placement model (percent of the
page from its top-left corner, the same types and rules) with a ``signer`` (an index into the
contacts of the request that takes the approval) instead of a contact; checked when the approval
is made (its PDF's pages) and when a request takes it (its contacts), nothing stored on a refusal;
given to the signer's contact on the credential; and stamped on the approval's own PDF, which the
credential's PDF shows first, before the credential's sheet.

``MANDATUM_RECORD_SCREENSHOTS=1`` writes the stamped page to
``docs/screenshots/pdf-approval-placements.png``."""

from __future__ import annotations

import io
import os
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF
from pydantic import ValidationError
from pypdf import PdfReader, PdfWriter
from sqlalchemy import Engine, func
from sqlmodel import Session, select

from api import pdf
from core.settings import Settings
from services import approvals
from services.context import Context
from services.errors import Invalid
from store.keys import did_resolver
from store.tables import Approval, CredentialRequest
from tests.support.api_client import Credentials, SignedClient, assert_message
from tests.support.approvals import ALICE, approval_spec, make
from tests.support.mandates import accept_all, create_request
from tests.support.placements import page_image, pdf_of, runs, text_in
from trust.credentials import sri_sha256, verify_document_credential
from wire.approvals import ApprovalSpec, WorkflowSpec

pytestmark = pytest.mark.usefixtures("no_server_errors")
ANA, BEA = "ana@example.com", "bea@example.com"
SIGNATURE = {"type": "SIGNATURE", "x": 55, "y": 80, "width": 40, "height": 10, "pageIndex": 0}
DATE = {"type": "DATE", "x": 5, "y": 85, "width": 25, "height": 5, "pageIndex": 0}
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "pdf-approval-placements.png"


def letter(pages: int = 2) -> bytes:
    """An uploaded contract: US Letter pages (not the sheet's A4), each with a line of text."""
    doc = FPDF(format="letter", unit="pt")
    doc.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))
    doc.set_font("helvetica", size=14)
    for i in range(pages):
        doc.add_page()
        doc.set_xy(72, 72)
        doc.cell(text=f"Lease agreement, page {i + 1}")
        doc.set_xy(72, 600)
        doc.cell(text="Signed by the tenant:")
    return bytes(doc.output())


def contract(*placements: dict[str, Any]) -> dict[str, Any]:
    return {"name": "Lease contract", "type": "DOCUMENT", "placements": list(placements)}


def count(engine: Engine, table: Any, org_id: str) -> int:
    with Session(engine) as session:
        return session.exec(
            select(func.count()).select_from(table).where(table.organization_id == org_id)
        ).one()


BAD = [
    ({**SIGNATURE, "x": 70}, "x + width is 110"),
    ({**SIGNATURE, "y": 95}, "y + height is 105"),
    ({**SIGNATURE, "x": 300}, "less than or equal to 100"),  # PDF points are not taken any more
    ({**SIGNATURE, "width": 0}, "width and height must be more than 0"),
    ({**SIGNATURE, "x": "10"}, "must be a number"),
    ({**SIGNATURE, "type": "NAME"}, "placements.0.type"),
    ({**SIGNATURE, "type": "OPEN_TEXT"}, "type OPEN_TEXT is not offered"),
    ({**SIGNATURE, "identityType": "FULL_NAME"}, "identityType is for an IDENTITY_FIELD"),
    ({**SIGNATURE, "signer": -1}, "placements.0.signer"),
    ({**SIGNATURE, "signer": "1"}, "placements.0.signer"),
    ({**SIGNATURE, "signer": 100}, "placements.0.signer"),
    ({**SIGNATURE, "contact": ANA}, "placements.0.contact"),  # a template names no contact
]


@pytest.mark.parametrize(("placement", "fragment"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_a_bad_approval_placement_is_refused(placement: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError) as refused:
        ApprovalSpec.model_validate(contract(placement))
    assert fragment in str(refused.value)


def test_placements_are_kept_as_credential_placements_with_a_signer(ctx: Context, org: Credentials) -> None:
    org_id = org.organization_id
    identity = {**SIGNATURE, "type": "IDENTITY_FIELD", "y": 5, "height": 4, "signer": 1.0}
    view = approvals.create(ctx, ALICE, org_id, approval_spec(contract(SIGNATURE, identity)), letter())
    assert view.current.content["placements"] == [
        {"signer": 0, **SIGNATURE},  # signer 0 when not given
        {"signer": 1, **identity, "identityType": "FULL_NAME"},  # as a credential placement keeps it
    ]


def test_a_page_off_the_uploaded_pdf_is_refused_and_nothing_stored(
    ctx: Context, engine: Engine, org: Credentials
) -> None:
    org_id = org.organization_id
    spec = approval_spec(contract(SIGNATURE, {**DATE, "pageIndex": 2}))
    with pytest.raises(Invalid) as refused:
        approvals.create(ctx, ALICE, org_id, spec, letter(pages=2))
    assert refused.value.message == [
        "placements.1.pageIndex: page 2 is off the PDF, which has 2 pages (pageIndex counts from 0)"
    ]
    assert count(engine, Approval, org_id) == 0
    made = make(ctx, org_id, contract(SIGNATURE), letter(pages=1))
    with pytest.raises(Invalid, match="page 1 is off the PDF, which has 1 page "):
        approvals.new_version(
            ctx, ALICE, org_id, made, approval_spec(contract({**SIGNATURE, "pageIndex": 1})), letter(pages=1)
        )
    assert approvals.get(ctx, org_id, made).current.number == 1


@pytest.mark.both_databases  # the credential's placements, written in the request's transaction
async def test_a_signer_beyond_the_requests_contacts_is_refused(
    api: SignedClient, ctx: Context, engine: Engine
) -> None:
    org_id = api.creds.organization_id
    both = make(ctx, org_id, contract(SIGNATURE, {**DATE, "signer": 1}), letter())
    workflow = approvals.create_workflow(ctx, ALICE, org_id, WorkflowSpec(name="Lease", approvals=[both]))
    alone = {"contacts": [ANA], "securityLevel": "CONTACT"}
    refused = await api.post("/request", {**alone, "resourcesIds": [both]})
    assert_message(refused, f"resourcesIds.0: approval {both} placements.1.signer is 1", "names 1 contact ")
    refused = await api.post("/request", {**alone, "groupIds": [workflow.workflow.id]})
    assert_message(refused, f"groupIds.0: approval {both} placements.1.signer is 1")
    assert count(engine, CredentialRequest, org_id) == 0

    created = await create_request(
        api, contacts=[" Ana@Example.com", BEA], credentials=[], resourcesIds=[both]
    )
    [credential] = created["credentials"]
    assert credential["placements"] == [{"contact": ANA, **SIGNATURE}, {"contact": BEA, **DATE}]
    got = (await api.get(f"/request/{created['id']}")).json()
    assert got["credentials"][0]["placements"] == credential["placements"]
    [item] = credential["data"]
    assert "placements" not in item["fields"][0]  # on the credential, given to the contacts


@pytest.mark.both_databases  # the approval's PDF and digest read back through the credential
@pytest.mark.usefixtures("worker")
async def test_the_marks_are_stamped_on_the_approvals_pdf_then_the_sheet_follows(
    api: SignedClient, ctx: Context, temporal: Any, engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    uploaded = letter(pages=2)
    approval_id = make(ctx, api.creds.organization_id, contract(SIGNATURE, DATE), uploaded)
    request = await create_request(
        api, contacts=[ANA], securityLevel="CONTACT", credentials=[], resourcesIds=[approval_id]
    )
    cred_id = request["credentials"][0]["id"]

    before = await pdf_of(api, cred_id)
    reader = PdfReader(io.BytesIO(before))
    assert [float(v) for v in reader.pages[0].mediabox] == [0, 0, 612, 792]  # the uploaded page's size
    texts = [page.extract_text() for page in reader.pages]
    assert "Lease agreement, page 1" in texts[0] and "Lease agreement, page 2" in texts[1]
    assert "What the subjects are asked to approve" in texts[2] and cred_id in "".join(texts[2:])
    assert [text_in(before, p).replace(" ", "") for p in (SIGNATURE, DATE)] == [
        "Signature:a•••@example.com",
        "Date:a•••@example.com",
    ]

    [issued] = await accept_all(api, temporal, request)
    after = await pdf_of(api, issued["id"])
    assert after != before
    accepted = issued["decisions"][0]
    signature = text_in(after, SIGNATURE)
    assert signature.startswith(f"a•••@example.com accepted {accepted['decidedAt'][:10]}"), signature
    assert accepted["id"] in signature.replace(" ", ""), signature
    assert text_in(after, DATE) == accepted["decidedAt"][:10]
    reader = PdfReader(io.BytesIO(after))
    assert len(reader.pages) >= 3  # the uploaded pages, then the sheet's
    sheet = "".join(page.extract_text() for page in reader.pages[2:])
    assert "What was approved" in sheet and "a•••@example.com" not in sheet  # the sheet names contacts whole
    assert f"{ANA}: accepted on" in sheet and cred_id in sheet
    assert sri_sha256(uploaded) in sheet.replace("\n", "").replace(" ", "")  # the data item: its digest
    assert not [r for r in runs(after) if r.page == 1 and "\u2022" in r.text]  # page 2 has no marks

    document = issued["w3cCredential"]
    verify_document_credential(document, did_resolver(engine, settings))
    [subject] = request["subjects"]
    assert document["credentialSubject"]["placements"] == [
        {"subject": subject["id"], **SIGNATURE},
        {"subject": subject["id"], **DATE},
    ]
    image = page_image(
        after, 0, SCREENSHOT if os.environ.get("MANDATUM_RECORD_SCREENSHOTS") == "1" else tmp_path / "p.png"
    )
    assert image.stat().st_size > 10_000


def test_a_rotated_page_with_an_offset_box_is_stamped_where_a_reader_sees_the_box() -> None:
    """A landscape page stored as a portrait media box turned 90 degrees, whose box does not start
    at the origin: the mark is in the rectangle of the page as shown, its rotation kept."""
    writer = PdfWriter(clone_from=io.BytesIO(letter(pages=1)))
    page = writer.pages[0]
    page.mediabox.lower_left = (10, 20)
    page.rotate(90)
    buffer = io.BytesIO()
    writer.write(buffer)
    mark = pdf.Mark(
        "DATE", 0, 10, 10, 30, 10, "a•••@example.com", accepted_at=datetime(2026, 11, 27, tzinfo=UTC)
    )
    rotated = buffer.getvalue()
    sheet = replace(_sheet(), marks=[mark], document_sri=sri_sha256(rotated))
    stamped = pdf.render(sheet, None, document=rotated)
    assert PdfReader(io.BytesIO(stamped)).pages[1].extract_text().startswith("Lease")  # the sheet follows
    with pytest.raises(ValueError, match="not the one the credential names"):
        pdf.render(replace(sheet, document_sri=sri_sha256(letter(pages=1))), None, document=rotated)
    shown = PdfReader(io.BytesIO(stamped)).pages[0]
    assert shown.rotation == 0  # the rotation moved into the content
    box = shown.cropbox
    width, height = float(box.width), float(box.height)
    assert width > height  # landscape, as a reader saw it
    [run] = [r for r in runs(stamped) if r.text == "2026-11-27"]
    left, top = float(box.left) + width * 0.10, float(box.bottom) + height * 0.90
    assert left <= run.x <= left + width * 0.30 and top - height * 0.10 <= run.y <= top, (run, box)


def _sheet() -> pdf.CredentialSheet:
    return pdf.CredentialSheet(
        organization_name="Acme",
        name="Lease",
        description=None,
        resource_type="DOCUMENT",
        status="ACTIVE",
        items=[],
        decisions=[],
        credential_id="0" * 24,
        mandate_id=None,
        issuer="did:web:mandatum.test",
        subject="did:web:mandatum.test:orgs:1",
        issued_at=None,
        valid_from=None,
        valid_until=None,
        revoked_at=None,
        revocation_reason=None,
        verify_hint="A rendering.",
    )
