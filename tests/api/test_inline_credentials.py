"""A request's credentials given inline (issue 36): a DOCUMENT's own PDF (``pdf``, base64), kept and
signed as a DOCUMENT approval's (its digest in the first data item, read by the subject on the
approval page, its placements checked against its own pages), and a JSON credential (``json``)
signed as its object; 2026-09-01's ``data`` (a base64 PDF, JSON text) mapped to them; every bad
input a 400 naming ``credentials.<i>.pdf`` (or ``json``, ``data``) with nothing stored."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pypdf import PdfReader, PdfWriter
from sqlalchemy import Engine, func
from sqlmodel import Session, select

from core.settings import Settings
from services import approvals
from services.context import Context
from store.keys import did_resolver
from store.tables import Approval, CredentialDocument, CredentialRequest
from tests.support.api_client import SignedClient, assert_message, error_messages
from tests.support.approvals import pdf
from tests.support.mandates import accept_all
from trust.credentials import sri_sha256, verify_document_credential
from wire.inline_credentials import MAX_INLINE_PDF_BASE64, MAX_INLINE_PDF_BYTES

pytestmark = pytest.mark.usefixtures("no_server_errors")
ANA, BEA = "ana@example.com", "bea@example.com"
ITEM = {"label": "Tenant", "type": "text", "value": "Ana Silva", "hidden": False}
ITEM_DOC = {"type": "DOCUMENT", "name": "Notes", "data": [ITEM]}
TERMS = {"plan": "pro", "limits": {"daily": 500, "ratio": 0.25}, "tags": ["a", "b"], "ok": True}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def request(*credentials: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"contacts": [ANA, BEA], "securityLevel": "CONTACT", "credentials": list(credentials), **fields}


def lease(document: bytes, **changes: Any) -> dict[str, Any]:
    return {"type": "DOCUMENT", "name": "Lease contract", "pdf": b64(document), **changes}


def stored(engine: Engine) -> tuple[int, int]:
    """How many requests and inline PDFs the database holds."""
    with Session(engine) as session:
        requests = session.exec(select(func.count()).select_from(CredentialRequest)).one()
        documents = session.exec(select(func.count()).select_from(CredentialDocument)).one()
    return requests, documents


def encrypted() -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf())))
    writer.encrypt("secret")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


async def test_an_inline_pdf_is_kept_signed_and_shown_to_the_subject(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine, ctx: Context
) -> None:
    document = pdf(pages=2, text="Lease")
    signature = {"contact": BEA, "type": "SIGNATURE", "x": 55, "y": 80, "width": 40, "height": 10}
    placed = lease(document, data=[ITEM], placements=[{**signature, "pageIndex": 1}])
    created = await api.post("/request", request(placed))
    assert created.status_code == 201, created.text
    made = created.json()["data"]
    [credential] = made["credentials"]
    digest = sri_sha256(document)
    assert credential["resourceType"] == "DOCUMENT"
    assert credential["data"] == [
        {
            "label": "Lease contract",
            "type": "PDF",
            "value": digest,
            "hidden": False,
            "fields": [{"digestSRI": digest, "pages": 2, "size": len(document), "placements": []}],
        },
        {**ITEM, "fields": []},
    ]
    assert credential["placements"][0]["pageIndex"] == 1
    with Session(engine) as session:
        row = session.get(CredentialDocument, credential["id"])
        assert row is not None and row.pdf == document and row.digest_sri == digest
        # no approval made for this organization (other modules' approvals share the database)
        mine = (
            select(func.count())
            .select_from(Approval)
            .where(Approval.organization_id == api.creds.organization_id)
        )
        assert session.exec(mine).one() == 0
    assert (await api.get("/approvals")).json()["data"] == []
    # what draws the placements reads the PDF as a DOCUMENT approval's is read
    assert await approvals.credential_pdf(ctx, made["id"], credential["id"]) == document
    assert await approvals.credential_pdf(ctx, "0" * 24, credential["id"]) is None

    link = await api.get(f"/request/link/{made['id']}", params={"contact": ANA})
    url = link.json()["data"]["url"].removeprefix("https://mandatum.test")
    page = await http.get(url)
    assert f"{url}/document/{credential['id']}" in page.text
    got = await http.get(f"{url}/document/{credential['id']}")
    assert got.status_code == 200 and got.headers["content-type"] == "application/pdf"
    assert got.content == document and sri_sha256(got.content) == digest

    # a placement is checked against the PDF's own two pages, not the sheet the items print on
    before = stored(engine)
    off = await api.post("/request", request(lease(document, placements=[{**signature, "pageIndex": 2}])))
    assert_message(off, "credentials.0.placements.0.pageIndex", "page 2 is off the document", "2 pages")
    assert stored(engine) == before


async def test_a_pdf_alone_makes_a_document(api: SignedClient, engine: Engine) -> None:
    created = await api.post("/request", request(lease(pdf(), description="Read it")))
    assert created.status_code == 201, created.text
    [credential] = created.json()["data"]["credentials"]
    assert [item["type"] for item in credential["data"]] == ["PDF"]
    assert credential["data"][0]["value"] == sri_sha256(pdf())


def too_many_pages() -> bytes:
    return pdf(pages=201)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("%%%not base64%%%", "is not base64"),
        (b64(pdf())[:-2], "is not base64"),  # its padding cut
        (b64(pdf()).replace("A", "A\n", 1), "is not base64"),
        ("", "is empty"),
        (1234, "must be a string"),
        (b64(b"Hello, not a PDF"), "not a PDF"),
        (b64(b"%PDF-1.7\n" + b"garbage" * 100), "cannot be read"),
        (b64(encrypted()), "encrypted"),
        (b64(too_many_pages()), "201 pages; 1 to 200"),
        ("A" * (MAX_INLINE_PDF_BASE64 + 4), f"at most {MAX_INLINE_PDF_BYTES} bytes"),
    ],
    ids=[
        "symbols",
        "unpadded",
        "line-break",
        "empty",
        "number",
        "not-pdf",
        "broken",
        "encrypted",
        "201-pages",
        "too-large",
    ],
)
async def test_a_bad_pdf_is_refused_naming_it(
    api: SignedClient, engine: Engine, value: Any, fragment: str
) -> None:
    before = stored(engine)
    got = await api.post("/request", request(ITEM_DOC, {**lease(pdf()), "pdf": value}))
    assert_message(got, "credentials.1.pdf", fragment)
    assert stored(engine) == before


@pytest.mark.parametrize(
    ("credential", "fragments"),
    [
        ({"type": "JSON", "name": "Terms", "json": [1, 2]}, ("credentials.0.json",)),
        ({"type": "JSON", "name": "Terms", "json": "{}"}, ("credentials.0.json",)),
        ({"type": "JSON", "name": "Terms", "json": {"n": 2**60}}, ("credentials.0.json", "2^53")),
        (
            {"type": "JSON", "name": "Terms", "json": {"t": "x" * 4_000}},
            ("credentials.0.json", "at most 4000"),
        ),
        ({"type": "JSON", "name": "Terms", "json": {"a": [[[[[[[[[[1]]]]]]]]]]}}, ("levels",)),
        ({"type": "JSON", "name": "Terms"}, ("needs json",)),
        ({"type": "JSON", "name": "Terms", "json": {}, "data": [ITEM]}, ("takes json, not data",)),
        ({"type": "POLICY", "name": "Terms", "json": {}, "action": {"id": "x"}}, ("credentials.0",)),
        ({"type": "DOCUMENT", "name": "Terms", "json": {}, "data": [ITEM]}, ("not json",)),
        ({"type": "DOCUMENT", "name": "Terms"}, ("needs data", "or its pdf")),
    ],
)
async def test_bad_json_credentials_are_refused(
    api: SignedClient, engine: Engine, credential: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    before = stored(engine)
    assert_message(await api.post("/request", request(credential)), *fragments)
    assert stored(engine) == before


@pytest.mark.usefixtures("worker")
async def test_a_json_credential_is_signed_with_its_object(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings
) -> None:
    created = await api.post("/request", request({"type": "JSON", "name": "Terms", "json": TERMS}))
    assert created.status_code == 201, created.text
    made = created.json()["data"]
    [credential] = made["credentials"]
    assert credential["resourceType"] == "DOCUMENT"
    assert [(i["label"], i["type"], json.loads(i["value"])) for i in credential["data"]] == [
        ("Terms", "JSON", TERMS)
    ]
    [issued] = await accept_all(api, temporal, made)
    assert issued["status"] == "ACTIVE", issued
    document = issued["w3cCredential"]
    verify_document_credential(document, did_resolver(engine, settings))
    [item] = document["credentialSubject"]["data"]
    assert item["type"] == "JSON" and json.loads(item["value"]) == TERMS
    assert item["value"] == json.dumps(TERMS, separators=(",", ":"), sort_keys=True)


# --- 2026-09-01 (SDK 1.2.0): data was the base64 PDF, or the object as JSON text ---------------------


def older(*credentials: dict[str, Any]) -> dict[str, Any]:
    return {"users": [{"contact": ANA}], "securityLevel": "CONTACT", "credentials": list(credentials)}


@pytest.mark.parametrize("version", ["2026-05-20", "2026-09-01"])  # SDK 1.0.5's and 1.2.0's
async def test_2026_09_01_data_is_the_pdf_or_the_json_text(
    api: SignedClient, engine: Engine, version: str
) -> None:
    document = pdf(pages=3)
    body = older(
        {"type": "DOCUMENT", "name": "Lease", "data": b64(document)},
        {"type": "JSON", "name": "Terms", "data": json.dumps(TERMS)},
        {"type": "JSON", "name": "Object", "data": {"plan": "basic"}},
    )
    created = await api.post("/request", body, headers={"API-Version": version})
    assert created.status_code == 201, created.text
    ids = [c["id"] for c in created.json()["credentials"]]
    request_id = created.json()["id"]
    got = (await api.get(f"/request/{request_id}")).json()
    lease_data, terms, plain = (c["data"] for c in got["credentials"])
    assert lease_data[0]["value"] == sri_sha256(document) and lease_data[0]["fields"][0]["pages"] == 3
    assert json.loads(terms[0]["value"]) == TERMS and json.loads(plain[0]["value"]) == {"plan": "basic"}
    with Session(engine) as session:
        row = session.get(CredentialDocument, ids[0])
        assert row is not None and row.pdf == document


@pytest.mark.parametrize(
    ("credential", "fragments"),
    [
        ({"type": "JSON", "name": "T", "data": "[1, 2]"}, ("credentials.0.data", "not an array")),
        ({"type": "JSON", "name": "T", "data": '"text"'}, ("credentials.0.data", "not a string")),
        ({"type": "JSON", "name": "T", "data": "{oops"}, ("credentials.0.data", "JSON text")),
        ({"type": "JSON", "name": "T", "data": "[" * 40 + "]" * 40}, ("credentials.0.data", "levels")),
        ({"type": "DOCUMENT", "name": "T", "data": "not base64!"}, ("credentials.0.pdf", "not base64")),
        ({"type": "DOCUMENT", "name": "T", "data": b64(b"plain text")}, ("credentials.0.pdf", "not a PDF")),
    ],
)
async def test_2026_09_01_refusals_name_the_credential(
    api: SignedClient, engine: Engine, credential: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    before = stored(engine)
    got = await api.post("/request", older(credential), headers={"API-Version": "2026-09-01"})
    [message] = error_messages(got)
    assert all(f in message for f in fragments), message
    assert stored(engine) == before


def test_the_openapi_document_shows_pdf_and_json(app: FastAPI) -> None:
    schemas = app.openapi()["components"]["schemas"]
    credential = schemas.get("CredentialIn") or schemas["CredentialIn-Input"]
    members = credential["properties"]
    assert credential["properties"]["type"]["enum"] == ["POLICY", "DOCUMENT", "JSON"]
    pdf_schema = next(s for s in members["pdf"]["anyOf"] if s.get("type") == "string")
    assert pdf_schema["contentEncoding"] == "base64" and pdf_schema["maxLength"] == MAX_INLINE_PDF_BASE64
    assert "716800 bytes" in members["pdf"]["description"]
    assert any(s.get("type") == "object" for s in members["json"]["anyOf"])
