"""POST /request and GET /request/{id}: the full record, optional fields, contacts and validation.

Written from SPEC.md ("Credential request (full record)") and CONTRACT sections 2, 3, 4 and 9.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, policy_request

HOST = "mandatum.test"
OBJECT_ID = re.compile(r"^[0-9a-f]{24}$")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
SUBJECT_DID = re.compile(
    rf"^did:web:{re.escape(HOST)}:subjects:"
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)
ACTION_ID = "urn:via:action:0b1e4c1a-7f1d-4a7e-9a55-1f2b3c4d5e6f"
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
SUBJECT_FIELDS = {
    "id",
    "contact",
    "contacts",
    "identityStatus",
    "organization",
    "createdAt",
    "internalId",
    "kyc",
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


pytestmark = pytest.mark.usefixtures("no_server_errors")


def parse_time(value: str) -> datetime:
    assert RFC3339.match(value), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def create(api: SignedClient, **overrides: Any) -> dict[str, Any]:
    resp = await api.post("/request", policy_request(**overrides))
    assert resp.status_code == 201, resp.text
    return dict(resp.json()["data"])


def messages(resp: httpx.Response, status: int = 400) -> list[str]:
    body = assert_error_shape(resp, status)
    msg = body["message"]
    return [msg] if isinstance(msg, str) else list(msg)


def assert_message(resp: httpx.Response, *fragments: str) -> None:
    """A 400 with a message line containing every fragment (it names the field / contact)."""
    lines = messages(resp)
    assert any(all(f in line for f in fragments) for line in lines), (fragments, lines)


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


# --- contacts -----------------------------------------------------------------------------------


async def test_contact_objects_set_the_subject_internal_id(api: SignedClient) -> None:
    data = await create(
        api,
        contacts=[
            {"contact": "ana@example.com", "internalId": "user-1"},
            "+442071838750",
            {"contact": "bob@example.com"},
        ],
    )
    assert [(s["contact"], s["internalId"]) for s in data["subjects"]] == [
        ("ana@example.com", "user-1"),
        ("+442071838750", None),
        ("bob@example.com", None),
    ]


async def test_valid_contacts_are_normalized(api: SignedClient) -> None:
    data = await create(
        api,
        contacts=[
            "Ana.Silva@Example.COM",
            " +14155552671 ",
            "+351912345678",
            "first.last+tag@sub.example.org",
        ],
    )
    assert [s["contact"] for s in data["subjects"]] == [
        "ana.silva@example.com",
        "+14155552671",
        "+351912345678",
        "first.last+tag@sub.example.org",
    ]
    assert [s["contacts"][0]["contact"] for s in data["subjects"]] == [s["contact"] for s in data["subjects"]]
    assert len({s["id"] for s in data["subjects"]}) == 4


@pytest.mark.parametrize(
    "bad", ["bob", "12345", "+1 415 555 2671", "+999", "a@b", "", "ana@", "+14155552671x"]
)
async def test_invalid_contact_is_named(api: SignedClient, bad: str) -> None:
    resp = await api.post("/request", policy_request(contacts=["ana@example.com", bad]))
    assert_message(resp, "contacts.1", repr(bad))


async def test_invalid_contact_object_is_named(api: SignedClient) -> None:
    resp = await api.post(
        "/request", policy_request(contacts=["ana@example.com", {"contact": "bob", "internalId": "u2"}])
    )
    assert_message(resp, "contacts.1", "'bob'")


async def test_every_invalid_contact_is_listed(api: SignedClient) -> None:
    resp = await api.post("/request", policy_request(contacts=["bob", "ana@example.com", "12345"]))
    lines = messages(resp)
    assert any("contacts.0" in m and "'bob'" in m for m in lines), lines
    assert any("contacts.2" in m and "'12345'" in m for m in lines), lines
    assert not any("contacts.1" in m for m in lines), lines


@pytest.mark.parametrize(
    "pair",
    [
        ["Ana@Example.com", "ana@example.com"],
        ["ana@example.com", {"contact": "ANA@example.com", "internalId": "x"}],
        ["+351912345678", "+351912345678"],
    ],
)
async def test_duplicate_contacts_are_refused(api: SignedClient, pair: list[Any]) -> None:
    resp = await api.post("/request", policy_request(contacts=pair))
    assert_message(resp, "contacts.1")
    assert (await api.get("/request")).json()["data"] == []


async def test_contact_count_limits(api: SignedClient) -> None:
    many = [f"user{i}@example.com" for i in range(101)]
    assert_message(await api.post("/request", policy_request(contacts=many)), "contacts")
    assert_message(await api.post("/request", policy_request(contacts=[])), "contacts")
    data = await create(api, contacts=many[:100])
    assert [s["contact"] for s in data["subjects"]] == many[:100]


async def test_credential_count_limits(api: SignedClient) -> None:
    one = policy_request()["credentials"][0]
    creds = [{**one, "name": f"Credential {i}"} for i in range(11)]
    assert_message(await api.post("/request", policy_request(credentials=creds)), "credentials")
    assert_message(await api.post("/request", policy_request(credentials=[])), "credentials")
    data = await create(api, credentials=creds[:10])
    assert [c["name"] for c in data["credentials"]] == [f"Credential {i}" for i in range(10)]
    assert len({c["id"] for c in data["credentials"]}) == 10


async def test_missing_required_top_level_fields(api: SignedClient) -> None:
    for field in ("contacts", "securityLevel", "credentials"):
        body = policy_request()
        del body[field]
        assert_message(await api.post("/request", body), f"{field} is required")


async def test_credential_without_name(api: SignedClient) -> None:
    body = policy_request()
    del body["credentials"][0]["name"]
    resp = await api.post("/request", body)
    assert "credentials.0.name is required" in messages(resp)


def _with_credential(**changes: Any) -> dict[str, Any]:
    body = policy_request()
    cred = body["credentials"][0]
    for key, value in changes.items():
        if value is ...:
            cred.pop(key, None)
        else:
            cred[key] = value
    return body


INVALID_BODIES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("policy without action", _with_credential(action=...), ("credentials.0", "action")),
    ("document without data", _with_credential(type="DOCUMENT", action=...), ("credentials.0", "data")),
    (
        "document with empty data",
        _with_credential(type="DOCUMENT", action=..., data=[]),
        ("credentials.0.data",),
    ),
    (
        "action id not a URN",
        _with_credential(action={"id": "rent-action", "userParams": {}}),
        ("credentials.0.action.id",),
    ),
    (
        "action id not a uuid",
        _with_credential(action={"id": "urn:via:action:123", "userParams": {}}),
        ("credentials.0.action.id",),
    ),
    (
        "action without id",
        _with_credential(action={"userParams": {}}),
        ("credentials.0.action.id is required",),
    ),
    ("unknown type", _with_credential(type="MANDATE"), ("credentials.0.type",)),
    ("empty name", _with_credential(name=""), ("credentials.0.name",)),
    (
        "unknown credential field",
        _with_credential(colour="red"),
        ("credentials.0.colour is not a known field",),
    ),
    ("naive validFrom", _with_credential(validFrom="2030-01-01T10:00:00"), ("credentials.0.validFrom",)),
    ("naive validUntil", _with_credential(validUntil="2030-01-01T10:00:00"), ("credentials.0.validUntil",)),
    (
        "validUntil before validFrom",
        _with_credential(validFrom="2030-02-01T00:00:00Z", validUntil="2030-01-01T00:00:00Z"),
        ("credentials.0", "validUntil"),
    ),
    (
        "validUntil equal to validFrom",
        _with_credential(validFrom="2030-02-01T00:00:00Z", validUntil="2030-02-01T02:00:00+02:00"),
        ("credentials.0", "validUntil"),
    ),
    ("malformed validFrom", _with_credential(validFrom="next tuesday"), ("credentials.0.validFrom",)),
    # a number is no date-time (pydantic would read it as seconds since 1970): found by the fuzzing
    (
        "validFrom as a number",
        _with_credential(validFrom=1893456000),
        ("credentials.0.validFrom", "RFC 3339"),
    ),
    (
        "validUntil as digits",
        _with_credential(validUntil="1893456000"),
        ("credentials.0.validUntil", "RFC 3339"),
    ),
    (
        "hidden as 0",
        _with_credential(
            type="DOCUMENT", action=..., data=[{"label": "A", "type": "text", "value": "v", "hidden": 0}]
        ),
        ("credentials.0.data.0.hidden", "boolean"),
    ),
    ("unknown top-level field", policy_request(colour="red"), ("colour is not a known field",)),
    ("language DEU", policy_request(language="DEU"), ("language",)),
    ("language in lower case", policy_request(language="eng"), ("language",)),
    ("bad securityLevel", policy_request(securityLevel="SUPER"), ("securityLevel",)),
    ("ftp redirectUrl", policy_request(redirectUrl="ftp://example.com/x"), ("redirectUrl",)),
    ("javascript redirectUrl", policy_request(redirectUrl="javascript:alert(1)"), ("redirectUrl",)),
    ("relative redirectUrl", policy_request(redirectUrl="/done"), ("redirectUrl",)),
    (
        "authorizedDIDs not a DID",
        policy_request(authorizedDIDs=["https://agent.example"]),
        ("authorizedDIDs.0",),
    ),
    ("contacts not a list", policy_request(contacts="ana@example.com"), ("contacts",)),
    ("name too long", policy_request(name="x" * 201), ("name",)),
    # PostgreSQL cannot store NUL in text: a 400, never a 500
    ("NUL in name", policy_request(name="a\x00b"), ("name", "NUL")),
    ("NUL in internalId", policy_request(internalId="\x00"), ("internalId", "NUL")),
    (
        "NUL in contact internalId",
        policy_request(contacts=[{"contact": "ana@example.com", "internalId": "u\x00"}]),
        ("contacts.0.internalId", "NUL"),
    ),
    ("NUL in contact", policy_request(contacts=["ana\x00@example.com"]), ("contacts", "NUL")),
    ("NUL in credential name", _with_credential(name="x\x00"), ("credentials.0.name", "NUL")),
    ("NUL in tags", _with_credential(tags=["a\x00"]), ("credentials.0.tags", "NUL")),
    (
        "NUL in userParams",
        _with_credential(action={"id": ACTION_ID, "userParams": {"a": ["\x00"]}}),
        ("credentials.0.action.userParams", "NUL"),
    ),
]


@pytest.mark.parametrize(
    ("body", "fragments"), [(b, f) for _, b, f in INVALID_BODIES], ids=[name for name, _, _ in INVALID_BODIES]
)
async def test_invalid_body_is_400_naming_the_field(
    api: SignedClient, body: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    assert_message(await api.post("/request", body), *fragments)


async def test_nothing_is_created_by_invalid_bodies(api: SignedClient) -> None:
    for _, body, _ in INVALID_BODIES[:5]:
        assert (await api.post("/request", body)).status_code == 400
    assert (await api.get("/request")).json() == {"data": [], "totalPages": 0}


async def test_malformed_json_and_wrong_body_type(api: SignedClient) -> None:
    assert_error_shape(await api.post("/request", raw=b'{"contacts": ['), 400)
    assert_error_shape(await api.post("/request", [policy_request()]), 400)


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
