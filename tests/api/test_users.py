"""Users (``POST /user``, ``GET /user``; issue 36) over signed HTTP in each version: each item
answered in its place, the identity kept encrypted and never answered, the organization's
internalId reaching later requests of the contact, bad input refused with nothing stored."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import col, func, select

from core.secretbox import SecretCipher
from core.settings import Settings
from store.db import read_session
from store.tables import AuditRecord, Subject, SubjectProfile
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, error_messages, policy_request

VERSIONS = ("2026-05-20", "2026-09-01", "2026-11-01")
IDENTITY = {
    "fullName": "Ana Maria Silva",
    "birth": "1990-04-01",
    "docId": "X7Q9 ZZ41",
    "countryAlpha3": "PRT",
}


def mailbox() -> str:
    return f"user-{uuid.uuid4().hex[:10]}@example.com"


def subjects_of(engine: Engine, org_id: str) -> int:
    with read_session(engine) as session:
        return int(
            session.exec(
                select(func.count()).select_from(Subject).where(Subject.organization_id == org_id)
            ).one()
        )


def imports_of(engine: Engine, org_id: str) -> list[AuditRecord]:
    with read_session(engine) as session:
        return list(
            session.exec(
                select(AuditRecord).where(
                    AuditRecord.organization_id == org_id, AuditRecord.type == "USERS_IMPORTED"
                )
            )
        )


@pytest.mark.parametrize("version", VERSIONS)
async def test_import_then_read_by_contact_id_and_internal_id(
    api: SignedClient, engine: Engine, cipher: SecretCipher, version: str
) -> None:
    contact, ref = mailbox(), f"crm-{uuid.uuid4().hex[:8]}"
    headers = {"API-Version": version}
    body = [
        {
            "contact": contact.upper(),
            "internalId": ref,
            "extraContacts": ["+351 912 345 678".replace(" ", ""), "Other@Example.com"],
            "identity": IDENTITY,
        }
    ]
    made = await api.post("/user", body, headers=headers)
    assert made.status_code == 201, made.text
    [item] = made.json()
    assert item["message"] == "Subject created" and item["user"]["contact"] == contact
    assert item["status"] == (200 if version == "2026-05-20" else 201)
    assert item["user"]["internalId"] == ref and item["user"]["id"].startswith(
        "did:web:mandatum.test:subjects:"
    )
    did = item["user"]["id"]
    for params in ({"contact": contact}, {"id": did}, {"internalId": ref}):
        got = await api.get("/user", params=params, headers=headers)
        assert got.status_code == 200, got.text
        user = got.json()
        assert user["contacts"] == [{"id": did, "contact": contact}]
        assert user["internalId"] == ref
        assert user["organization"] == {"contacts": ["+351912345678", "other@example.com"]}
        assert user["identityStatus"] == ("KYC" if version != "2026-11-01" else "UNVERIFIED")
        assert '"identity"' not in got.text and "X7Q9" not in got.text and "Silva" not in got.text
    # the identity is kept encrypted: no value of it in the row, the cipher opens it
    with read_session(engine) as session:
        subject = session.exec(select(Subject).where(Subject.contact == contact)).one()
        profile = session.get(SubjectProfile, subject.id)
    assert profile is not None and profile.identity_ciphertext is not None
    assert b"Silva" not in profile.identity_ciphertext and b"X7Q9" not in profile.identity_ciphertext
    assert "Ana Maria Silva" in cipher.decrypt(profile.identity_ciphertext)
    [record] = imports_of(engine, api.creds.organization_id)
    assert record.data["created"] == [subject.id] and record.data["withIdentity"] == [subject.id]
    assert "Silva" not in str(record.data) and contact not in str(record.data)

    again = await api.post("/user", body, headers=headers)
    assert again.json()[0]["message"] == "Subject unchanged"
    changed = await api.post("/user", [{**body[0], "extraContacts": []}], headers=headers)
    assert changed.json()[0]["message"] == "Subject updated"
    assert (await api.get("/user", params={"contact": contact})).json()["organization"]["contacts"] == []


async def test_each_item_is_answered_in_its_place(api: SignedClient, engine: Engine) -> None:
    a, b, c, taken = mailbox(), mailbox(), mailbox(), mailbox()
    first = await api.post("/user", [{"contact": taken, "internalId": "ref-taken"}])
    assert first.json()[0]["status"] == 201
    future = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    body: list[dict[str, Any]] = [
        {"contact": a, "internalId": "ref-a"},
        {"contact": "not a contact"},
        {"contact": b, "identity": {**IDENTITY, "birth": future}},
        {"contact": c, "identity": {**IDENTITY, "countryAlpha3": "XYZ"}},
        {"contact": a.upper()},
        {"contact": c, "internalId": "ref-a"},
        {"contact": b, "internalId": "ref-taken"},
        {"contact": mailbox(), "unknown": 1},
    ]
    made = await api.post("/user", body)
    assert made.status_code == 201, made.text
    got = made.json()
    assert [i["status"] for i in got] == [201, 400, 400, 400, 409, 410, 410, 400]
    assert "not an e-mail address" in got[1]["message"] and got[1]["user"]["contact"] == "not a contact"
    assert "identity.birth: must be a date in the past" in got[2]["message"]
    assert "identity.countryAlpha3" in got[3]["message"] and "alpha-3" in got[3]["message"]
    assert "more than once" in got[4]["message"]
    assert "ref-taken" in got[6]["message"] and got[6]["user"] == {
        "id": None,
        "contact": b,
        "internalId": "ref-taken",
    }
    assert "unknown is not a known field" in got[7]["message"]
    # only a and the first import exist; b and c were stored by nothing
    assert subjects_of(engine, api.creds.organization_id) == 2
    assert (await api.get("/user", params={"contact": b})).status_code == 404


async def test_an_internal_id_given_twice_in_one_body_is_410(api: SignedClient) -> None:
    a, b = mailbox(), mailbox()
    got = (
        await api.post("/user", [{"contact": a, "internalId": "same"}, {"contact": b, "internalId": "same"}])
    ).json()
    assert [i["status"] for i in got] == [201, 410]


@pytest.mark.parametrize(
    "body",
    [
        [],
        [{"contact": f"u{i}@example.com"} for i in range(101)],
        {"contact": "a@example.com"},
        ["a@example.com"],
    ],
    ids=["none", "101", "object", "strings"],
)
async def test_a_body_that_is_not_1_to_100_users_stores_nothing(
    api: SignedClient, engine: Engine, body: Any
) -> None:
    refused = await api.post("/user", body)
    assert_error_shape(refused, 400)
    assert subjects_of(engine, api.creds.organization_id) == 0
    assert imports_of(engine, api.creds.organization_id) == []


@pytest.mark.parametrize(
    "params",
    [{}, {"contact": "a@example.com", "internalId": "x"}, {"id": "did:web:x", "contact": "a@example.com"}],
    ids=["none", "two", "id-and-contact"],
)
async def test_get_needs_exactly_one_parameter(api: SignedClient, params: dict[str, str]) -> None:
    lines = error_messages(await api.get("/user", params=params))
    assert any("exactly one of contact, id and internalId" in line for line in lines)


async def test_another_organizations_user_is_not_found(
    api: SignedClient, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    contact = mailbox()
    made = (await api.post("/user", [{"contact": contact, "internalId": "mine"}])).json()[0]
    other = SignedClient(api.http, new_org(engine, cipher, settings))
    for params in ({"contact": contact}, {"id": made["user"]["id"]}, {"internalId": "mine"}):
        assert_error_shape(await other.get("/user", params=params), 404)
    assert_error_shape(await api.get("/user", params={"id": "did:web:mandatum.test:subjects:nobody"}), 404)
    assert_error_shape(await api.get("/user", params={"contact": "bad contact"}), 400)


async def test_a_subject_of_a_request_is_a_user_and_requests_show_its_internal_id(api: SignedClient) -> None:
    contact = mailbox()
    created = await api.post("/request", policy_request(contacts=[contact]))
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    before = (await api.get("/user", params={"contact": contact})).json()
    assert before["internalId"] is None and before["id"] == created.json()["data"]["subjects"][0]["id"]
    assert before["identityStatus"] == "UNVERIFIED"
    made = (await api.post("/user", [{"contact": contact, "internalId": "crm-7"}])).json()[0]
    assert made["message"] == "Subject updated" and made["user"]["id"] == before["id"]
    # the request named the contact without an internalId: it shows the user's
    record = (await api.get(f"/request/{request_id}")).json()
    assert record["subjects"][0]["internalId"] == "crm-7"
    listed = (await api.get("/request", params={"subjectInternalId": "crm-7"})).json()
    assert [r["id"] for r in listed["data"]] == [request_id]
    # a request's own internalId for the subject stays its own
    own = await api.post("/request", policy_request(contacts=[{"contact": contact, "internalId": "req-ref"}]))
    assert own.json()["data"]["subjects"][0]["internalId"] == "req-ref"


async def test_idempotency_key_replays_and_refuses_another_body(api: SignedClient, engine: Engine) -> None:
    contact = mailbox()
    key = {"Idempotency-Key": f"k-{uuid.uuid4().hex}"}
    first = await api.post("/user", [{"contact": contact}], headers=key)
    second = await api.post("/user", [{"contact": contact}], headers=key)
    assert first.json() == second.json() and second.json()[0]["message"] == "Subject created"
    assert len(imports_of(engine, api.creds.organization_id)) == 1
    assert_error_shape(await api.post("/user", [{"contact": mailbox()}], headers=key), 409)


async def test_imports_are_rate_limited(
    http: Any, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    api = SignedClient(http, new_org(engine, cipher, settings, rate=2))
    for _ in range(2):
        assert (await api.post("/user", [{"contact": mailbox()}])).status_code == 201
    limited = await api.post("/user", [{"contact": mailbox()}])
    assert_error_shape(limited, 429)
    assert int(limited.headers["Retry-After"]) > 0
    assert subjects_of(engine, api.creds.organization_id) == 2


async def test_a_request_docid_is_bounded_and_kept_as_a_keyed_hash(api: SignedClient, engine: Engine) -> None:
    contact = mailbox()
    refused = await api.post("/request", policy_request(contacts=[{"contact": contact, "docId": "x" * 65}]))
    assert_error_shape(refused, 400)
    assert_error_shape(
        await api.post("/request", policy_request(contacts=[{"contact": contact, "docId": "a\nb"}])), 400
    )
    assert_error_shape(
        await api.post("/request", policy_request(contacts=[{"contact": contact, "docId": " - "}])), 400
    )
    made = await api.post("/request", policy_request(contacts=[{"contact": contact, "docId": "AB 123-456"}]))
    assert made.status_code == 201, made.text
    from store.tables import RequestSubject

    with read_session(engine) as session:
        link = session.exec(
            select(RequestSubject).where(col(RequestSubject.request_id) == made.json()["data"]["id"])
        ).one()
    assert link.doc_id_hash is not None and len(link.doc_id_hash) == 64 and "123" not in link.doc_id_hash
