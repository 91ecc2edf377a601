"""POST /request and GET /request/{id}: the full record, optional fields and subjects (contacts and
validation: test_requests_validation.py).

Written from SPEC.md ("Credential request (full record)") and CONTRACT sections 2, 3, 4 and 9.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from tests.conftest import new_org
from tests.support.api_client import (
    ACTION_ID,
    SignedClient,
    assert_error_shape,
    assert_message,
    policy_request,
)
from tests.support.mandates import create_request as create

HOST = "mandatum.test"
OBJECT_ID = re.compile(r"^[0-9a-f]{24}$")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
SUBJECT_DID = re.compile(
    rf"^did:web:{re.escape(HOST)}:subjects:"
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)
AGENT_KEY_DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"

# SPEC.md full-record fields, plus the extras this service adds (CONTRACT 2: extras are allowed)
REQUEST_FIELDS = {
    "id",
    "securityLevel",
    "createdAt",
    "subjects",
    "credentials",
    "name",
    "language",
    "redirectUrl",
    "internalId",
    "canceledAt",
}
REQUEST_EXTRAS = {"status", "expiresAt", "authorizedDIDs"}
REQUEST_EXTRAS |= {"resentFrom", "resentAs"}  # issue 32: a request sent again names the other
SUBJECT_FIELDS = {
    "id",
    "contact",
    "contacts",
    "identityStatus",
    "organization",
    "createdAt",
    "internalId",
    "kyc",
    "signerQuality",  # issue 36: null unless given (or propagated)
}
CREDENTIAL_FIELDS = {
    "id",
    "resourceType",
    "status",
    "w3cCredential",
    "name",
    "description",
    "internalId",
    "tags",
    "decisions",
}
CREDENTIAL_EXTRAS = {"scope", "action", "data", "validFrom", "validUntil"}
# use limits (issue 31): the request's bound, the uses left (null: unlimited), each limit's use
CREDENTIAL_EXTRAS |= {"maxExecutions", "executionsRemaining", "limits"}
# placements (issue 36): where a DOCUMENT's signers' marks are drawn on its PDF (empty otherwise)
CREDENTIAL_EXTRAS |= {"placements"}


# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("no_server_errors"), pytest.mark.both_databases]


def parse_time(value: str) -> datetime:
    assert RFC3339.match(value), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# --- the full record ----------------------------------------------------------------------------


async def test_created_record_has_spec_fields_and_values(api: SignedClient) -> None:
    before = datetime.now(UTC)
    resp = await api.post("/request", policy_request())
    assert resp.status_code == 201, resp.text
    assert set(resp.json()) == {"data"}
    data = resp.json()["data"]
    assert set(data) == REQUEST_FIELDS | REQUEST_EXTRAS
    assert OBJECT_ID.match(data["id"])
    assert data["securityLevel"] == "CONTACT"
    created = parse_time(data["createdAt"])
    assert before - timedelta(seconds=1) <= created <= datetime.now(UTC) + timedelta(seconds=1)
    # the ObjectId starts with the creation time in seconds (CONTRACT 3)
    assert abs(int(data["id"][:8], 16) - created.timestamp()) <= 2
    assert data["name"] == "Pay the rent"
    assert data["language"] == "ENG"  # CONTRACT 8: the default
    assert data["redirectUrl"] is None and data["internalId"] is None
    assert data["canceledAt"] is None
    assert data["status"] == "PENDING"
    assert parse_time(data["expiresAt"]) - created == timedelta(days=30)

    [subject] = data["subjects"]
    assert set(subject) == SUBJECT_FIELDS
    assert SUBJECT_DID.match(subject["id"]), subject["id"]
    assert subject["contact"] == "ana@example.com"
    assert [set(c) for c in subject["contacts"]] == [{"id", "contact"}]
    assert subject["contacts"][0]["contact"] == "ana@example.com"
    assert isinstance(subject["contacts"][0]["id"], str) and subject["contacts"][0]["id"]
    assert isinstance(subject["identityStatus"], str) and subject["identityStatus"]
    assert subject["organization"] == {"contacts": ["ana@example.com"]}
    assert before - timedelta(seconds=1) <= parse_time(subject["createdAt"])
    assert subject["internalId"] is None
    assert isinstance(subject["kyc"], str) and subject["kyc"]

    [cred] = data["credentials"]
    assert set(cred) == CREDENTIAL_FIELDS | CREDENTIAL_EXTRAS
    assert OBJECT_ID.match(cred["id"]) and cred["id"] != data["id"]
    assert cred["resourceType"] == "POLICY"
    assert cred["status"] == "DRAFT"
    assert cred["w3cCredential"] is None  # nothing is issued before a decision
    assert cred["name"] == "Rent payments"
    assert cred["description"] is None and cred["internalId"] is None
    assert cred["tags"] == [] and cred["decisions"] == []
    assert cred["scope"] == "payments"
    # pinned to the newest published version; the declared default fills the omitted payees
    assert set(cred["action"]) == {"id", "version", "digestSRI", "userParams"}
    assert cred["action"]["id"] == ACTION_ID
    assert cred["action"]["version"].startswith("urn:via:action-version:")
    assert cred["action"]["digestSRI"].startswith("sha256-")
    assert cred["action"]["userParams"] == {"maxAmount": 1200, "payees": []}
    assert cred["data"] is None and cred["validFrom"] is None and cred["validUntil"] is None


async def test_get_returns_the_same_record_as_post(api: SignedClient) -> None:
    posted = await create(
        api,
        contacts=["ana@example.com", {"contact": "+351912345678", "internalId": "sub-2"}],
        internalId="ext-9",
        redirectUrl="https://example.com/done",
    )
    got = await api.get(f"/request/{posted['id']}")
    assert got.status_code == 200, got.text
    assert "data" not in got.json() and got.json()["id"] == posted["id"]  # the record itself (SPEC.md)
    fetched = got.json()
    # the workflow may already have sent the OTP (DRAFT -> PENDING, CONTRACT 9); all else is equal
    for cred in fetched["credentials"]:
        assert cred.pop("status") in {"DRAFT", "PENDING"}
    for cred in posted["credentials"]:
        assert cred.pop("status") == "DRAFT"
    assert fetched == posted


async def test_get_unknown_and_malformed_ids(api: SignedClient) -> None:
    assert_error_shape(await api.get("/request/0123456789abcdef01234567"), 404)
    assert_message(await api.get("/request/not-an-id"), "requestId")
    assert_message(await api.get("/request/0123456789abcdef0123456"), "requestId")  # 23 chars
    assert_message(await api.get("/request/0123456789ABCDEF01234567"), "requestId")  # CONTRACT 3


# --- optional fields ----------------------------------------------------------------------------


async def test_optional_fields_round_trip(api: SignedClient) -> None:
    body = policy_request(
        name="Quarterly rent",
        language="PRT",
        redirectUrl="https://example.com/back?x=1",
        internalId="order-77",
        securityLevel="PLATFORM_KYC",
        authorizedDIDs=["did:web:agent.example.com", AGENT_KEY_DID],
        credentials=[
            {
                "type": "POLICY",
                "name": "Rent",
                "scope": "payments",
                "description": "Monthly rent",
                "internalId": "cred-1",
                "tags": ["rent", "home"],
                "validFrom": "2030-01-01T10:00:00+02:00",
                "validUntil": "2030-12-31T23:59:59.5Z",
                "action": {"id": ACTION_ID, "userParams": {"maxAmount": 900, "payees": ["Bob"]}},
            },
            {
                "type": "DOCUMENT",
                "name": "Lease",
                "internalId": "cred-2",
                "data": [
                    {"label": "Address", "type": "text", "value": "Rua 1", "hidden": False},
                    {"label": "Tax id", "type": "text", "value": "123", "hidden": True},
                ],
            },
        ],
    )
    resp = await api.post("/request", body)
    assert resp.status_code == 201, resp.text
    data = resp.json()["data"]
    assert data["name"] == "Quarterly rent"
    assert data["language"] == "PRT"
    assert data["redirectUrl"] == "https://example.com/back?x=1"
    assert data["internalId"] == "order-77"
    assert data["securityLevel"] == "PLATFORM_KYC"
    assert data["authorizedDIDs"] == [api.creds.did, "did:web:agent.example.com", AGENT_KEY_DID]
    policy, document = data["credentials"]
    assert (policy["description"], policy["internalId"], policy["tags"]) == (
        "Monthly rent",
        "cred-1",
        ["rent", "home"],
    )
    assert policy["validFrom"] == "2030-01-01T08:00:00.000Z"
    assert policy["validUntil"] == "2030-12-31T23:59:59.500Z"
    assert policy["action"]["id"] == ACTION_ID
    assert policy["action"]["userParams"] == {"maxAmount": 900, "payees": ["Bob"]}
    assert document["resourceType"] == "DOCUMENT" and document["status"] == "DRAFT"
    assert document["internalId"] == "cred-2" and document["action"] is None
    assert document["data"] == [
        {"label": "Address", "type": "text", "value": "Rua 1", "hidden": False, "fields": []},
        {"label": "Tax id", "type": "text", "value": "123", "hidden": True, "fields": []},
    ]
    assert document["id"] != policy["id"]
    fetched = (await api.get(f"/request/{data['id']}")).json()
    assert fetched["authorizedDIDs"] == data["authorizedDIDs"]
    assert fetched["credentials"][0]["validFrom"] == "2030-01-01T08:00:00.000Z"
    assert fetched["credentials"][1]["data"] == document["data"]


async def test_organization_did_comes_first_once(api: SignedClient) -> None:
    data = await create(api)
    assert data["authorizedDIDs"] == [api.creds.did]
    assert api.creds.did == f"did:web:{HOST}:orgs:{api.creds.organization_id}"
    # naming the organization itself, or an agent twice, does not repeat it
    again = await create(api, authorizedDIDs=[api.creds.did, "did:web:a.example", "did:web:a.example"])
    assert again["authorizedDIDs"] == [api.creds.did, "did:web:a.example"]


async def test_null_optional_fields_mean_their_defaults(api: SignedClient) -> None:
    """Typed SDKs send unset optional fields as null; that is not an error."""
    cred = {
        **policy_request()["credentials"][0],
        "description": None,
        "internalId": None,
        "tags": None,
        "validFrom": None,
        "validUntil": None,
        "scope": None,
    }
    data = await create(
        api,
        name=None,
        language=None,
        redirectUrl=None,
        internalId=None,
        authorizedDIDs=None,
        credentials=[cred],
        contacts=[{"contact": "ana@example.com", "internalId": None}],
    )
    assert (data["name"], data["language"], data["redirectUrl"], data["internalId"]) == (
        None,
        "ENG",
        None,
        None,
    )
    assert data["authorizedDIDs"] == [api.creds.did]
    assert data["credentials"][0]["tags"] == [] and data["credentials"][0]["scope"] is None
    assert data["subjects"][0]["internalId"] is None


@pytest.mark.parametrize("language", ["ENG", "PRT", "SPA", "FRA"])
async def test_every_language_is_accepted(api: SignedClient, language: str) -> None:
    assert (await create(api, language=language))["language"] == language


@pytest.mark.parametrize("level", ["CONTACT", "ORGANIZATION_KYC", "PLATFORM_KYC", "PLATFORM_REVALIDATION"])
async def test_every_security_level_is_accepted(api: SignedClient, level: str) -> None:
    assert (await create(api, securityLevel=level))["securityLevel"] == level


# --- subjects -----------------------------------------------------------------------------------


async def test_same_contact_is_the_same_subject_within_an_organization(
    api: SignedClient,
    http: httpx.AsyncClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    first = await create(api, contacts=["ana@example.com", "+351912345678"])
    second = await create(api, contacts=[{"contact": "ANA@example.com", "internalId": "u-9"}])
    ana = first["subjects"][0]
    assert second["subjects"][0]["id"] == ana["id"]
    assert second["subjects"][0]["createdAt"] == ana["createdAt"]
    assert second["subjects"][0]["internalId"] == "u-9"  # per request, not per subject
    # and the first request keeps its own (absent) internal id
    refetched = (await api.get(f"/request/{first['id']}")).json()
    assert refetched["subjects"][0]["internalId"] is None

    other = SignedClient(http, new_org(engine, cipher, settings))
    theirs = await create(other, contacts=["ana@example.com"])
    assert SUBJECT_DID.match(theirs["subjects"][0]["id"])
    assert theirs["subjects"][0]["id"] != ana["id"]


async def test_subject_dids_are_unique_per_contact(api: SignedClient) -> None:
    data = await create(api, contacts=[f"p{i}@example.com" for i in range(5)])
    dids = [s["id"] for s in data["subjects"]]
    assert len(set(dids)) == 5
    assert all(uuid.UUID(d.rsplit(":", 1)[1]).version == 4 for d in dids)
