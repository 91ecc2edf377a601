"""Issuance on acceptance (issue 4, deliverable 3): the request workflow issues a credential once
every subject accepted it, in the mandate form for POLICY and the document form for DOCUMENT."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from core.actors import TEMPORAL
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle
from services import mandates
from store import keys
from store.db import read_session
from store.tables import Credential
from tests.support.api_client import SignedClient
from tests.support.mandates import create_request as create
from tests.support.workflow import decide, subject_uuid
from trust import credentials as vc
from trust.did import web_service_did

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")

DOCUMENT = {
    "type": "DOCUMENT",
    "name": "Lease",
    "data": [{"label": "Address", "type": "text", "value": "Rua 1", "hidden": False}],
}


async def test_acceptance_by_every_subject_issues_the_mandate(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    data = await create(
        api, contacts=["ana@example.com", "bea@example.com"], authorizedDIDs=["did:web:agent.example.com"]
    )
    handle = request_handle(temporal, data["id"])
    ana, bea = (subject_uuid(s["id"]) for s in data["subjects"])
    cred_id = data["credentials"][0]["id"]
    first = await decide(handle, ana, cred_id, accept=True)
    assert first.mandate_id is None  # bea has not accepted yet
    second = await decide(handle, bea, cred_id, accept=True)
    assert second.mandate_id is not None and second.mandate_id.startswith("urn:via:credential:")

    [cred] = (await api.get(f"/request/{data['id']}")).json()["credentials"]
    assert cred["id"] == second.mandate_id and cred["status"] == "ACTIVE"
    mandate = cred["w3cCredential"]
    assert mandate["id"] == second.mandate_id and "VIAMandate" in mandate["type"]
    assert mandate["issuer"] == web_service_did(settings.public_url)
    subject = mandate["credentialSubject"]
    assert subject["id"] == api.creds.did
    assert subject["mandate"]["grantor"] == [s["id"] for s in data["subjects"]]
    assert subject["mandate"]["scope"] == "payments"
    assert subject["mandate"]["context"]["authorizedDIDs"] == [api.creds.did, "did:web:agent.example.com"]
    assert subject["mandate"]["action"] == data["credentials"][0]["action"]
    assert [e["id"] for e in mandate["evidences"]] == [first.decision_id, second.decision_id]
    status = mandate["credentialStatus"]
    assert status["type"] == "BitstringStatusListEntry" and status["statusPurpose"] == "revocation"
    assert status["statusListCredential"].startswith(f"{settings.public_url}/credentials/status/")
    vc.verify_mandate(mandate, keys.did_resolver(engine, settings))


async def test_a_rejection_issues_nothing(api: SignedClient, temporal: Any) -> None:
    data = await create(api, contacts=["ana@example.com", "bea@example.com"])
    handle = request_handle(temporal, data["id"])
    ana, bea = (subject_uuid(s["id"]) for s in data["subjects"])
    cred_id = data["credentials"][0]["id"]
    await decide(handle, ana, cred_id, accept=False)
    assert (await decide(handle, bea, cred_id, accept=True)).mandate_id is None
    [cred] = (await api.get(f"/request/{data['id']}")).json()["credentials"]
    assert cred["status"] == "REJECTED" and cred["w3cCredential"] is None and cred["id"] == cred_id


async def test_a_document_is_issued_in_the_document_form(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    data = await create(api, credentials=[DOCUMENT])
    handle = request_handle(temporal, data["id"])
    issued = await decide(handle, subject_uuid(data["subjects"][0]["id"]), data["credentials"][0]["id"])
    [cred] = (await api.get(f"/request/{data['id']}")).json()["credentials"]
    doc = cred["w3cCredential"]
    assert cred["id"] == issued.mandate_id and cred["status"] == "ACTIVE"
    assert "VIADocument" in doc["type"] and doc["issuanceDate"]
    assert doc["credentialSubject"]["data"][0]["value"] == "Rua 1"
    vc.verify_document_credential(doc, keys.did_resolver(engine, settings))


async def test_issuing_again_returns_the_first_credential(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
    cipher: SecretCipher,
) -> None:
    """What a retried activity does: the second call finds the first credential and keeps it."""
    data = await create(api)
    handle = request_handle(temporal, data["id"])
    issued = await decide(handle, subject_uuid(data["subjects"][0]["id"]), data["credentials"][0]["id"])
    again = mandates.issue(engine, cipher, settings, data["credentials"][0]["id"], actor=TEMPORAL)
    assert (again.mandate_id, again.newly_issued) == (issued.mandate_id, False)
    with read_session(engine) as session:
        rows = list(session.exec(select(Credential).where(Credential.request_id == data["id"])))
    assert [r.mandate_id for r in rows] == [issued.mandate_id]


async def test_status_list_indices_are_distinct(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
) -> None:
    data = await create(
        api, credentials=[DOCUMENT, {**DOCUMENT, "name": "Second"}, {**DOCUMENT, "name": "Third"}]
    )
    handle = request_handle(temporal, data["id"])
    subject = subject_uuid(data["subjects"][0]["id"])
    for cred in data["credentials"]:
        await decide(handle, subject, cred["id"])
    with read_session(engine) as session:
        rows = list(session.exec(select(Credential).where(Credential.request_id == data["id"])))
    entries = {(r.status_list_id, r.status_list_index) for r in rows}
    assert len(entries) == 3 and all(i is not None for _, i in entries)
