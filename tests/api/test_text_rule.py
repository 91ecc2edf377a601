"""Text people read or that is signed (issue 30, item 5), through the API in every version: a
control character (a line feed only where the field may break lines), a line separator or a bidi
control is a 400 naming the field, and nothing is written: no request, no revocation, no receipt,
no audit record. What may break lines (a description, a document's value) still does.

``core.text`` holds the rule; ``wire.texts`` applies it where a body is parsed; the revocation's
use case (``services.mandates.revoke``) applies it again for every surface that revokes."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import Engine, func, select
from sqlmodel import col

from core.secretbox import SecretCipher
from core.settings import Settings
from store.tables import AuditRecord, Credential, CredentialRequest
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.audit import issued_mandate
from wire.versioning import VERSIONS

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")

FAKE_LINE = "\n2026-01-31 12:00:00 MANDATE_REVOKED by operator:root reason=user_initiated"
ONE_LINE = "must be one line without control, line separator or bidi override characters"
MULTILINE = "must not hold control characters other than line breaks"


def lines(resp: httpx.Response) -> list[str]:
    message = assert_error_shape(resp, 400)["message"]
    return [message] if isinstance(message, str) else list(message)


def rows(engine: Engine, table: Any, org_id: str) -> int:
    with engine.connect() as conn:
        query = select(func.count()).select_from(table).where(col(table.organization_id) == org_id)
        return int(conn.execute(query).scalar_one())


def in_version(version: str, body: dict[str, Any]) -> dict[str, Any]:
    if version == "2026-09-01":  # took users: [{contact}]
        body = {**body, "users": [{"contact": c} for c in body["contacts"]]}
        del body["contacts"]
    return body


def policy(**fields: Any) -> dict[str, Any]:
    body = policy_request()
    body["credentials"][0].update(fields)
    return body


def payees(*names: str) -> dict[str, Any]:
    return policy(
        action={**policy_request()["credentials"][0]["action"], "userParams": {"payees": list(names)}}
    )


def document(**item: Any) -> dict[str, Any]:
    data = {"label": "Clause", "type": "text", "value": "v", "hidden": False, **item}
    return policy_request(credentials=[{"type": "DOCUMENT", "name": "Contract", "data": [data]}])


REFUSED = [
    (policy(description="Rent \u202egnp.exe"), "credentials.0.description", MULTILINE, "U+202E"),
    (policy(description="Rent\tpayments"), "credentials.0.description", MULTILINE, "U+0009"),
    (policy(description="Rent\rpayments"), "credentials.0.description", MULTILINE, "U+000D"),
    (policy(description="Rent\u2028payments"), "credentials.0.description", MULTILINE, "U+2028"),
    (policy(scope="payments" + FAKE_LINE), "credentials.0.scope", ONE_LINE, "U+000A"),
    (policy(scope="payments \u2066to Eve\u2069"), "credentials.0.scope", ONE_LINE, "U+2066, U+2069"),
    (policy(name="Rent\u200f"), "credentials.0.name", ONE_LINE, "U+200F"),
    (policy(tags=["ok", "x\u061c"]), "credentials.0.tags.1", ONE_LINE, "U+061C"),
    (policy(internalId="ref\x85"), "credentials.0.internalId", ONE_LINE, "U+0085"),
    (policy_request(name="Pay\u202a"), "name", ONE_LINE, "U+202A"),
    (document(value="1000 EUR\u202e"), "credentials.0.data.0.value", MULTILINE, "U+202E"),
    (document(value="1000 EUR\x1b[2K"), "credentials.0.data.0.value", MULTILINE, "U+001B"),
    (document(label="Clause\u200e"), "credentials.0.data.0.label", ONE_LINE, "U+200E"),
    (document(fields=[{"note": "x\u202dy"}]), "credentials.0.data.0.fields", "0.note " + MULTILINE, "U+202D"),
    (payees("Ann", "Bob\u202e"), "credentials.0.action.userParams", "payees.1 " + ONE_LINE, "U+202E"),
    (payees("Ann" + FAKE_LINE), "credentials.0.action.userParams", "payees.0 " + ONE_LINE, "U+000A"),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("body", "field", "rule", "found"), REFUSED, ids=[f"{r[1]}-{r[3]}" for r in REFUSED])
async def test_a_text_with_what_it_may_not_hold_is_a_400_naming_it(
    api: SignedClient, engine: Engine, version: str, body: dict[str, Any], field: str, rule: str, found: str
) -> None:
    resp = await api.post("/request", in_version(version, body), headers={"API-Version": version})
    said = lines(resp)
    assert any(f"{field}: {rule}" in line and f"(found {found})" in line for line in said), said
    assert rows(engine, CredentialRequest, api.creds.organization_id) == 0


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_description_and_a_documents_value_may_break_lines(
    api: SignedClient, engine: Engine, version: str
) -> None:
    body = document(value="Rua da Conceição 1\r\nLisboa\n1100-001")
    body["credentials"][0]["description"] = "The lease.\nSigned for two years."
    created = await api.post("/request", in_version(version, body), headers={"API-Version": version})
    assert created.status_code == 201, created.text
    answered = created.json()
    request_id = answered["data"]["id"] if "data" in answered else answered["id"]
    stored = (await api.get(f"/request/{request_id}")).json()["credentials"][0]
    assert stored["description"] == "The lease.\nSigned for two years."
    assert stored["data"][0]["value"] == "Rua da Conceição 1\r\nLisboa\n1100-001"


# --- the revocation's reason, both routes, every version ----------------------------------------

BAD_REASONS = [
    ("user_initiated" + FAKE_LINE, "U+000A"),
    ("user_initiated\u202e", "U+202E"),
    ("user\u2066initiated\u2069", "U+2066, U+2069"),
    ("user_initiated\x85", "U+0085"),
    ("user_initiated\r", "U+000D"),
]


async def revoke_call(
    api: SignedClient, version: str, route: str, mandate_id: str, reason: str
) -> httpx.Response:
    path, headers = quote(mandate_id, safe=""), {"API-Version": version}
    if route == "POST":
        return await api.post(f"/credential/{path}/revoke", {"reason": reason}, headers=headers)
    return await api.request("DELETE", f"/credential/revoke/{path}", {"reason": reason}, headers=headers)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("route", ["POST", "DELETE"])
async def test_a_revocation_reason_is_one_line_on_both_routes(
    api: SignedClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    version: str,
    route: str,
) -> None:
    org_id = api.creds.organization_id
    issued = issued_mandate(engine, cipher, settings, org_id)
    records = rows(engine, AuditRecord, org_id)
    for reason, found in BAD_REASONS:
        said = lines(await revoke_call(api, version, route, issued.mandate_id, reason))
        assert any(line.startswith(f"reason: {ONE_LINE} (found {found})") for line in said), (reason, said)
    with engine.connect() as conn:
        row = conn.execute(select(Credential).where(col(Credential.id) == issued.credential_id)).one()
    assert (row.status, row.revoked_at, row.revocation_reason, row.revocation_receipt) == (
        "ACTIVE",
        None,
        None,
        None,
    )
    assert rows(engine, AuditRecord, org_id) == records  # no MANDATE_REVOKED
    done = await revoke_call(api, version, route, issued.mandate_id, "user_initiated")
    assert done.status_code == 200, done.text
    assert done.json()["receipt"]["reason"] == "user_initiated"
