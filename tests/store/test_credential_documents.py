"""store: a DOCUMENT credential's own PDF given inline (``CredentialDocument``, migration 0025) is
kept with the request in its transaction and read back by credential and request only, beside the
PDFs of DOCUMENT approval versions. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine
from sqlmodel import Session

from store import approval_credentials, approvals
from store import requests as request_store
from store.tables import CredentialDocument
from tests.support.api_client import Credentials
from tests.support.approvals import pdf
from trust.credentials import sri_sha256

ACTOR = "operator:tests"


def test_an_inline_pdf_is_kept_and_read_by_its_credential(engine: Engine, org: Credentials) -> None:
    org_id = org.organization_id
    own, theirs = pdf(pages=2, text="Own"), pdf(text="Approved")
    view = approvals.create_approval(
        engine,
        org_id,
        approvals.NewVersion(name="Lease", type="DOCUMENT", content={"placements": []}, pdf=theirs),
        actor=ACTOR,
    )
    source = request_store.ApprovalSource(view.approval.id, view.current.id, 1, "DOCUMENT")
    item = [{"label": "x", "type": "t", "value": "v"}]
    new = request_store.NewRequest(
        security_level="CONTACT",
        contacts=[request_store.NewContact("ann@example.com", "email")],
        credentials=[
            request_store.NewCredential("DOCUMENT", "own", data=item, pdf=(sri_sha256(own), own)),
            request_store.NewCredential("DOCUMENT", "items", data=item),
            request_store.NewCredential("DOCUMENT", "approved", data=item, source=source),
        ],
    )
    bundle = request_store.create_request(
        engine, org_id, new, timedelta(days=1), 100, None, lambda b: {}, ACTOR
    )
    assert isinstance(bundle, request_store.RequestBundle)
    inline, plain, made = (c.id for c in bundle.credentials)
    request_id = bundle.request.id
    assert approval_credentials.document_of_credential(engine, request_id, inline) == own
    assert approval_credentials.document_of_credential(engine, request_id, made) == theirs
    assert approval_credentials.document_of_credential(engine, request_id, plain) is None
    assert approval_credentials.document_of_credential(engine, "0" * 24, inline) is None  # another request
    with Session(engine) as session:
        row = session.get(CredentialDocument, inline)
        assert row is not None and row.digest_sri == sri_sha256(own) and bytes(row.pdf) == own
        assert session.get(CredentialDocument, plain) is None
