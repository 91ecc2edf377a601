"""What the service issues over its real paths verifies in the independent implementation.

The mandate and document credentials issued by the request workflow, and the receipt of every
path (presentation issued, verification approved, verification denied, mandate revoked), are
checked by Digital Bazaar's eddsa-jcs-2022 stack (``interop/verify.mjs``, see test_interop.py)
with the DID documents and context fetched from the app's own routes, and by our trust core.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from store.keys import did_resolver
from tests.support.api_client import SignedClient
from tests.support.interop import Job, _assert_rejected, _assert_verified, _tampered, js_verify
from tests.support.interop import interop_node as interop_node  # the fixture
from tests.support.mandates import issued_mandate
from trust.context import CONTEXT_PATH, context_url
from trust.credentials import to_standard, verify_document_credential, verify_mandate
from trust.did import web_organization_did, web_service_did
from trust.receipts import verify_receipt

pytestmark = pytest.mark.usefixtures("interop_node", "worker", "no_server_errors")

DOCUMENT = {
    "type": "DOCUMENT",
    "name": "Lease",
    "data": [{"label": "Morada", "type": "text", "value": "Rua da Conceição 1", "hidden": False}],
}


async def served_documents(http: Any, settings: Any, org_ids: list[str]) -> dict[str, Any]:
    documents = {
        web_service_did(settings.public_url): (await http.get("/.well-known/did.json")).json(),
        context_url(settings.public_url): (await http.get(CONTEXT_PATH)).json(),
    }
    for org_id in org_ids:
        documents[web_organization_did(settings.public_url, org_id)] = (
            await http.get(f"/orgs/{org_id}/did.json")
        ).json()
    return documents


def credential_job(document: dict[str, Any], documents: dict[str, Any]) -> Job:
    return {"document": document, "kind": "credential", "purpose": "assertionMethod", "documents": documents}


def receipt_job(document: dict[str, Any], documents: dict[str, Any]) -> Job:
    return {"document": document, "kind": "receipt", "purpose": "assertionMethod", "documents": documents}


async def test_issued_mandate_and_document_verify_in_js(
    api: SignedClient,
    temporal: Any,
    http: Any,
    settings: Any,
    engine: Any,
) -> None:
    mandate = (await issued_mandate(api, temporal))["w3cCredential"]
    document = (await issued_mandate(api, temporal, credentials=[DOCUMENT]))["w3cCredential"]
    resolver = did_resolver(engine, settings)
    verify_mandate(mandate, resolver)
    verify_document_credential(document, resolver)
    assert mandate["credentialStatus"]["type"] == "BitstringStatusListEntry"
    documents = await served_documents(http, settings, [api.creds.organization_id])
    for credential in (mandate, document):  # the status lists, as a verifier fetches them (unsigned)
        list_url = credential["credentialStatus"]["statusListCredential"]
        served = await http.get(list_url.removeprefix(settings.public_url))
        assert served.status_code == 200, served.text
        documents[list_url] = served.json()
    results = js_verify(
        [
            credential_job(to_standard(mandate), documents),
            credential_job(document, documents),
            credential_job(
                _tampered(to_standard(mandate), "credentialSubject", "mandate", "scope", value="everything"),
                documents,
            ),
        ]
    )
    _assert_verified(results[0])
    _assert_verified(results[1])
    _assert_rejected(results[2], "Invalid signature")

    # revoked: the served list now has the mandate's bit set, and the independent verifier says so
    path = quote(mandate["id"], safe="")
    assert (await api.post(f"/credential/{path}/revoke", {"reason": "user_initiated"})).status_code == 200
    list_url = mandate["credentialStatus"]["statusListCredential"]
    documents[list_url] = (await http.get(list_url.removeprefix(settings.public_url))).json()
    [after] = js_verify([credential_job(to_standard(mandate), documents)])
    _assert_rejected(after, "revocation bit set")


async def _receipts_of_every_path(api: SignedClient, temporal: Any) -> dict[str, dict[str, Any]]:
    mandate = await issued_mandate(api, temporal)
    path = quote(mandate["id"], safe="")
    receipts: dict[str, dict[str, Any]] = {}
    for name, execution in (
        ("allow", {"amount": 100, "payee": "Bob"}),
        ("deny", {"amount": 5000, "payee": "Bob"}),
    ):
        issued = await api.post(f"/credential/{path}/presentation", {})
        assert issued.status_code == 200, issued.text
        receipts.setdefault("presentation", issued.json()["data"]["receipt"])
        answer = await api.post(
            "/credential/verify",
            {"presentation": issued.json()["data"]["presentation"], "executionParams": execution},
        )
        assert answer.status_code == (200 if name == "allow" else 403), answer.text
        receipts[name] = answer.json()["receipt"]
    revoked = await api.post(f"/credential/{path}/revoke", {"reason": "user_initiated"})
    assert revoked.status_code == 200, revoked.text
    receipts["revoke"] = revoked.json()["receipt"]
    return receipts


async def test_a_receipt_from_each_path_verifies_here_and_in_js(
    api: SignedClient,
    temporal: Any,
    http: Any,
    settings: Any,
    engine: Any,
) -> None:
    receipts = await _receipts_of_every_path(api, temporal)
    assert [r["type"] for r in receipts.values()] == [
        "PRESENTATION_ISSUED",
        "VERIFICATION_APPROVED",
        "VERIFICATION_DENIED",
        "MANDATE_REVOKED",
    ]
    resolver = did_resolver(engine, settings)
    for signed in receipts.values():
        verify_receipt(signed, resolver, issuer_did=web_service_did(settings.public_url))
    documents = await served_documents(http, settings, [api.creds.organization_id])
    jobs = [receipt_job(r, documents) for r in receipts.values()]
    jobs.append(receipt_job(_tampered(receipts["deny"], "decision", value="allow"), documents))
    *good, bad = js_verify(jobs)
    for result in good:
        _assert_verified(result)
    _assert_rejected(bad, "Invalid signature")
