"""A DOCUMENT credential's placements (issue 36): each checked where it enters (a 400 naming it,
nothing stored), kept and shown with the request, signed into the document, and drawn on its page
of the PDF inside its rectangle: an empty labelled box before the signer accepts, their mark after.
"""

from __future__ import annotations

import copy
import html
import re
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from api import pdf
from core import i18n
from core.settings import Settings
from store.keys import did_resolver
from tests.support.api_client import SignedClient, assert_message
from tests.support.documents import LEASE
from tests.support.mandates import accept_all, create_request
from tests.support.placements import box, page_count, page_image, pdf_of, runs, text_in
from trust.credentials import verify_document_credential

pytestmark = pytest.mark.usefixtures("no_server_errors")
ANA, BEA = "ana@example.com", "bea@example.com"
SIGNATURE = {"contact": ANA, "type": "SIGNATURE", "x": 55, "y": 80, "width": 40, "height": 10, "pageIndex": 0}


def lease(*placements: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(LEASE), "placements": list(placements), **changes}


def body(*placements: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {
        "contacts": [ANA, BEA],
        "securityLevel": "CONTACT",
        "credentials": [lease(*placements, **changes)],
    }


def assert_only_in_boxes(pdf: bytes, *placements: dict[str, Any]) -> None:
    """Masked contacts are drawn only in the marks (the sheet's text shows contacts whole)."""
    masked = [r for r in runs(pdf) if "\u2022" in r.text and "(hidden)" not in r.text]
    assert masked
    for run in masked:
        assert any(run.page == p["pageIndex"] and box(pdf, p).holds(run) for p in placements), run


BAD = [
    ({**SIGNATURE, "x": 70}, ("credentials.0.placements.0", "x + width is 110")),
    ({**SIGNATURE, "y": 95}, ("credentials.0.placements.0", "y + height is 105")),
    ({**SIGNATURE, "x": -1}, ("credentials.0.placements.0.x", "greater than or equal to 0")),
    ({**SIGNATURE, "width": 0}, ("credentials.0.placements.0", "width and height must be more than 0")),
    ({**SIGNATURE, "height": 101}, ("credentials.0.placements.0.height", "less than or equal to 100")),
    ({**SIGNATURE, "x": "10"}, ("credentials.0.placements.0.x", "must be a number")),
    ({**SIGNATURE, "x": True}, ("credentials.0.placements.0.x", "must be a number")),
    ({**SIGNATURE, "pageIndex": 1.5}, ("credentials.0.placements.0.pageIndex",)),
    ({**SIGNATURE, "pageIndex": -1}, ("credentials.0.placements.0.pageIndex",)),
    ({**SIGNATURE, "pageIndex": 7}, ("credentials.0.placements.0.pageIndex", "page 7 is off the document")),
    ({**SIGNATURE, "contact": "eve@example.com"}, ("placements.0.contact", "eve@example.com", "not one of")),
    ({**SIGNATURE, "contact": "not a contact"}, ("placements.0.contact", "not a contact")),
    ({**SIGNATURE, "type": "STAMP"}, ("credentials.0.placements.0.type",)),
    ({**SIGNATURE, "type": "OPEN_TEXT"}, ("placements.0", "type OPEN_TEXT is not offered")),
    ({**SIGNATURE, "type": "CHECKBOX"}, ("placements.0", "type CHECKBOX is not offered")),
    ({**SIGNATURE, "identityType": "FULL_NAME"}, ("placements.0", "identityType is for an IDENTITY_FIELD")),
    ({**SIGNATURE, "type": "IDENTITY_FIELD", "identityType": "SHOE_SIZE"}, ("placements.0.identityType",)),
    ({**SIGNATURE, "colour": "red"}, ("placements.0.colour",)),
]


@pytest.mark.parametrize(("placement", "fragments"), BAD, ids=[str(i) for i in range(len(BAD))])
async def test_a_bad_placement_is_refused_naming_it(
    api: SignedClient, placement: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    assert_message(await api.post("/request", body(placement)), *fragments)


async def test_placements_belong_to_a_document_and_are_bounded(api: SignedClient) -> None:
    policy = body()
    policy["credentials"] = [
        {
            "type": "POLICY",
            "name": "Pay",
            "action": {"id": "urn:via:action:00000000-0000-4000-8000-000000000000", "userParams": {}},
            "placements": [SIGNATURE],
        }
    ]
    assert_message(await api.post("/request", policy), "placements", "a POLICY credential has none")
    assert_message(await api.post("/request", body(*[SIGNATURE] * 51)), "placements", "at most 50")
    # none of the refused bodies above stored anything
    assert (await api.get("/request")).json() == {"data": [], "totalPages": 0}


async def test_placements_are_kept_normalized_and_shown(api: SignedClient) -> None:
    identity = {**SIGNATURE, "contact": " Bea@Example.COM", "type": "IDENTITY_FIELD", "y": 10, "height": 4}
    dated = {**SIGNATURE, "type": "DATE", "pageIndex": 0.0, "x": 0, "width": 100.0}
    created = await create_request(api, **body(SIGNATURE, identity, dated))
    got = (await api.get(f"/request/{created['id']}")).json()
    [cred] = got["credentials"]
    assert cred["placements"] == created["credentials"][0]["placements"]
    assert cred["placements"] == [
        {"contact": ANA, "type": "SIGNATURE", "x": 55, "y": 80, "width": 40, "height": 10, "pageIndex": 0},
        {
            "contact": BEA,  # normalized, as the request's contacts
            "type": "IDENTITY_FIELD",
            "identityType": "FULL_NAME",  # when omitted
            "x": 55,
            "y": 10,
            "width": 40,
            "height": 4,
            "pageIndex": 0,
        },
        {"contact": ANA, "type": "DATE", "x": 0, "y": 80, "width": 100, "height": 10, "pageIndex": 0},
    ]


async def test_the_page_index_is_checked_against_the_pdfs_pages(api: SignedClient) -> None:
    long = lease(data=[{"label": f"Clause {i}", "type": "text", "value": "word " * 700} for i in range(4)])
    plain = await create_request(api, contacts=[ANA], securityLevel="CONTACT", credentials=[long])
    pages = page_count(await pdf_of(api, plain["credentials"][0]["id"]))
    assert pages >= 2
    last = {**SIGNATURE, "pageIndex": pages - 1}
    off = {**SIGNATURE, "pageIndex": pages}
    refused = await api.post("/request", {**body(), "credentials": [{**long, "placements": [off]}]})
    assert_message(refused, "pageIndex", f"page {pages} is off the document", f"has {pages} pages")
    placed = await create_request(api, contacts=[ANA, BEA], credentials=[{**long, "placements": [last]}])
    assert placed["credentials"][0]["placements"][0]["pageIndex"] == pages - 1


@pytest.mark.usefixtures("worker")
async def test_marks_are_drawn_in_their_rectangles_and_signed(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    initials = {**SIGNATURE, "contact": BEA, "type": "INITIALS", "x": 5, "y": 80, "width": 10, "height": 5}
    field = {**SIGNATURE, "type": "IDENTITY_FIELD", "identityType": "COUNTRY", "x": 20, "width": 30}
    date = {**SIGNATURE, "contact": BEA, "type": "DATE", "x": 5, "y": 90, "width": 20, "height": 4}
    request = await create_request(api, **body(SIGNATURE, initials, field, date))
    cred_id = request["credentials"][0]["id"]

    before = await pdf_of(api, cred_id)
    # an empty box, labelled with the signer's masked contact (wrapped as the box's width allows)
    assert [text_in(before, p).replace(" ", "") for p in (SIGNATURE, initials, field, date)] == [
        "Signature:a•••@example.com",
        "Initials:b•••@example.com",
        "Country:a•••@example.com",
        "Date:b•••@example.com",
    ]
    assert_only_in_boxes(before, SIGNATURE, initials, field, date)

    [issued] = await accept_all(api, temporal, request)
    after = await pdf_of(api, issued["id"])
    assert after != before  # the decisions are part of what the PDF's digest covers
    decisions = {d["contact"]: d for d in issued["decisions"]}
    signature = text_in(after, SIGNATURE)
    assert signature.startswith(f"a•••@example.com accepted {decisions[ANA]['decidedAt'][:10]}"), signature
    assert decisions[ANA]["id"] in signature.replace(" ", ""), signature  # wrapped where it is long
    assert text_in(after, initials) == "B."
    assert text_in(after, field) == "\u2014"  # the identity check reported no country
    assert text_in(after, date) == decisions[BEA]["decidedAt"][:10]
    assert_only_in_boxes(after, SIGNATURE, initials, field, date)

    document = issued["w3cCredential"]
    verify_document_credential(document, did_resolver(engine, settings))
    signed = document["credentialSubject"]["placements"]
    dids = {s["contact"]: s["id"] for s in request["subjects"]}
    assert [p["subject"] for p in signed] == [dids[ANA], dids[BEA], dids[ANA], dids[BEA]]
    assert signed[0] == {**{k: v for k, v in SIGNATURE.items() if k != "contact"}, "subject": dids[ANA]}
    image = page_image(after, 0, tmp_path / "placements-page-0.png")
    assert image.stat().st_size > 10_000


@pytest.mark.parametrize("language", ["ENG", "PRT"])
async def test_the_approval_page_tells_each_subject_where_their_marks_go(
    api: SignedClient, http: httpx.AsyncClient, language: str
) -> None:
    mine = [SIGNATURE, {**SIGNATURE, "type": "DATE", "y": 5, "height": 4}]
    theirs = {**SIGNATURE, "contact": BEA, "type": "INITIALS", "x": 5, "width": 10}
    request = await create_request(api, **body(*mine, theirs), language=language)
    for contact, expected in ((ANA, ["mark_SIGNATURE", "mark_DATE"]), (BEA, ["mark_INITIALS"])):
        link = await api.get(f"/request/link/{request['id']}", params={"contact": contact})
        page = await http.get(link.json()["data"]["url"].removeprefix("https://mandatum.test"))
        assert page.status_code == 200
        found = re.findall(
            r'<p id="marks-[0-9a-f]{24}"><strong>([^<]*)</strong></p>\s*<ul class="limits"[^>]*>(.*?)</ul>',
            page.text,
            re.S,
        )
        assert [
            (html.unescape(h), [html.unescape(i) for i in re.findall(r"<li>(.*?)</li>", items)])
            for h, items in found
        ] == [(i18n.text(language, "marks_heading"), [i18n.text(language, key, page=1) for key in expected])]


async def test_busy_renderers_refuse_placements_for_now(
    api: SignedClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pdf.RENDERER, "_admitted_max", 0)  # every rendering slot taken
    busy = await api.post("/request", body(SIGNATURE))
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "5", busy.text
    assert (await api.get("/request")).json() == {"data": [], "totalPages": 0}
    assert (await api.post("/request", body())).status_code == 201  # no placements: no page to count


@pytest.mark.parametrize("font", ["auto", None], ids=["dejavu-or-core", "core"])
def test_text_is_fitted_into_boxes_of_any_size(font: Any) -> None:
    """From a full page down to a sliver, every mark's text starts inside its box (and is clipped
    to it); a box narrower than a character stays empty rather than failing the rendering."""
    sizes = [(100, 100), (40, 10), (10, 3), (3, 1), (1, 0.4), (0.05, 0.05)]
    accepted = datetime(2026, 11, 27, 22, 0, tzinfo=UTC)
    marks = [
        pdf.Mark(
            kind=kind,
            page_index=i % 2,
            x=0 if w == 100 else 50,
            y=0,
            width=w,
            height=h,
            contact="a\u2022\u2022\u2022@example.com",
            name="Ana Maria da Silva Ferreira",
            decision_id="urn:via:decision:0b7d5e0a-7a54-4a3f-9d3f-2b0c7d7bfe11",
            accepted_at=accepted,
        )
        for i, (w, h) in enumerate(sizes)
        for kind in ("SIGNATURE", "INITIALS", "DATE")
    ]
    sheet = pdf.CredentialSheet(**{**SHEET, "marks": marks})
    rendered = pdf.render(sheet, font)
    assert page_count(rendered) == 2  # a page the text does not reach is added for its marks
    boxes = [(m.page_index, box(rendered, {**asdict(m), "pageIndex": m.page_index})) for m in marks]
    drawn = [r for r in runs(rendered) if r.text.startswith(("Ana", "A.M.", "accepted", "2026-11-27", "urn"))]
    assert {"Ana Maria da Silva Ferreira", "A.M.D.S.", "2026-11-27"} <= {r.text for r in drawn}
    for run in drawn:
        assert any(page == run.page and b.holds(run) for page, b in boxes), run
    assert pdf.sheet_digest(sheet) != pdf.sheet_digest(pdf.CredentialSheet(**{**SHEET, "marks": marks[:-1]}))


SHEET: dict[str, Any] = {
    "organization_name": "Acme",
    "name": "Lease",
    "description": None,
    "resource_type": "DOCUMENT",
    "status": "ACTIVE",
    "items": [],
    "decisions": [],
    "credential_id": "0" * 24,
    "mandate_id": None,
    "issuer": "did:web:mandatum.test",
    "subject": "did:web:mandatum.test:orgs:1",
    "issued_at": None,
    "valid_from": None,
    "valid_until": None,
    "revoked_at": None,
    "revocation_reason": None,
    "verify_hint": "A rendering.",
}
