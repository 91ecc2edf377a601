"""GET /request: order, paging, every filter alone and combined, search, dates, shape, isolation.

Written from SPEC.md ("GET /request", "Limits") and CONTRACT sections 2 and 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, update
from sqlmodel import col

from core.secretbox import SecretCipher
from core.settings import Settings
from store.db import write_session
from store.tables import CredentialRequest
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, policy_request

LIST_FIELDS = {
    "id",
    "securityLevel",
    "createdAt",
    "name",
    "language",
    "redirectUrl",
    "internalId",
    "subjects",
    "credentials",
}
LIST_EXTRAS = {"canceledAt", "status"}  # CONTRACT 2: extra fields may be added


# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("no_server_errors"), pytest.mark.both_databases]


async def create(api: SignedClient, **overrides: Any) -> dict[str, Any]:
    resp = await api.post("/request", policy_request(**overrides))
    assert resp.status_code == 201, resp.text
    return dict(resp.json()["data"])


def credential(name: str = "Rent payments", **extra: Any) -> dict[str, Any]:
    return {**policy_request()["credentials"][0], "name": name, **extra}


async def listing(api: SignedClient, **params: Any) -> dict[str, Any]:
    resp = await api.get("/request", params=params)
    assert resp.status_code == 200, resp.text
    body = dict(resp.json())
    assert set(body) == {"data", "totalPages"}
    return body


async def ids(api: SignedClient, **params: Any) -> list[str]:
    return [item["id"] for item in (await listing(api, **params))["data"]]


def bad_query(resp: httpx.Response, fragment: str) -> None:
    body = assert_error_shape(resp, 400)
    lines = [body["message"]] if isinstance(body["message"], str) else body["message"]
    assert any(fragment in line for line in lines), lines


def move(engine: Engine, request_id: str, when: datetime) -> None:
    """Set a request's creation time directly in the database."""
    with write_session(engine) as session:
        session.execute(
            update(CredentialRequest).where(col(CredentialRequest.id) == request_id).values(created_at=when)
        )


# --- order and paging ---------------------------------------------------------------------------


async def test_empty_list(api: SignedClient) -> None:
    assert await listing(api) == {"data": [], "totalPages": 0}


async def test_newest_first_by_creation_time(api: SignedClient, engine: Engine) -> None:
    a, b, c = [(await create(api, name=n))["id"] for n in ("a", "b", "c")]
    assert await ids(api) == [c, b, a]
    move(engine, a, datetime.now(UTC) + timedelta(seconds=5))  # order follows createdAt, not id
    assert await ids(api) == [a, c, b]


async def test_paging(api: SignedClient) -> None:
    created = [(await create(api, name=f"r{i}"))["id"] for i in range(12)]
    newest_first = created[::-1]
    default = await listing(api)
    assert [i["id"] for i in default["data"]] == newest_first[:10]
    assert default["totalPages"] == 2
    assert await ids(api, pageIndex=1) == newest_first[10:]
    pages = [await listing(api, pageSize=5, pageIndex=i) for i in range(4)]
    assert [p["totalPages"] for p in pages] == [3, 3, 3, 3]
    seen = [item["id"] for p in pages for item in p["data"]]
    assert [len(p["data"]) for p in pages] == [5, 5, 2, 0]
    assert seen == newest_first  # complete, in order, no overlap
    assert (await listing(api, pageSize=100))["totalPages"] == 1
    assert (await listing(api, pageSize=6))["totalPages"] == math.ceil(12 / 6)
    assert (await listing(api, pageSize=7))["totalPages"] == math.ceil(12 / 7)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"pageSize": 4}, "pageSize"),
        ({"pageSize": 101}, "pageSize"),
        ({"pageSize": 0}, "pageSize"),
        ({"pageSize": "ten"}, "pageSize"),
        ({"pageIndex": -1}, "pageIndex"),
        ({"pageIndex": "first"}, "pageIndex"),
    ],
)
async def test_bad_paging(api: SignedClient, params: dict[str, Any], fragment: str) -> None:
    bad_query(await api.get("/request", params=params), fragment)


async def test_page_size_limits_are_inclusive(api: SignedClient) -> None:
    await create(api)
    assert len((await listing(api, pageSize=5))["data"]) == 1
    assert len((await listing(api, pageSize=100))["data"]) == 1


# --- filters ------------------------------------------------------------------------------------


@dataclass
class Three:
    r1: dict[str, Any]
    r2: dict[str, Any]
    r3: dict[str, Any]


async def three(api: SignedClient) -> Three:
    r1 = await create(
        api,
        contacts=[{"contact": "ana@example.com", "internalId": "sub-a"}],
        securityLevel="CONTACT",
        internalId="req-1",
        name="Pay the rent",
        credentials=[credential(internalId="cred-1")],
    )
    r2 = await create(
        api,
        contacts=[{"contact": "+351912345678", "internalId": "sub-b"}, "bob@example.com"],
        securityLevel="PLATFORM_KYC",
        internalId="req-2",
        name="Buy groceries",
        credentials=[credential("Groceries", internalId="cred-2")],
    )
    r3 = await create(
        api,
        contacts=["Bob@Example.com"],
        securityLevel="ORGANIZATION_KYC",
        name=None,
        credentials=[credential("Car", internalId="cred-1")],
    )
    return Three(r1, r2, r3)


async def test_each_filter_alone(api: SignedClient) -> None:
    t = await three(api)
    r1, r2, r3 = t.r1["id"], t.r2["id"], t.r3["id"]
    assert await ids(api) == [r3, r2, r1]
    # contact, normalized like on creation
    assert await ids(api, contact="ana@example.com") == [r1]
    assert await ids(api, contact="ANA@Example.COM") == [r1]
    assert await ids(api, contact="bob@example.com") == [r3, r2]
    assert await ids(api, contact="+351912345678") == [r2]
    assert await ids(api, contact="nobody@example.com") == []
    # did: the subject DID as the full record shows it
    bob_did = t.r3["subjects"][0]["id"]
    assert t.r2["subjects"][1]["id"] == bob_did
    assert await ids(api, did=bob_did) == [r3, r2]
    assert await ids(api, did=t.r1["subjects"][0]["id"]) == [r1]
    assert await ids(api, did=bob_did.replace("mandatum.test", "elsewhere.example")) == []
    assert await ids(api, did="did:web:mandatum.test:subjects:nobody") == []
    assert await ids(api, did="not-a-did") == []
    assert await ids(api, did="did:web:mandatum.test:subjects:\x00") == []
    assert await ids(api, did=bob_did.upper()) == []
    # the integrator's references
    assert await ids(api, subjectInternalId="sub-b") == [r2]
    assert await ids(api, subjectInternalId="sub-a") == [r1]
    assert await ids(api, subjectInternalId="sub-z") == []
    assert await ids(api, internalId="req-1") == [r1]
    assert await ids(api, internalId="req-2") == [r2]
    assert await ids(api, internalId="req") == []  # exact, not partial
    assert await ids(api, credentialInternalId="cred-1") == [r3, r1]
    assert await ids(api, credentialInternalId="cred-2") == [r2]
    assert await ids(api, credentialInternalId="cred-3") == []
    # security levels, one or several
    assert await ids(api, securityLevel="CONTACT") == [r1]
    assert await ids(api, securityLevel="PLATFORM_REVALIDATION") == []
    assert await ids(api, securityLevel=["CONTACT", "PLATFORM_KYC"]) == [r2, r1]
    listed = await api.get("/request?securityLevel=CONTACT&securityLevel=ORGANIZATION_KYC")
    assert [i["id"] for i in listed.json()["data"]] == [r3, r1]
    # arrays as axios / qs send them
    listed = await api.get("/request?securityLevel[]=CONTACT&securityLevel[]=PLATFORM_KYC")
    assert [i["id"] for i in listed.json()["data"]] == [r2, r1]
    listed = await api.get("/request?securityLevel%5B%5D=ORGANIZATION_KYC")
    assert [i["id"] for i in listed.json()["data"]] == [r3]


async def test_filters_combined(api: SignedClient) -> None:
    t = await three(api)
    r1, r2, r3 = t.r1["id"], t.r2["id"], t.r3["id"]
    assert await ids(api, contact="bob@example.com", securityLevel="PLATFORM_KYC") == [r2]
    assert await ids(api, contact="bob@example.com", credentialInternalId="cred-1") == [r3]
    assert await ids(api, internalId="req-1", securityLevel="PLATFORM_KYC") == []
    assert await ids(
        api,
        did=t.r2["subjects"][0]["id"],
        subjectInternalId="sub-b",
        internalId="req-2",
        credentialInternalId="cred-2",
        securityLevel=["PLATFORM_KYC", "CONTACT"],
        search="grocer",
    ) == [r2]
    assert await ids(api, credentialInternalId="cred-1", search="rent") == [r1]
    assert await ids(api, contact="ana@example.com", subjectInternalId="sub-b") == []
    filtered = await listing(api, credentialInternalId="cred-1", pageSize=5)
    assert filtered["totalPages"] == 1 and len(filtered["data"]) == 2


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"securityLevel": "SUPER"}, "securityLevel"),
        ({"securityLevel": ["CONTACT", "contact"]}, "securityLevel"),
        ({"securityLevel[]": ["CONTACT", "SUPER"]}, "securityLevel"),
        ({"contact": "bob"}, "contact"),
        ({"contact": "+1 415 555 2671"}, "contact"),
        ({"search": "x" * 101}, "search"),
        ({"search": "a\x00"}, "search"),  # PostgreSQL cannot take NUL: a 400, never a 500
        ({"internalId": "a\x00"}, "internalId"),
        ({"subjectInternalId": "a\x00"}, "subjectInternalId"),
        ({"credentialInternalId": "a\x00"}, "credentialInternalId"),
        ({"contact": "ana\x00@example.com"}, "contact"),
        ({"dateFrom": "2025-03-10\x00"}, "dateFrom"),
    ],
)
async def test_bad_filters(api: SignedClient, params: dict[str, Any], fragment: str) -> None:
    bad_query(await api.get("/request", params=params), fragment)


# --- search -------------------------------------------------------------------------------------


async def test_search_is_case_insensitive_partial_and_literal(api: SignedClient) -> None:
    async def named(name: str | None, cred: str = "Item") -> str:
        return str((await create(api, name=name, credentials=[credential(cred)]))["id"])

    pct = await named("Rent 50% off")
    five = await named("Rent 500")
    under = await named("a_b test")
    axb = await named("axb test")
    by_cred = await named("Misc", "Garage Access")
    slash = await named(r"C:\dir")
    unnamed = await named(None, "Boat rental")
    assert await ids(api, search="50%") == [pct]
    assert await ids(api, search="%") == [pct]
    assert await ids(api, search="rENT") == [unnamed, five, pct]  # request and credential names
    assert await ids(api, search="ent 50") == [five, pct]
    assert await ids(api, search="a_b") == [under]
    assert await ids(api, search="_") == [under]
    assert await ids(api, search="test") == [axb, under]
    assert await ids(api, search="GARAGE acc") == [by_cred]
    assert await ids(api, search="boat") == [unnamed]
    assert await ids(api, search="\\") == [slash]
    assert await ids(api, search="\\d") == [slash]
    # a match on both the request name and a credential name lists the request once
    both = await named("Item list")
    assert await ids(api, search="item", pageSize=100) == [both, slash, axb, under, five, pct]
    assert await ids(api, search="nothing like this") == []
    assert await ids(api, search="x" * 100) == []


async def test_search_folds_case_beyond_ascii(api: SignedClient) -> None:
    """Names in Portuguese, Spanish and French (CONTRACT 8 languages) match in any case."""
    agua = (await create(api, name="Conta da Água", credentials=[credential("Été à Paris")]))["id"]
    other = (await create(api, name="Agua fria", credentials=[credential("Item")]))["id"]
    assert await ids(api, search="ÁGUA") == [agua]
    assert await ids(api, search="água") == [agua]
    assert await ids(api, search="agua") == [other]  # accents are not folded, only case
    assert await ids(api, search="ÉTÉ À") == [agua]
    assert await ids(api, search="été") == [agua]


# --- dates --------------------------------------------------------------------------------------


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def test_date_range_covers_whole_utc_days(api: SignedClient, engine: Engine) -> None:
    times = {
        "before": at("2025-03-09T23:59:59.999999"),
        "first": at("2025-03-10T00:00:00"),
        "middle": at("2025-03-11T12:00:00"),
        "last": at("2025-03-12T23:59:59.999"),
        "after": at("2025-03-13T00:00:00"),
    }
    made = {}
    for label, when in times.items():
        made[label] = (await create(api, name=label))["id"]
        move(engine, made[label], when)
    inside = [made["last"], made["middle"], made["first"]]
    assert await ids(api, dateFrom="2025-03-10", dateTo="2025-03-12") == inside
    # times inside the days do not matter: start of dateFrom's day, end of dateTo's day
    assert await ids(api, dateFrom="2025-03-10T15:30:00Z", dateTo="2025-03-12T00:00:01Z") == inside
    assert await ids(api, dateFrom="2025-03-10T23:59:59.999Z", dateTo="2025-03-12T08:00:00.000Z") == inside
    # a single day
    assert await ids(api, dateFrom="2025-03-12", dateTo="2025-03-12") == [made["last"]]
    assert await ids(api, dateFrom="2025-03-13", dateTo="2025-03-13") == [made["after"]]
    assert await ids(api, dateFrom="2025-03-09", dateTo="2025-03-09") == [made["before"]]
    # dateFrom alone: from the start of that day onwards
    assert await ids(api, dateFrom="2025-03-12") == [made["after"], made["last"]]
    # an offset is converted to UTC first: 23:30 at -05:00 is 04:30 UTC of the next day
    assert await ids(api, dateFrom="2025-03-12T23:30:00-05:00") == [made["after"]]
    # createdAt in the list shows the stored times
    listed = (await listing(api, dateFrom="2025-03-12", dateTo="2025-03-12"))["data"]
    assert listed[0]["createdAt"] == "2025-03-12T23:59:59.999Z"
    # combined with another filter and with paging
    assert await ids(api, dateFrom="2025-03-10", dateTo="2025-03-12", search="mid") == [made["middle"]]
    page = await listing(api, dateFrom="2025-03-09", dateTo="2025-03-13", pageSize=5)
    assert page["totalPages"] == 1 and len(page["data"]) == 5


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"dateTo": "2025-03-12"}, "dateFrom"),
        ({"dateFrom": "2025-03-12", "dateTo": "2025-03-11"}, "dateTo"),
        ({"dateFrom": "2025-03-12T00:00:00Z", "dateTo": "2025-03-11T23:59:59Z"}, "dateTo"),
        ({"dateFrom": "yesterday"}, "dateFrom"),
        ({"dateFrom": "2025-02-30"}, "dateFrom"),
        ({"dateFrom": "2025-03-10", "dateTo": "2025-13-01"}, "dateTo"),
        ({"dateFrom": "20250310"}, "dateFrom"),  # not silently read as seconds since 1970
        ({"dateFrom": "1741600000000"}, "dateFrom"),
    ],
)
async def test_bad_dates(api: SignedClient, params: dict[str, Any], fragment: str) -> None:
    bad_query(await api.get("/request", params=params), fragment)


# --- shape and isolation ------------------------------------------------------------------------


async def test_list_item_shape(api: SignedClient) -> None:
    data = await create(
        api,
        contacts=[{"contact": "ana@example.com", "internalId": "sub-a"}, "+351912345678"],
        internalId="req-1",
        language="SPA",
        redirectUrl="https://example.com/done",
        credentials=[
            credential(internalId="cred-1"),
            {
                "type": "DOCUMENT",
                "name": "Lease",
                "data": [{"label": "A", "type": "text", "value": "1", "hidden": False}],
            },
        ],
    )
    [item] = (await listing(api))["data"]
    assert set(item) == LIST_FIELDS | LIST_EXTRAS
    assert {
        k: item[k]
        for k in (
            "id",
            "securityLevel",
            "createdAt",
            "name",
            "language",
            "redirectUrl",
            "internalId",
            "canceledAt",
            "status",
        )
    } == {
        "id": data["id"],
        "securityLevel": "CONTACT",
        "createdAt": data["createdAt"],
        "name": "Pay the rent",
        "language": "SPA",
        "redirectUrl": "https://example.com/done",
        "internalId": "req-1",
        "canceledAt": None,
        "status": "PENDING",
    }
    assert item["subjects"] == [
        {
            "contact": "ana@example.com",
            "did": data["subjects"][0]["id"],
            "internalId": "sub-a",
            "name": None,
            "identityStatus": data["subjects"][0]["identityStatus"],
            "kyc": data["subjects"][0]["kyc"],
        },
        {
            "contact": "+351912345678",
            "did": data["subjects"][1]["id"],
            "internalId": None,
            "name": None,
            "identityStatus": data["subjects"][1]["identityStatus"],
            "kyc": data["subjects"][1]["kyc"],
        },
    ]
    assert [set(c) for c in item["credentials"]] == [
        {"id", "resourceType", "status", "name", "internalId"}
    ] * 2
    assert [(c["id"], c["resourceType"], c["name"], c["internalId"]) for c in item["credentials"]] == [
        (data["credentials"][0]["id"], "POLICY", "Rent payments", "cred-1"),
        (data["credentials"][1]["id"], "DOCUMENT", "Lease", None),
    ]
    assert all(c["status"] in {"DRAFT", "PENDING"} for c in item["credentials"])


async def test_organizations_only_see_their_own(
    api: SignedClient,
    http: httpx.AsyncClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    mine = await create(api, internalId="shared-ref", contacts=["ana@example.com"])
    other = SignedClient(http, new_org(engine, cipher, settings))
    assert await listing(other) == {"data": [], "totalPages": 0}
    assert await ids(other, contact="ana@example.com") == []
    assert await ids(other, internalId="shared-ref") == []
    assert await ids(other, did=mine["subjects"][0]["id"]) == []
    assert_error_shape(await other.get(f"/request/{mine['id']}"), 404)
    # the same contact in the other organization is its own subject, listed only there
    theirs = await create(other, internalId="shared-ref", contacts=["ana@example.com"])
    assert await ids(other, contact="ana@example.com") == [theirs["id"]]
    assert await ids(api, contact="ana@example.com") == [mine["id"]]
    assert await ids(api, did=theirs["subjects"][0]["id"]) == []
    assert await ids(api, internalId="shared-ref") == [mine["id"]]
