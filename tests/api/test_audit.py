"""The audit trail (SPEC.md "Audit trail", issue 5): what is recorded, in the transaction of the
change it records, signed and chained; ``GET /activity``."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine, func, select
from sqlmodel import col

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import verification as verifications
from store import audit
from store import requests as store
from store.audit_queries import verify_chains
from store.db import read_session, utcnow
from store.keys import did_resolver
from store.tables import AuditRecord, Presentation, Verification
from tests.support.api_client import SignedClient, assert_error_shape
from tests.support.audit import chain, issued_mandate, new_request
from trust.did import web_service_did
from trust.eddsa_jcs import verify_document

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("no_server_errors"), pytest.mark.both_databases]
GOOD = {"amount": 100, "payee": "Bob"}
VERIFIER = Actor.shell_operator("verifier")


async def _vp(api: SignedClient, mandate_id: str) -> dict[str, Any]:
    resp = await api.post(f"/credential/{quote(mandate_id, safe='')}/presentation", {})
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["data"]["presentation"])


async def test_a_mandates_life_is_recorded_signed_and_chained(
    api: SignedClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    org_id = api.creds.organization_id
    issued = issued_mandate(engine, cipher, settings, org_id)
    vp = await _vp(api, issued.mandate_id)
    allowed = await api.post("/credential/verify", {"presentation": vp, "executionParams": GOOD})
    assert allowed.status_code == 200, allowed.text
    replay = await api.post("/credential/verify", {"presentation": vp, "executionParams": GOOD})
    assert replay.status_code == 403
    path = quote(issued.mandate_id, safe="")
    assert (await api.post(f"/credential/{path}/revoke", {"reason": "user_initiated"})).status_code == 200
    refused = await api.post(f"/credential/{path}/presentation", {})
    assert refused.status_code == 400

    records = chain(engine, org_id)
    assert [r.type for r in records] == [
        "REQUEST_CREATED",
        "HUMAN_DECISION_ACCEPT",
        "MANDATE_ISSUED",
        "VP_ISSUED",
        "VERIFY_ACCEPT",
        "VERIFY_DENY",
        "MANDATE_REVOKED",
        "VP_ISSUE_DENIED",
    ]
    assert [r.seq for r in records] == list(range(1, 9))
    assert [r.prev_hash for r in records] == [None, *(r.hash for r in records[:-1])]
    resolver = did_resolver(engine, settings)
    for record in records:
        document = audit.document_of(record)
        assert audit.record_hash(document) == record.hash
        verify_document(document, resolver, proof_purpose="assertionMethod")
        assert record.proof["verificationMethod"].startswith(web_service_did(settings.public_url) + "#")
    created, decided, minted, vp_issued, accepted, denied, revoked, vp_denied = records
    assert created.request_id == issued.request_id and created.data["credentials"] == [issued.credential_id]
    assert decided.data | {"decidedAt": None, "decisionId": None} == {
        "decidedAt": None,
        "decisionId": None,
        "subjectId": issued.subject_id,
        "contact": "ana@example.com",
        "credentialId": issued.credential_id,
        "accepted": True,
        "channel": "email",
        "surface": "iframe",
    }
    assert minted.credential_id == issued.mandate_id
    assert minted.data["actionId"] and minted.data["userParams"] == {"maxAmount": 1200, "payees": []}
    assert minted.data["credential"]["id"] == issued.mandate_id
    assert vp_issued.data["presentation"] == vp and vp_issued.data["receipt"]["type"] == "PRESENTATION_ISSUED"
    assert accepted.data["executionParams"] == GOOD and len(accepted.data["evaluations"]) == 2
    assert accepted.data["receipt"] == allowed.json()["receipt"]
    assert denied.data["reason"] == "vp_already_used" and denied.data["receipt"] == replay.json()["receipt"]
    assert revoked.data["reason"] == "user_initiated" and revoked.data["receipt"]["type"] == "MANDATE_REVOKED"
    assert vp_denied.data["reason"] == "credential_revoked"
    [check] = verify_chains(engine, settings, org_id)
    assert check.broken is None and check.records == 8


async def test_rejection_and_cancellation_are_recorded(
    api: SignedClient,
    engine: Engine,
    settings: Settings,
) -> None:
    org_id = api.creds.organization_id
    bundle = new_request(engine, org_id)
    store.record_decision(
        engine,
        "urn:via:decision:00000000-0000-4000-8000-0000000000aa",
        bundle.request.id,
        bundle.credentials[0].id,
        bundle.subjects[0][1].id,
        False,
        "sms",
        "hosted",
        utcnow(),
        True,
    )
    other = new_request(engine, org_id)
    at = utcnow()
    store.record_cancellation(engine, other.request.id, at, "apiKey:k1")
    store.record_cancellation(engine, other.request.id, utcnow(), "apiKey:k2")  # a retry: no record
    types = [(r.type, r.request_id, r.actor) for r in chain(engine, org_id)]
    assert types[1] == ("HUMAN_DECISION_REJECT", bundle.request.id, f"subject:{bundle.subjects[0][1].id}")
    assert types[3] == ("MANDATE_CANCELED", other.request.id, "apiKey:k1") and len(types) == 4
    record = chain(engine, org_id)[1]
    assert (record.data["channel"], record.data["surface"]) == ("sms", "hosted")
    assert record.data["accepted"] is False
    assert verify_chains(engine, settings, org_id)[0].broken is None


async def test_a_verification_and_its_record_commit_together(
    api: SignedClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The record is written in the verification's transaction: when it cannot be written, the
    VP is not used up and no verification is stored either."""
    org_id = api.creds.organization_id
    issued = issued_mandate(engine, cipher, settings, org_id)
    vp = await _vp(api, issued.mandate_id)

    def broken_write(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the audit store is down")

    monkeypatch.setattr(audit.Chains, "write", broken_write)
    with pytest.raises(RuntimeError):
        verifications.verify(
            engine,
            cipher,
            settings,
            actor=VERIFIER,
            verifier_org_id=org_id,
            presentation=vp,
            execution_params=GOOD,
        )
    monkeypatch.undo()
    with read_session(engine) as session:
        assert session.get(Presentation, vp["id"]).used_at is None  # type: ignore[union-attr]
        assert (
            session.execute(
                select(func.count()).select_from(Verification).where(Verification.presentation_id == vp["id"])
            ).scalar_one()
            == 0
        )
    verdict = verifications.verify(
        engine,
        cipher,
        settings,
        actor=VERIFIER,
        verifier_org_id=org_id,
        presentation=vp,
        execution_params=GOOD,
    )
    assert verdict.decision == "allow"
    with read_session(engine) as session:
        verified = session.execute(
            select(func.count()).select_from(Verification).where(col(Verification.organization_id) == org_id)
        ).scalar_one()
        records = session.execute(
            select(func.count())
            .select_from(AuditRecord)
            .where(
                col(AuditRecord.organization_id) == org_id,
                col(AuditRecord.type).in_(["VERIFY_ACCEPT", "VERIFY_DENY"]),
            )
        ).scalar_one()
    assert verified == records == 1


async def test_values_jcs_cannot_hold_are_recorded_as_digests(
    api: SignedClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    org_id = api.creds.organization_id
    issued = issued_mandate(engine, cipher, settings, org_id)
    vp = await _vp(api, issued.mandate_id)
    odd = {"amount": 2**60, "payee": "Bob"}  # valid JSON, beyond what JCS (I-JSON) represents
    resp = await api.post("/credential/verify", {"presentation": vp, "executionParams": odd})
    assert resp.status_code == 403 and resp.json()["reason"] == "rule_failed"
    record = chain(engine, org_id)[-1]
    assert record.type == "VERIFY_DENY"
    assert record.data["executionParams"]["omitted"].startswith("not representable")
    assert len(record.data["executionParams"]["sha256"]) == 64
    assert verify_chains(engine, settings, org_id)[0].broken is None


async def test_activity_pages_and_filters(
    api: SignedClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    org_id = api.creds.organization_id
    first = issued_mandate(engine, cipher, settings, org_id)
    second = issued_mandate(engine, cipher, settings, org_id)
    await _vp(api, first.mandate_id)
    page = (await api.get("/activity", params={"pageSize": 5})).json()
    assert page["totalPages"] == 2 and [r["seq"] for r in page["data"]] == [7, 6, 5, 4, 3]
    newest = page["data"][0]
    assert newest["type"] == "VP_ISSUED" and newest["credentialId"] == first.mandate_id
    assert newest["hash"] == chain(engine, org_id)[-1].hash and newest["organizationId"] == org_id
    rest = (await api.get("/activity", params={"pageSize": 5, "pageIndex": 1})).json()
    assert [r["seq"] for r in rest["data"]] == [2, 1]
    issued = (await api.get("/activity", params=[("type", "MANDATE_ISSUED"), ("type", "VP_ISSUED")])).json()
    assert [r["type"] for r in issued["data"]] == ["VP_ISSUED", "MANDATE_ISSUED", "MANDATE_ISSUED"]
    by_request = (await api.get("/activity", params={"requestId": second.request_id})).json()
    assert {r["type"] for r in by_request["data"]} == {
        "REQUEST_CREATED",
        "HUMAN_DECISION_ACCEPT",
        "MANDATE_ISSUED",
    }
    by_mandate = (await api.get("/activity", params={"credentialId": first.mandate_id})).json()
    # the mandate's URN also finds the decision, which names the credential by its id
    assert [r["type"] for r in by_mandate["data"]] == ["VP_ISSUED", "MANDATE_ISSUED", "HUMAN_DECISION_ACCEPT"]
    credential_id = by_mandate["data"][-1]["credentialId"]
    by_id = (await api.get("/activity", params={"credentialId": credential_id})).json()
    assert by_id["data"] == by_mandate["data"] and credential_id != first.mandate_id
    today = utcnow().date().isoformat()
    dated = (await api.get("/activity", params={"dateFrom": today, "dateTo": today})).json()
    assert len(dated["data"]) == 7
    assert (await api.get("/activity", params={"dateFrom": "2000-01-01", "dateTo": "2000-01-02"})).json() == {
        "data": [],
        "totalPages": 0,
    }


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"type": "SOMETHING"}, "type SOMETHING is not one of"),
        ({"requestId": "XYZ"}, "requestId must be"),
        ({"dateTo": "2026-01-01"}, "dateTo requires dateFrom"),
        ({"pageSize": 1000}, "pageSize"),
    ],
)
async def test_bad_activity_queries_are_400(api: SignedClient, params: dict[str, Any], words: str) -> None:
    resp = await api.get("/activity", params=params)
    assert_error_shape(resp, 400)
    assert words in str(resp.json()["message"])


async def test_another_organizations_records_are_not_listed(
    api: SignedClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    from tests.conftest import new_org

    other = new_org(engine, cipher, settings)
    issued_mandate(engine, cipher, settings, other.organization_id)
    assert (await api.get("/activity")).json() == {"data": [], "totalPages": 0}
