"""An issued mandate through each SDK release: the request's and the credential's detail, a VP
(presentation), verification allowed and denied, revocation, the evidence of a decision and the
audit trail (1.0.5: ``ActivityApi``; 1.2.0: ``CredentialsApi.audit_events``).

The mandate is issued over plain HTTP (the subject's code and acceptance on the approval page), so
each test fails only on the SDK call it is about."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
import pytest_asyncio

from tests.support.api_client import Credentials
from tests.support.live_stack import LiveStack
from tests.support.sdk import (
    RELEASE_105,
    RELEASE_120,
    Sdk,
    SdkClient,
    issued_mandate,
    new_org,
    only,
    presentation,
    raw,
    read_request,
)

ALLOWED = {"amount": 100, "payee": "Landlord Ltd"}
TOO_MUCH = {"amount": 5000, "payee": "Landlord Ltd"}  # the subject approved at most 1200
RULES = ["amountWithinLimit", "payeeListed"]  # the example action's, in declared order


class Mandate:
    """An organization (pinned to the release's version) and a request whose subject accepted."""

    def __init__(self, creds: Credentials, record: dict[str, Any]) -> None:
        self.creds = creds
        self.record = record
        self.request_id: str = record["id"]
        self.credential = record["credentials"][0]
        self.id: str = self.credential["id"]  # urn:via:credential:<uuid>
        self.entity_id: str = record["entityId"]  # the credential's 24-hex id
        self.subject = record["subjects"][0]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def mandate(sdk: Sdk, live: LiveStack) -> Mandate:
    creds = new_org(live, sdk.release)
    return Mandate(creds, await issued_mandate(live, creds, internalId="order-m"))


def client_of(sdk: Sdk, live: LiveStack, mandate: Mandate) -> SdkClient:
    return sdk.client(live.url, mandate.creds)


def receipt_ok(receipt: Any) -> None:
    """1.0.5's ReceiptEntity: the receipt's URN and its time."""
    assert receipt.id.startswith("urn:via:receipt:"), receipt
    assert abs(
        datetime.fromisoformat(receipt.timestamp.replace("Z", "+00:00")) - datetime.now(UTC)
    ) < timedelta(minutes=5)


async def test_request_detail_of_an_issued_mandate(sdk: Sdk, live: LiveStack, mandate: Mandate) -> None:
    client = client_of(sdk, live, mandate)
    detail = await client.call(client.api.requests.detail, mandate.request_id, returns="RequestDetailEntity")
    assert (detail.id, detail.internal_id) == (mandate.request_id, "order-m")
    [credential] = detail.credentials
    assert (credential.id, credential.status, credential.name) == (mandate.id, "ACTIVE", "Rent payments")
    assert credential.w3c_credential["id"] == mandate.id
    assert "VIAMandate" in credential.w3c_credential["type"]
    assert credential.w3c_credential["credentialSubject"]["mandate"]["grantor"] == [mandate.subject["id"]]
    [subject] = detail.subjects
    assert subject.contact == mandate.record["contact"]


async def test_credential_detail(sdk: Sdk, live: LiveStack, mandate: Mandate) -> None:
    client = client_of(sdk, live, mandate)
    credential = await client.call(client.api.credentials.detail, mandate.id, returns="CredentialEntity")
    assert (credential.id, credential.status, credential.name) == (mandate.id, "ACTIVE", "Rent payments")
    assert credential.resource_type
    assert credential.w3c_credential["id"] == mandate.id
    assert "VerifiableCredential" in credential.w3c_credential["type"]
    if sdk.release == RELEASE_120:
        assert credential.executions_remaining is not None


async def test_issue_a_presentation(sdk: Sdk, live: LiveStack, mandate: Mandate) -> None:
    client = client_of(sdk, live, mandate)
    m = sdk.models
    returns = "PresentationResponseEntity" if sdk.release == RELEASE_105 else "PresentationEntity"
    made = await client.call(
        client.api.credentials.issue_vp, mandate.id, m.CreatePresentationDto(), returns=returns
    )
    vp = made.presentation
    assert "VerifiablePresentation" in vp["type"]
    assert vp["holder"] == mandate.creds.did
    assert vp["verifiableCredential"]["id"] == mandate.id
    if sdk.release == RELEASE_105:
        receipt_ok(made.receipt)
    else:
        assert made.presentation_encoded
    # bound to a verifier: its DID is the proof's domain
    bound = await client.call(
        client.api.credentials.issue_vp,
        mandate.id,
        m.CreatePresentationDto(targetVerifier=mandate.creds.did),
        returns=returns,
    )
    assert bound.presentation["proof"]["domain"] == mandate.creds.did


async def test_verify_allow(sdk: Sdk, live: LiveStack, mandate: Mandate) -> None:
    client = client_of(sdk, live, mandate)
    vp = await presentation(live, mandate.creds, mandate.id)
    body = sdk.models.VerifyPresentationDto(presentation=vp, executionParams=ALLOWED)
    allowed = await client.call(client.api.credentials.verify, body, returns="VerifyAllowResponseEntity")
    assert (allowed.decision, allowed.credential_id) == ("allow", mandate.id)
    assert [(e.rule, e.result) for e in allowed.evaluations] == [(rule, "pass") for rule in RULES]
    if sdk.release == RELEASE_105:
        receipt_ok(allowed.receipt)


async def test_verify_deny(sdk: Sdk, live: LiveStack, mandate: Mandate) -> None:
    client = client_of(sdk, live, mandate)
    vp = await presentation(live, mandate.creds, mandate.id)
    body = sdk.models.VerifyPresentationDto(presentation=vp, executionParams=TOO_MUCH)
    denied = await client.refusal(
        client.api.credentials.verify, body, status=403, returns="VerifyDenyResponseEntity"
    )
    assert (denied.decision, denied.reason, denied.credential_id) == ("deny", "rule_failed", mandate.id)
    assert denied.status_code == 403 and denied.message
    assert [(e.rule, e.result) for e in denied.evaluations] == [
        ("amountWithinLimit", "fail"),
        ("payeeListed", "pass"),
    ]
    if sdk.release == RELEASE_105:
        receipt_ok(denied.receipt)


@only(RELEASE_120)
async def test_verify_an_encoded_presentation(sdk: Sdk, live: LiveStack, mandate: Mandate) -> None:
    """1.2.0 issues a VP with its encoded form too, and verifies either."""
    client = client_of(sdk, live, mandate)
    m = sdk.models
    made = await client.call(
        client.api.credentials.issue_vp, mandate.id, m.CreatePresentationDto(), returns="PresentationEntity"
    )
    body = m.VerifyPresentationDto(presentationEncoded=made.presentation_encoded, executionParams=ALLOWED)
    allowed = await client.call(client.api.credentials.verify, body, returns="VerifyAllowResponseEntity")
    assert (allowed.decision, allowed.credential_id) == ("allow", mandate.id)


async def test_evidence_of_a_decision(sdk: Sdk, live: LiveStack, mandate: Mandate) -> None:
    """A mandate's evidence is the subject's acceptance: the SDK's text is what its digest covers."""
    client = client_of(sdk, live, mandate)
    [evidence] = mandate.credential["w3cCredential"]["evidences"]
    text = await client.call(client.api.credentials.evidence, evidence["id"], returns="str")
    digest = "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    assert digest == evidence["digestSRI"], text


async def test_revoke(sdk: Sdk, live: LiveStack, mandate: Mandate) -> None:
    revocable = await issued_mandate(live, mandate.creds)
    urn = revocable["credentials"][0]["id"]
    client = client_of(sdk, live, mandate)
    body = sdk.models.RevokeCredentialDto(reason="user_initiated")
    revoked = await client.call(
        client.api.credentials.revoke, urn, revoke_credential_dto=body, returns="RevokeCredentialEntity"
    )
    assert revoked.credential_id == urn
    assert revoked.status == ("REVOKED" if sdk.release == RELEASE_105 else "INACTIVE")
    revoked_at = datetime.fromisoformat(revoked.revoked_at.replace("Z", "+00:00"))
    assert abs(revoked_at - datetime.now(UTC)) < timedelta(minutes=5)
    if sdk.release == RELEASE_105:
        receipt_ok(revoked.receipt)
    record = await read_request(live, mandate.creds, revocable["id"])
    assert record["credentials"][0]["status"] == "REVOKED"
    refused = await raw(live, mandate.creds, "POST", f"/credential/{quote(urn, safe='')}/presentation")
    assert refused.status_code == 400 and "credential_revoked" in refused.text


# --- the audit trail ------------------------------------------------------------------------------


async def _verified_once(live: LiveStack, mandate: Mandate) -> None:
    """A VP and its allowed verification, so the trail has them too."""
    vp = await presentation(live, mandate.creds, mandate.id)
    body = {"presentation": vp, "executionParams": ALLOWED}
    allowed = await raw(live, mandate.creds, "POST", "/credential/verify", body)
    assert allowed.status_code == 200, allowed.text


# (filters, activity types that must be among the answer, every item of the answer of one of these)
ACTIVITY_FILTERS: list[tuple[dict[str, Any], set[str], set[str] | None]] = [
    ({}, {"REQUEST_CREATED", "USER_DECISION_ACCEPTED", "MANDATE_ISSUED", "VP_CREATED", "VP_VERIFIED"}, None),
    ({"entity_type": "request", "entity_id": "<request>"}, {"REQUEST_CREATED"}, None),
    ({"entity_type": "credential", "entity_id": "<credential>"}, {"MANDATE_ISSUED", "VP_VERIFIED"}, None),
    ({"type": ["VP_VERIFIED"]}, {"VP_VERIFIED"}, {"VP_VERIFIED"}),
    (
        {"type": ["MANDATE_ISSUED", "VP_CREATED"]},
        {"MANDATE_ISSUED", "VP_CREATED"},
        {"MANDATE_ISSUED", "VP_CREATED"},
    ),
    ({"date_from": "<yesterday>", "date_to": "<tomorrow>"}, {"REQUEST_CREATED", "MANDATE_ISSUED"}, None),
]


@only(RELEASE_105)
@pytest.mark.parametrize("name", ["subject_did", "actor_did"])
async def test_activity_filters_not_offered_are_refused_by_name(
    sdk: Sdk, live: LiveStack, mandate: Mandate, name: str
) -> None:
    """Filtering the trail by a DID is not offered: refused naming the parameter, never ignored."""
    client = client_of(sdk, live, mandate)
    with pytest.raises(sdk.exceptions.BadRequestException) as info:
        await asyncio.to_thread(client.api.activity.list, **{name: mandate.creds.did})
    camel = {"subject_did": "subjectDid", "actor_did": "actorDid"}[name]
    assert camel in str(info.value.body)


@only(RELEASE_105)
@pytest.mark.parametrize(
    ("filters", "present", "only"), ACTIVITY_FILTERS, ids=[",".join(f[0]) or "all" for f in ACTIVITY_FILTERS]
)
async def test_activity(
    sdk: Sdk,
    live: LiveStack,
    mandate: Mandate,
    filters: dict[str, Any],
    present: set[str],
    only: set[str] | None,
) -> None:
    """1.0.5's ActivityApi: every item typed (its closed list of types), filtered as asked."""
    await _verified_once(live, mandate)
    now = datetime.now(UTC)
    values: dict[str, Any] = {
        "<request>": mandate.request_id,
        "<credential>": mandate.entity_id,
        "<subject>": mandate.subject["id"],
        "<organization>": mandate.creds.did,
        "<yesterday>": now - timedelta(days=1),
        "<tomorrow>": now + timedelta(days=1),
    }
    given = {k: values.get(v, v) if isinstance(v, str) else v for k, v in filters.items()}
    client = client_of(sdk, live, mandate)
    page = await client.call(client.api.activity.list, page_size=100, returns="ActivitiesEntity", **given)
    types = {item.type for item in page.data}
    assert present <= types, (given, types)
    if only is not None:
        assert types <= only, (given, types)
    if given.get("entity_type") == "credential":  # named by its id or URN, never the request
        assert {item.entity_type for item in page.data} == {"credential"}
        assert "REQUEST_CREATED" not in types
    if given.get("entity_type") == "request":  # its own records and its credentials'
        assert {item.entity_id for item in page.data if item.entity_type == "request"} == {given["entity_id"]}
    for item in page.data:
        assert item.id and datetime.fromisoformat(item.created_at.replace("Z", "+00:00"))
    assert page.total_pages >= 1


@only(RELEASE_120)
async def test_credential_audit_events(sdk: Sdk, live: LiveStack, mandate: Mandate) -> None:
    """1.2.0's chain audit of one credential: each event signed and linked to the one before."""
    await _verified_once(live, mandate)
    client = client_of(sdk, live, mandate)
    audit = await client.call(client.api.credentials.audit_events, mandate.id, returns="ChainAuditEntity")
    assert (audit.credential_urn, audit.ok) == (mandate.id, True)
    assert audit.event_count == len(audit.events)
    kinds = [event.event for event in audit.events]
    assert {"ACCEPT", "ISSUE", "VP_CREATED", "VERIFICATION_APPROVED"} <= set(kinds), kinds
    for event in audit.events:
        assert event.urn and event.actor.startswith("did:") and event.issuer.startswith("did:")
        assert event.signature_valid and event.chain_link_valid
        # as 1.2.0 documents it: the decisions and the issuance commit to the credential's bytes
        assert event.content_bound is (event.event in {"ISSUE", "ACCEPT", "REJECT"}), event
