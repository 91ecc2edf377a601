"""Every operation of the OpenAPI document, called for real: each answer (successes and the errors
met on the way) conforms to the document: its status is documented, its body valid against the
schema, its headers present and valid. The successes are the document's examples: with
``MANDATUM_RECORD_OPENAPI_EXAMPLES=1`` these tests rewrite ``api/openapi_examples.json`` from what
they received (docs/api.md)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from services import approvals
from services.context import Context
from tests.support.api_client import Credentials, SignedClient, policy_request
from tests.support.approvals import ALICE, FORM, JSON, make
from tests.support.approvals import DOCUMENT as APPROVED_DOCUMENT
from tests.support.journey_messages import message_for
from tests.support.mandates import accept_all
from tests.support.openapi import Oracle, Recorder
from tests.support.presentations import GOOD
from tests.support.workflow import executor, ts_queue  # noqa: F401 (fixtures)
from wire.approvals import WorkflowSpec

RECORD = os.environ.get("MANDATUM_RECORD_OPENAPI_EXAMPLES") == "1"
RESEND = "resend_code"  # answered on the time-skipping server, by its own test
DOCUMENT = {
    "type": "DOCUMENT",
    "name": "Lease",
    "data": [{"label": "Address", "type": "text", "value": "Rua das Flores 1, Porto", "hidden": False}],
}


async def recorder(api: SignedClient) -> Recorder:
    document = await api.http.get("/openapi.json")
    assert document.status_code == 200
    return Recorder(api, Oracle(document.json()))


async def issued(rec: Recorder, temporal: Client, example: bool = False, **overrides: Any) -> dict[str, Any]:
    """A request accepted by every subject; its record after acceptance."""
    created = await rec.call("POST", "/request", body=policy_request(**overrides), example=False)
    assert created.status_code == 201, created.text
    await accept_all(rec.api, temporal, created.json()["data"])
    path = {"requestId": created.json()["data"]["id"]}
    got = await rec.call("GET", "/request/{requestId}", path=path, example=example)
    assert got.status_code == 200 and got.json()["credentials"][0]["status"] == "ACTIVE", got.text
    return dict(got.json())


@pytest.mark.usefixtures("worker", "no_server_errors")
async def test_every_operation_answers_as_documented(
    api: SignedClient, temporal: Client, ctx: Context
) -> None:
    rec = await recorder(api)
    await reading_and_creating(rec)
    await users(rec)
    await approvals_and_workflows(rec, ctx)
    await mandates(rec, temporal)
    await public_documents(rec, api.creds)

    operations = {
        op["operationId"] for methods in rec.oracle.document["paths"].values() for op in methods.values()
    }
    succeeded = {op for op, status in rec.answered if status < 300}
    assert succeeded == operations - {RESEND}, sorted(operations - {RESEND} - succeeded)
    if RECORD:
        rec.write()


async def reading_and_creating(rec: Recorder) -> None:
    me = await rec.call("GET", "/me")
    assert me.json()["organizationId"] == rec.api.creds.organization_id
    await rec.call("GET", "/me", secret="not-the-secret")  # 401
    actions = await rec.call("GET", "/actions", params={"pageSize": 5})
    action_id = actions.json()["data"][0]["id"]
    await rec.call("GET", "/actions/{actionId}", path={"actionId": action_id})
    await rec.call("GET", "/actions/version/{actionId}", path={"actionId": action_id})
    missing = "urn:via:action:00000000-0000-4000-8000-000000000000"
    await rec.call("GET", "/actions/{actionId}", path={"actionId": missing}, example=False)

    nameless = policy_request()
    del nameless["credentials"][0]["name"]
    refused = await rec.call("POST", "/request", body=nameless)
    assert refused.status_code == 400 and refused.json()["message"] == ["credentials.0.name is required"]
    body = policy_request(
        contacts=["ana@example.com", {"contact": "+351912345678", "internalId": "tenant-7"}],
        internalId="lease-42",
    )
    created = await rec.call("POST", "/request", body=body, headers={"Idempotency-Key": "lease-42-v1"})
    assert created.status_code == 201, created.text
    request = created.json()["data"]
    other = await rec.call(
        "POST", "/request", body={**body, "name": "Other"}, headers={"Idempotency-Key": "lease-42-v1"}
    )
    assert other.status_code == 409
    await rec.call("POST", "/request", raw=b"[" * (1024 * 1024 + 1), example=False)  # 413

    listed = await rec.call("GET", "/request", params={"pageSize": 5, "search": "rent"})
    assert [r["id"] for r in listed.json()["data"]] == [request["id"]]
    await rec.call("GET", "/request", params={"frobnicate": "1"}, example=False)  # 400
    path = {"requestId": request["id"]}
    await rec.call("GET", "/request/link/{requestId}", path=path, params={"contact": "ana@example.com"})
    await rec.call("GET", "/request/{requestId}", path={"requestId": "0" * 24})  # 404
    await rec.call("GET", "/request/{requestId}", path={"requestId": "not-an-id"}, example=False)  # 400

    canceled = await rec.call("DELETE", "/request/{requestId}", path=path)
    assert canceled.json() == {"success": True}
    await rec.call("DELETE", "/request/{requestId}", path=path)  # 409: canceled already
    await rec.call("GET", "/request/{requestId}", path=path, example=False)


async def users(rec: Recorder) -> None:
    """POST /user and GET /user (issue 36): an import answered item by item, a read, refusals."""
    body = [
        {
            "contact": "rui@example.com",
            "internalId": "crm-1001",
            "extraContacts": ["+351912000111"],
            "identity": {
                "fullName": "Rui Costa",
                "birth": "1985-06-15",
                "docId": "AB123456",
                "countryAlpha3": "PRT",
            },
        },
        {"contact": "not a contact"},
    ]
    made = await rec.call("POST", "/user", body=body, headers={"Idempotency-Key": "import-2026-11-27"})
    assert [i["status"] for i in made.json()] == [201, 400], made.text
    await rec.call("POST", "/user", body=[])  # 400
    await rec.call("GET", "/user", params={"internalId": "crm-1001"})
    await rec.call("GET", "/user", params={"contact": "nobody@example.com"})  # 404
    await rec.call("GET", "/user", params={"contact": "rui@example.com", "internalId": "crm-1001"})  # 400


async def approvals_and_workflows(rec: Recorder, ctx: Context) -> None:
    org_id = rec.api.creds.organization_id
    ids = [make(ctx, org_id, raw) for raw in (FORM, JSON, APPROVED_DOCUMENT)]
    approvals.create_workflow(ctx, ALICE, org_id, WorkflowSpec(name="Lease", approvals=ids[1:]))
    await rec.call("GET", "/approvals", params={"pageSize": 5})
    await rec.call("GET", "/approvals", params={"types": "CONSENT"})  # 400
    await rec.call("GET", "/approvals/workflow", params={"types": ["JSON"]})
    document = {"approvalId": ids[2]}
    got = await rec.call("GET", "/approvals/{approvalId}/document", path=document, example=False)
    assert got.content.startswith(b"%PDF-")
    await rec.call("GET", "/approvals/{approvalId}/document", path={"approvalId": ids[0]})  # 404
    created = await rec.call(
        "POST", "/request", body={**policy_request(), "resourcesIds": ids[:1]}, example=False
    )
    assert created.status_code == 201, created.text


async def mandates(rec: Recorder, temporal: Client) -> None:
    request = await issued(rec, temporal, example=True)
    [credential] = request["credentials"]
    mandate_id = credential["id"]
    w3c = credential["w3cCredential"]
    mandate = {"credentialId": mandate_id}
    await rec.call("GET", "/credential/{credentialId}", path=mandate)
    await rec.call("GET", "/credential/{credentialId}/events", path=mandate)
    evidence = w3c["evidences"][0]["id"]
    await rec.call("GET", "/credential/evidence/{evidenceId}", path={"evidenceId": evidence})

    first = await rec.call("POST", "/credential/{mandateId}/presentation", path={"mandateId": mandate_id})
    bound = await rec.call(
        "POST",
        "/credential/vp/{mandateId}",
        path={"mandateId": mandate_id},
        body={"targetVerifier": rec.api.creds.did},
    )
    allowed = await rec.call(
        "POST",
        "/credential/verify",
        body={"presentation": first.json()["data"]["presentation"], "executionParams": GOOD},
    )
    assert allowed.status_code == 200 and allowed.json()["decision"] == "allow", allowed.text
    too_much = {"amount": 5000, "payee": "Bob"}
    denied = await rec.call(
        "POST",
        "/credential/verify",
        body={"presentation": bound.json()["data"]["presentation"], "executionParams": too_much},
    )
    assert denied.status_code == 403 and denied.json()["reason"] == "rule_failed", denied.text
    await rec.call("POST", "/credential/verify", body={"executionParams": GOOD}, example=False)  # 400

    revoke = {"mandateId": mandate_id}
    revoked = await rec.call(
        "POST", "/credential/{mandateId}/revoke", path=revoke, body={"reason": "user_initiated"}
    )
    assert revoked.status_code == 200 and revoked.json()["status"] == "REVOKED", revoked.text
    again = await rec.call("POST", "/credential/{mandateId}/revoke", path=revoke, body={"reason": "again"})
    assert again.status_code == 409
    refused = await rec.call("POST", "/credential/{mandateId}/presentation", path={"mandateId": mandate_id})
    assert refused.status_code == 400 and refused.json()["reason"] == "credential_revoked"
    await rec.call("GET", "/credential/{credentialId}", path=mandate, example=False)  # with its REVOKE item

    other = await issued(
        rec, temporal, credentials=[{**policy_request()["credentials"][0], "name": "Rent, 2027"}]
    )
    alias = {"mandateId": other["credentials"][0]["id"]}
    dropped = await rec.call(
        "DELETE", "/credential/revoke/{mandateId}", path=alias, body={"reason": "organization_policy"}
    )
    assert dropped.status_code == 200, dropped.text

    document = await issued(rec, temporal, credentials=[DOCUMENT])
    [paper] = document["credentials"]
    # a DOCUMENT is read by its entity id too; the PDF is checked, not kept as the example
    entity = (
        await rec.call("GET", "/credential/{credentialId}", path={"credentialId": paper["id"]}, example=False)
    ).json()
    with_pdf = await rec.call(
        "GET",
        "/credential/{credentialId}",
        path={"credentialId": entity["credential"]["id"]},
        params={"includePdf": "true"},
        example=False,
    )
    assert with_pdf.json()["pdf"]

    reported = await rec.call(
        "POST", "/subject/identity", body={"contact": "ana@example.com", "success": True}
    )
    assert reported.json()["identityStatus"] == "VERIFIED", reported.text
    # the subject's trusted browser sessions (none opened here), ended by the integrator
    revoked = await rec.call(
        "DELETE", "/subject/sessions", params={"contact": "ana@example.com"}, example=False
    )
    assert revoked.json() == {"success": True, "revoked": []}, revoked.text
    await rec.call("GET", "/activity", params={"pageSize": 5, "requestId": request["id"]})


async def public_documents(rec: Recorder, creds: Credentials) -> None:
    await rec.call("GET", "/.well-known/did.json")
    await rec.call("GET", "/orgs/{org_id}/did.json", path={"org_id": creds.organization_id})
    listed = await rec.call("GET", "/request", params={"pageSize": 5}, example=False)
    subject = listed.json()["data"][0]["subjects"][0]["did"].rsplit(":", 1)[1]
    await rec.call("GET", "/subjects/{subject_id}/did.json", path={"subject_id": subject})
    await rec.call("GET", "/did/resolve/{did}", path={"did": creds.did})
    context = await rec.call("GET", "/ns/v1")
    await rec.call("GET", "/ns/v1", headers={"If-None-Match": context.headers["ETag"]}, example=False)  # 304
    mandate = next(
        c
        for r in listed.json()["data"]
        for c in r["credentials"]
        if c["id"].startswith("urn:via:credential:")
    )
    got = await rec.call(
        "GET", "/credential/{credentialId}", path={"credentialId": mandate["id"]}, example=False
    )
    status_list = got.json()["w3cCredential"]["credentialStatus"]["statusListCredential"].rsplit("/", 1)[1]
    await rec.call("GET", "/credentials/status/{listId}", path={"listId": status_list})
    await rec.call("GET", "/credentials/status/{listId}", path={"listId": "0" * 24}, example=False)  # 404


@pytest.mark.usefixtures("no_server_errors")
async def test_resend_answers_as_documented(ts_env: WorkflowEnvironment, ts_api: SignedClient) -> None:
    rec = await recorder(ts_api)
    created = await rec.call("POST", "/request", body=policy_request(), example=False)
    request = created.json()["data"]
    await message_for(request["id"], request["subjects"][0]["id"].rsplit(":", 1)[1])
    path = {"requestId": request["id"]}
    contact = {"contact": "ana@example.com"}
    too_soon = await rec.call("PATCH", "/request/resend/{requestId}", path=path, params=contact)
    assert too_soon.status_code == 429 and int(too_soon.headers["Retry-After"]) <= 60
    await ts_env.sleep(61)
    resent = await rec.call("PATCH", "/request/resend/{requestId}", path=path, params=contact)
    assert resent.status_code == 200 and resent.json() == {"success": True}, resent.text
    await rec.call("PATCH", "/request/resend/{requestId}", path=path, params={}, example=False)  # 400
    assert (await rec.call("DELETE", "/request/{requestId}", path=path, example=False)).status_code == 200
    assert {op for op, status in rec.answered if status < 300} >= {RESEND}
    if RECORD:
        rec.write()
