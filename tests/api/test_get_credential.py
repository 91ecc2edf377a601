"""GET /credential/{credentialId}?includePdf= (SPEC.md): the credential entity, the document form
in its most updated version, and for a DOCUMENT on request a PDF whose text is checked here."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine

from core.ids import new_object_id, urn
from core.secretbox import SecretCipher
from core.settings import Settings
from store.keys import did_resolver
from store.orgs import get_organization
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape
from tests.support.documents import LEASE, SECRET, pdf_text
from tests.support.mandates import accept_all, create_request
from trust.credentials import verify_document_credential
from trust.did import web_service_did

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]


async def get(api: SignedClient, ident: str, **params: Any) -> dict[str, Any]:
    resp = await api.get(f"/credential/{quote(ident, safe='')}", params=params or None)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def org_name(engine: Engine, org_id: str) -> str:
    return get_organization(engine, org_id).name


async def test_a_policy_credential_before_and_after_issuance(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    request = await create_request(api)
    cred_id = request["credentials"][0]["id"]
    before = await get(api, cred_id, includePdf="true")
    assert set(before) == {"credential", "w3cCredential"}  # a POLICY never has a PDF
    entity = before["credential"]
    assert entity["id"] == cred_id and entity["resourceType"] == "POLICY"
    assert entity["status"] in ("DRAFT", "PENDING") and entity["proofs"] == [] and entity["data"] == []
    assert entity["name"] == "Rent payments" and entity["mandateId"] is None and entity["scope"] == "payments"
    assert entity["action"] == request["credentials"][0]["action"] and entity["requestId"] == request["id"]
    assert entity["action"]["userParams"]["maxAmount"] == 1200
    assert before["w3cCredential"] is None

    [issued] = await accept_all(api, temporal, request)
    by_id, by_urn, by_raw_urn = (
        await get(api, cred_id),
        await get(api, issued["id"]),
        dict((await api.get(f"/credential/{issued['id']}")).json()),
    )
    assert by_id == by_urn == by_raw_urn
    entity, document = by_id["credential"], by_id["w3cCredential"]
    assert entity["id"] == cred_id and entity["status"] == "ACTIVE" and entity["mandateId"] == issued["id"]
    assert "VIADocument" in document["type"] and document["id"] == issued["id"]
    verify_document_credential(document, did_resolver(engine, settings))
    assert entity["proofs"] == document["proof"] and [p["actionType"] for p in entity["proofs"]] == ["ISSUE"]
    assert entity["data"] == document["credentialSubject"]["data"]
    labels = [i["label"] for i in entity["data"]]
    assert labels[:3] == ["Action", "Action version", "Scope"] and "maxAmount" in labels
    assert entity["issuedAt"] and entity["revokedAt"] is None and entity["revocationReceipt"] is None
    assert "pdf" not in await get(api, cred_id, includePdf="true")


async def test_a_document_before_issuance_has_a_pdf_of_what_is_asked(
    api: SignedClient,
    engine: Engine,
) -> None:
    request = await create_request(api, credentials=[LEASE])
    cred_id = request["credentials"][0]["id"]
    plain = await get(api, cred_id)
    assert "pdf" not in plain and plain["w3cCredential"] is None and plain["credential"]["proofs"] == []
    assert [i["value"] for i in plain["credential"]["data"]] == [i["value"] for i in LEASE["data"]]
    assert "pdf" not in await get(api, cred_id, includePdf="false")
    assert "pdf" not in await get(api, cred_id, includePdf="FALSE")
    assert (await get(api, cred_id, includePdf="True"))["pdf"]  # Python's spelling, as requests sends it
    text = pdf_text((await get(api, cred_id, includePdf="true"))["pdf"])
    for expected in (
        "Contrato de arrendamento",
        "Ação de despejo: cœur, año",
        "Rua da Conceição 1, Lisboa",
        "1 250 €",
        org_name(engine, api.creds.organization_id),
        cred_id,
        "No decision yet",
        "not issued",
    ):
        assert expected in text, (expected, text)
    assert SECRET not in text and "(hidden)" in text
    assert "PENDING" in text or "DRAFT" in text


async def test_a_document_after_issuance_and_revocation(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    request = await create_request(api, credentials=[LEASE], contacts=["ana@example.com", "bea@example.com"])
    cred_id = request["credentials"][0]["id"]
    [issued] = await accept_all(api, temporal, request)
    got = await get(api, issued["id"], includePdf="true")
    entity, document = got["credential"], got["w3cCredential"]
    assert entity["status"] == "ACTIVE" and entity["internalId"] == "lease-7"
    assert document == issued["w3cCredential"]  # for a DOCUMENT the issued form, until an action
    text = pdf_text(got["pdf"])
    for expected in (
        "Contrato de arrendamento",
        "Rua da Conceição 1, Lisboa",
        "1 250 €",
        "ACTIVE",
        org_name(engine, api.creds.organization_id),
        cred_id,
        issued["id"],
        web_service_did(settings.public_url),
        "ana@example.com: accepted on",
        "bea@example.com: accepted on",
        document["issuanceDate"][:10],
        "What was approved",
    ):
        assert expected in text, (expected, text)
    assert SECRET not in text

    path = quote(issued["id"], safe="")
    revoked = await api.post(f"/credential/{path}/revoke", {"reason": "user_initiated"})
    assert revoked.status_code == 200, revoked.text
    after = await get(api, cred_id, includePdf="true")
    entity, document = after["credential"], after["w3cCredential"]
    assert entity["status"] == "REVOKED" and entity["revocationReason"] == "user_initiated"
    assert entity["revokedAt"] == revoked.json()["revokedAt"]
    assert entity["revocationReceipt"] == revoked.json()["receipt"]
    assert (
        [p["actionType"] for p in document["proof"]]
        == ["ISSUE", "REVOKE"]
        == [p["actionType"] for p in entity["proofs"]]
    )
    verify_document_credential(document, did_resolver(engine, settings))
    text = pdf_text(after["pdf"])
    assert "REVOKED" in text and "reason: user_initiated" in text


async def test_unknown_and_malformed_ids(api: SignedClient) -> None:
    for unknown in (new_object_id(), urn("credential")):
        body = assert_error_shape(await api.get(f"/credential/{quote(unknown, safe='')}"), 404)
        assert body["error"] == "Not Found"
    for bad in ("nope", "A" * 24, "0" * 25, "urn:via:credential:123", "urn:via:decision:" + urn("x")[10:]):
        body = assert_error_shape(await api.get(f"/credential/{quote(bad, safe='')}"), 400)
        assert "credentialId must be a mandate URN" in body["message"]
    request = await create_request(api)
    # only true or false: pydantic alone would read 1, 0, yes, no, on, off, t, f, y, n as booleans
    for loose in ("maybe", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n", "", " true"):
        resp = await api.get(f"/credential/{request['credentials'][0]['id']}", params={"includePdf": loose})
        assert assert_error_shape(resp, 400)["message"] == ["includePdf: must be true or false"], loose


async def test_another_organizations_credential_is_404(
    api: SignedClient,
    temporal: Any,
    http: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    request = await create_request(api, credentials=[LEASE])
    cred_id = request["credentials"][0]["id"]
    [issued] = await accept_all(api, temporal, request)
    other = SignedClient(http, new_org(engine, cipher, settings))
    for ident in (cred_id, quote(issued["id"], safe="")):
        assert_error_shape(await other.get(f"/credential/{ident}", params={"includePdf": "true"}), 404)
    assert (await api.get(f"/credential/{cred_id}")).status_code == 200


# --- the renderer on its own: fonts --------------------------------------------------------------


def _sheet(description: str) -> Any:
    from datetime import UTC, datetime

    from api import pdf

    now = datetime.now(UTC)
    return pdf.CredentialSheet(
        organization_name="Imobiliária São João",
        name="Contrat",
        description=description,
        resource_type="DOCUMENT",
        status="ACTIVE",
        items=[{"label": "Adresse", "value": "Œuvre, «rue» Français", "hidden": False}],
        decisions=[pdf.Acceptance("ana@example.com", True, now)],
        credential_id=new_object_id(),
        mandate_id=urn("credential"),
        issuer="did:web:mandatum.test",
        subject="did:web:mandatum.test:orgs:x",
        issued_at=now,
        valid_from=now,
        valid_until=None,
        revoked_at=None,
        revocation_reason=None,
        verify_hint="hint",
    )


def test_the_core_font_renders_portuguese_spanish_and_french() -> None:
    from api import pdf

    rendered = pdf.render(_sheet("Ação, niño, cœur, 5 € — Ωμέγα"), font=None)
    text = pdf_text(base64.b64encode(rendered).decode())
    for expected in ("Imobiliária São João", "Ação, niño, cœur, 5 € — ?????", "Œuvre, «rue» Français"):
        assert expected in text, (expected, text)


def test_a_unicode_font_renders_other_scripts_when_installed() -> None:
    from api import pdf

    if pdf.unicode_font() is None:
        pytest.skip("DejaVu Sans is not installed (Debian: fonts-dejavu-core): core-font rendering only")
    text = pdf_text(base64.b64encode(pdf.render(_sheet("Ωμέγα Привет, Ação"))).decode())
    assert "Ωμέγα Привет, Ação" in text and "Imobiliária São João" in text
