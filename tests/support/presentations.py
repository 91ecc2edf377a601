"""Presentations of an issued mandate and their verification through the API."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
from sqlalchemy import Engine, update
from sqlmodel import col

from core.settings import Settings
from store.db import read_session, utcnow, write_session
from store.keys import did_resolver
from store.tables import Credential, Verification
from tests.support.api_client import SignedClient, assert_error_shape
from tests.support.mandates import issued_mandate
from trust.did import web_service_did
from trust.receipts import verify_receipt


def path_of(mandate_id: str) -> str:
    return quote(mandate_id, safe="")


async def present(api: SignedClient, mandate_id: str, body: Any = None, alias: bool = False) -> Any:
    """The response of the presentation endpoint (``alias``: the /credential/vp/ form)."""
    encoded = path_of(mandate_id)
    path = f"/credential/vp/{encoded}" if alias else f"/credential/{encoded}/presentation"
    return await api.post(path, body)


async def presented(api: SignedClient, mandate_id: str, **body: Any) -> dict[str, Any]:
    """The VP and receipt of a successful call."""
    resp = await present(api, mandate_id, body or None)
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["data"])


def revoke_in_db(engine: Engine, mandate_id: str) -> None:
    """What revocation does to the credential row (the endpoint is built elsewhere)."""
    with write_session(engine) as session:
        session.execute(
            update(Credential)
            .where(col(Credential.mandate_id) == mandate_id)
            .values(status="REVOKED", revoked_at=utcnow())
        )


GOOD = {"amount": 100, "payee": "Bob"}


async def verify(api: SignedClient, vp: Any, execution: Any = None, **sign: Any) -> httpx.Response:
    body: dict[str, Any] = {"presentation": vp}
    if execution is not None:
        body["executionParams"] = execution
    return await api.post("/credential/verify", body, **sign)


async def new_vp(
    api: SignedClient, temporal: Any, target: str | None = None, **request: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An issued mandate of the caller's organization and a fresh VP of it."""
    mandate = await issued_mandate(api, temporal, **request)
    extra = {"targetVerifier": target} if target else {}
    return mandate, (await presented(api, mandate["id"], **extra))["presentation"]


def checked(
    resp: httpx.Response, engine: Engine, settings: Settings, reason: str | None = None
) -> dict[str, Any]:
    """The answer's shape for its decision, with a receipt that verifies against the service DID
    and pins these evaluations; a deny must carry ``reason``."""
    body = dict(resp.json())
    receipt = body["receipt"]
    if reason is None:
        assert resp.status_code == 200, resp.text
        assert set(body) - {"limits"} == {"decision", "credentialId", "evaluations", "receipt"}
        assert body["decision"] == "allow" and receipt["type"] == "VERIFICATION_APPROVED"
        assert "reason" not in receipt
    else:
        assert_error_shape(resp, 403)
        assert (body["error"], body["decision"], body["reason"]) == ("Forbidden", "deny", reason), body
        assert receipt["type"] == "VERIFICATION_DENIED" and receipt["reason"] == reason
    assert receipt["decision"] == body["decision"] and receipt["credentialId"] == body["credentialId"]
    assert receipt.get("limits") == body.get("limits")  # each use limit, signed as answered
    verify_receipt(
        receipt,
        did_resolver(engine, settings),
        issuer_did=web_service_did(settings.public_url),
        evaluations=body["evaluations"],
    )
    return body


def stored(engine: Engine, receipt_id: str) -> Verification:
    with read_session(engine) as session:
        row = session.get(Verification, receipt_id)
    assert row is not None
    return row
