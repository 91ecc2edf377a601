"""POST /request's contacts and validation: contacts normalized or each refused by name, the limits,
and every invalid body a 400 naming the field, creating nothing.

Written from SPEC.md ("Credential request (full record)") and CONTRACT sections 2, 3, 4 and 9.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api_client import (
    ACTION_ID,
    SignedClient,
    assert_error_shape,
    assert_message,
    error_messages,
    policy_request,
)
from tests.support.mandates import create_request as create

pytestmark = pytest.mark.usefixtures("no_server_errors")


# --- contacts ------------------------------------------------------------------------------------


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
    lines = error_messages(resp)
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


# --- validation ----------------------------------------------------------------------------------


async def test_missing_required_top_level_fields(api: SignedClient) -> None:
    for field in ("contacts", "securityLevel"):
        body = policy_request()
        del body[field]
        assert_message(await api.post("/request", body), f"{field} is required")
    body = policy_request()
    del body["credentials"]  # or approvals by id (resourcesIds, groupIds: tests/api/test_approvals.py)
    assert_message(await api.post("/request", body), "give credentials, resourcesIds")


async def test_credential_without_name(api: SignedClient) -> None:
    body = policy_request()
    del body["credentials"][0]["name"]
    resp = await api.post("/request", body)
    assert "credentials.0.name is required" in error_messages(resp)


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
