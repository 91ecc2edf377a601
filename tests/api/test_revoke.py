"""Revoking a mandate (CONTRACT 4, 9): POST /credential/{mandateId}/revoke and its DELETE alias.

Only the owning organization may revoke (anyone else gets 404), only an ACTIVE mandate can be
revoked (409 otherwise, also for the loser of a race), and a revocation records the reason, a
signed MANDATE_REVOKED receipt and a signed REVOKE proof item on the document form, together.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from core.ids import new_object_id
from core.secretbox import SecretCipher
from core.settings import Settings
from store.db import read_session
from store.keys import did_resolver
from store.tables import Credential
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape
from tests.support.mandates import create_request, issued_mandate
from trust.credentials import verify_document_credential, verify_mandate
from trust.did import web_service_did
from trust.receipts import verify_receipt

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]


def path_of(mandate_id: str) -> str:
    return quote(mandate_id, safe="")  # as integrators send it (CONTRACT 1)


def stored(engine: Engine, mandate_id: str) -> Credential:
    with read_session(engine) as session:
        row = session.exec(select(Credential).where(Credential.mandate_id == mandate_id)).one()
        return row


async def status_in_request(api: SignedClient, mandate: dict[str, Any]) -> str:
    got = await api.get(f"/request/{mandate['requestId']}")
    [cred] = [c for c in got.json()["credentials"] if c["id"] == mandate["id"]]
    return str(cred["status"])


async def test_revoke_records_everything_and_answers_with_a_signed_receipt(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    mandate = await issued_mandate(api, temporal)
    resp = await api.post(f"/credential/{path_of(mandate['id'])}/revoke", {"reason": "user_initiated"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert set(body) == {"credentialId", "status", "revokedAt", "receipt"}
    assert body["credentialId"] == mandate["id"] and body["status"] == "REVOKED"
    revoked_at = datetime.fromisoformat(body["revokedAt"].replace("Z", "+00:00"))

    receipt = body["receipt"]
    assert receipt["type"] == "MANDATE_REVOKED" and receipt["id"].startswith("urn:via:receipt:")
    assert receipt["credentialId"] == mandate["id"] and receipt["requestId"] == mandate["requestId"]
    assert receipt["reason"] == "user_initiated"
    assert datetime.fromisoformat(receipt["timestamp"].replace("Z", "+00:00")) == revoked_at
    resolver = did_resolver(engine, settings)
    verify_receipt(receipt, resolver, issuer_did=web_service_did(settings.public_url))
    assert receipt["proof"]["verificationMethod"].startswith(web_service_did(settings.public_url) + "#")

    assert await status_in_request(api, mandate) == "REVOKED"
    row = stored(engine, mandate["id"])
    assert (row.status, row.revocation_reason) == ("REVOKED", "user_initiated")
    assert row.revocation_receipt == receipt
    assert row.revoked_at is not None
    # the document form gained a signed REVOKE item over the same content; the mandate is unchanged
    assert row.document_credential is not None
    proofs = row.document_credential["proof"]
    assert [p["actionType"] for p in proofs] == ["ISSUE", "REVOKE"]
    assert proofs[1]["createdAt"] == receipt["timestamp"]
    assert proofs[1]["actionProof"] == proofs[0]["actionProof"]  # the same content
    verify_document_credential(row.document_credential, resolver)
    assert row.w3c_credential == mandate["w3cCredential"]
    verify_mandate(mandate["w3cCredential"], resolver)


async def test_a_second_revoke_is_409_and_changes_nothing(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
) -> None:
    mandate = await issued_mandate(api, temporal)
    first = await api.post(f"/credential/{path_of(mandate['id'])}/revoke", {"reason": "user_initiated"})
    assert first.status_code == 200, first.text
    again = await api.post(f"/credential/{mandate['id']}/revoke", {"reason": "organization_policy"})
    body = assert_error_shape(again, 409)
    assert body["error"] == "Conflict" and "REVOKED" in body["message"]
    alias = await api.delete(f"/credential/revoke/{path_of(mandate['id'])}")
    assert_error_shape(alias, 409)
    row = stored(engine, mandate["id"])
    assert row.revocation_reason == "user_initiated" and row.revocation_receipt == first.json()["receipt"]
    assert row.document_credential is not None and len(row.document_credential["proof"]) == 2


async def test_a_credential_that_is_not_active_is_409(api: SignedClient, engine: Engine) -> None:
    """A credential not issued yet has no mandate URN; named by its entity id it is still refused."""
    request = await create_request(api)
    cred_id = request["credentials"][0]["id"]
    resp = await api.post(f"/credential/{cred_id}/revoke", {"reason": "user_initiated"})
    body = assert_error_shape(resp, 409)
    assert "only an ACTIVE mandate" in body["message"]
    assert_error_shape(await api.delete(f"/credential/revoke/{cred_id}"), 409)
    with read_session(engine) as session:
        row = session.get(Credential, cred_id)
        assert row is not None and row.status in ("DRAFT", "PENDING") and row.revoked_at is None


async def test_concurrent_revokes_have_exactly_one_winner(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
) -> None:
    mandate = await issued_mandate(api, temporal)
    path = path_of(mandate["id"])
    reasons = ["user_initiated", "organization_policy", "system_expiry", "user_initiated"]
    answers = await asyncio.gather(
        *(
            api.post(f"/credential/{path}/revoke", {"reason": r})
            if i % 2 == 0
            else api.request("DELETE", f"/credential/revoke/{path}", {"reason": r})
            for i, r in enumerate(reasons)
        )
    )
    codes = sorted(a.status_code for a in answers)
    assert codes == [200, 409, 409, 409], [a.text for a in answers]
    [winner] = [a.json() for a in answers if a.status_code == 200]
    row = stored(engine, mandate["id"])
    assert row.revocation_receipt == winner["receipt"]
    assert row.revocation_reason == winner["receipt"]["reason"]
    assert row.document_credential is not None
    assert [p["actionType"] for p in row.document_credential["proof"]] == ["ISSUE", "REVOKE"]


async def test_another_organization_gets_404_and_the_mandate_stays_active(
    api: SignedClient,
    temporal: Any,
    http: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    mandate = await issued_mandate(api, temporal)
    other = SignedClient(http, new_org(engine, cipher, settings))
    path = path_of(mandate["id"])
    for resp in (
        await other.post(f"/credential/{path}/revoke", {"reason": "user_initiated"}),
        await other.delete(f"/credential/revoke/{path}"),
    ):
        body = assert_error_shape(resp, 404)
        assert body["error"] == "Not Found"
    # an unknown mandate reads exactly the same
    unknown = "urn:via:credential:00000000-0000-4000-8000-000000000000"
    assert_error_shape(await api.post(f"/credential/{path_of(unknown)}/revoke", {"reason": "x"}), 404)
    assert_error_shape(await api.post(f"/credential/{new_object_id()}/revoke", {"reason": "x"}), 404)
    assert stored(engine, mandate["id"]).status == "ACTIVE"
    assert await status_in_request(api, mandate) == "ACTIVE"


async def test_the_delete_alias_with_a_reason(api: SignedClient, temporal: Any, engine: Engine) -> None:
    mandate = await issued_mandate(api, temporal)
    resp = await api.request(
        "DELETE", f"/credential/revoke/{path_of(mandate['id'])}", {"reason": "organization_policy"}
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["status"] == "REVOKED" and resp.json()["receipt"]["reason"] == "organization_policy"
    assert stored(engine, mandate["id"]).revocation_reason == "organization_policy"


async def test_the_delete_alias_without_a_body(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    """No body (or ``{}``): revoked with no reason; the receipt omits the member."""
    bodies: list[dict[str, Any] | None] = [None, {}]
    for body in bodies:
        mandate = await issued_mandate(api, temporal)
        resp = await api.request("DELETE", f"/credential/revoke/{mandate['id']}", body)  # URN not encoded
        assert resp.status_code == 200, resp.text
        receipt = resp.json()["receipt"]
        assert "reason" not in receipt and receipt["credentialId"] == mandate["id"]
        verify_receipt(
            receipt, did_resolver(engine, settings), issuer_did=web_service_did(settings.public_url)
        )
        row = stored(engine, mandate["id"])
        assert row.status == "REVOKED" and row.revocation_reason is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"reason": "x" * 501}, "reason: string should have at most 500 characters"),
        ({"reason": 123}, "reason: input should be a valid string"),
        ({"reason": ["user_initiated"]}, "reason: input should be a valid string"),
        ({"reason": None}, "reason: input should be a valid string"),
        ({"reason": "  "}, "reason: must not be empty"),
        ({"reason": "a\u0000b"}, "reason: must not contain NUL characters"),
        ({}, "reason is required"),
        ({"reason": "user_initiated", "why": "x"}, "why is not a known field"),
    ],
)
async def test_a_bad_reason_is_400_and_revokes_nothing(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    body: dict[str, Any],
    expected: str,
) -> None:
    mandate = await issued_mandate(api, temporal)
    error = assert_error_shape(await api.post(f"/credential/{path_of(mandate['id'])}/revoke", body), 400)
    assert expected in error["message"], error
    if "reason" in body and body["reason"] is not None:
        alias = await api.request("DELETE", f"/credential/revoke/{path_of(mandate['id'])}", body)
        assert expected in assert_error_shape(alias, 400)["message"]
    assert stored(engine, mandate["id"]).status == "ACTIVE"


async def test_the_longest_reason_is_kept_whole(api: SignedClient, temporal: Any, engine: Engine) -> None:
    mandate = await issued_mandate(api, temporal)
    reason = "Razão: ação revogada pelo titular — " + "x" * (500 - 36)
    assert len(reason) == 500
    resp = await api.post(f"/credential/{path_of(mandate['id'])}/revoke", {"reason": reason})
    assert resp.status_code == 200, resp.text
    assert resp.json()["receipt"]["reason"] == reason == stored(engine, mandate["id"]).revocation_reason


@pytest.mark.parametrize(
    "bad",
    [
        "not-a-mandate",
        "urn:via:credential:1234",
        "urn:via:action:0b1e4c1a-7f1d-4a7e-9a55-1f2b3c4d5e6f",
        "A" * 24,
        "0" * 23,
    ],
)
async def test_a_malformed_mandate_id_is_400(api: SignedClient, bad: str) -> None:
    body = assert_error_shape(await api.post(f"/credential/{path_of(bad)}/revoke", {"reason": "x"}), 400)
    assert "mandateId must be a mandate URN" in body["message"]
    assert_error_shape(await api.delete(f"/credential/revoke/{path_of(bad)}"), 400)
