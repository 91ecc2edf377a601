"""POST /request's subject options (issue 36): ``secondaryContact`` (validated like a contact,
never the subject's own or another subject's, kept only encrypted) and ``signerQuality`` (one
line, at most 100 characters, shown in GET /request, propagated from the subject's latest earlier
request when omitted). A refused body stores nothing.

The journey with a secondary contact: test_journey_secondary.py; the signed quality:
test_signer_quality.py.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import Engine
from sqlmodel import select

from core.secretbox import SecretCipher
from core.settings import Settings
from store.db import read_session
from store.tables import RequestSubject
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_message, error_messages, policy_request
from tests.support.mandates import create_request as create

pytestmark = pytest.mark.usefixtures("no_server_errors")


async def refused(api: SignedClient, contacts: list[Any], *fragments: str) -> None:
    """A 400 naming ``fragments``, and no request stored."""
    before = (await api.get("/request")).json()["data"]
    resp = await api.post("/request", policy_request(contacts=contacts))
    assert_message(resp, *fragments)
    assert (await api.get("/request")).json()["data"] == before


def links(engine: Engine, request_id: str) -> list[RequestSubject]:
    with read_session(engine) as session:
        return list(
            session.exec(
                select(RequestSubject)
                .where(RequestSubject.request_id == request_id)
                .order_by(RequestSubject.position)  # type: ignore[arg-type]
            )
        )


# --- secondaryContact --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["bob", "+1 415 555 2671", "a@b", "", "ana@", "x" * 321])
async def test_a_secondary_contact_that_is_no_contact_is_refused(api: SignedClient, bad: str) -> None:
    await refused(
        api, [{"contact": "ana@example.com", "secondaryContact": bad}], "contacts.0.secondaryContact"
    )


async def test_a_secondary_contact_of_another_type_is_refused(api: SignedClient) -> None:
    for bad in (12345, ["+351912345678"], {"contact": "x@example.com"}, True):
        await refused(api, [{"contact": "ana@example.com", "secondaryContact": bad}], "secondaryContact")


async def test_a_secondary_contact_equal_to_the_contact_is_refused(api: SignedClient) -> None:
    # the same address in another spelling is the same contact
    await refused(
        api,
        [{"contact": "ana@example.com", "secondaryContact": "ANA@Example.com"}],
        "contacts.0.secondaryContact",
        "must differ from the subject's contact",
    )


async def test_a_secondary_contact_of_another_subject_is_refused(api: SignedClient) -> None:
    # another subject's contact, given before or after, and another subject's secondary contact
    await refused(
        api,
        ["bob@example.com", {"contact": "ana@example.com", "secondaryContact": "bob@example.com"}],
        "contacts.1.secondaryContact",
        "is already contacts.0",
    )
    await refused(
        api,
        [{"contact": "ana@example.com", "secondaryContact": "+351912345678"}, "+351912345678"],
        "contacts.1",
        "is already contacts.0.secondaryContact",
    )
    await refused(
        api,
        [
            {"contact": "ana@example.com", "secondaryContact": "+351912345678"},
            {"contact": "bob@example.com", "secondaryContact": "+351912345678"},
        ],
        "contacts.1.secondaryContact",
    )


@pytest.mark.both_databases  # what the store keeps and finds
async def test_a_secondary_contact_is_kept_only_encrypted(
    api: SignedClient, engine: Engine, settings: Settings
) -> None:
    data = await create(
        api,
        contacts=[
            {"contact": "ana@example.com", "secondaryContact": " +351912345678 "},
            {"contact": "bob@example.com", "secondaryContact": "Bob.Phone@Example.org"},
            "eve@example.com",
        ],
    )
    ana, bob, eve = links(engine, data["id"])
    cipher = SecretCipher(settings.master_key_bytes())
    assert ana.secondary_contact_sealed is not None and bob.secondary_contact_sealed is not None
    assert b"912345678" not in ana.secondary_contact_sealed
    assert cipher.decrypt(ana.secondary_contact_sealed) == "+351912345678"  # normalized
    assert ana.secondary_contact_kind == "phone"
    assert cipher.decrypt(bob.secondary_contact_sealed) == "bob.phone@example.org"
    assert bob.secondary_contact_kind == "email"
    assert eve.secondary_contact_sealed is None and eve.secondary_contact_kind is None
    # the integrator's record does not echo it back
    got = (await api.get(f"/request/{data['id']}")).json()
    assert "912345678" not in str(got) and "bob.phone" not in str(got)


# --- signerQuality -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("x" * 101, "at most 100 characters"),
        ("", "at least 1 character"),
        ("CEO\nof Acme", "contacts.0.signerQuality"),
        ("CEO\u202eemca", "contacts.0.signerQuality"),  # a bidi override
        ("CEO\x07", "contacts.0.signerQuality"),
        ("CEO\x00", "NUL"),
        (42, "contacts.0.signerQuality"),
    ],
)
async def test_a_bad_signer_quality_is_refused(api: SignedClient, bad: Any, fragment: str) -> None:
    await refused(api, [{"contact": "ana@example.com", "signerQuality": bad}], fragment)


async def test_the_signer_quality_is_in_the_record(api: SignedClient) -> None:
    quality = "CEO of Acme <b>&</b> \u00e9"
    data = await create(
        api,
        contacts=[{"contact": "ana@example.com", "signerQuality": quality}, "bob@example.com"],
    )
    assert [s["signerQuality"] for s in data["subjects"]] == [quality, None]
    got = (await api.get(f"/request/{data['id']}")).json()
    assert [s["signerQuality"] for s in got["subjects"]] == [quality, None]
    longest = await create(api, contacts=[{"contact": "c@example.com", "signerQuality": "x" * 100}])
    assert longest["subjects"][0]["signerQuality"] == "x" * 100


@pytest.mark.both_databases  # what the store keeps and finds
async def test_an_omitted_signer_quality_is_the_subjects_latest(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine, settings: Settings
) -> None:
    """Omitted: the quality of the subject's latest earlier request (of the organization) that had
    one; given: that one, for this request only."""
    first = await create(api, contacts=[{"contact": "ana@example.com", "signerQuality": "Director"}])
    assert first["subjects"][0]["signerQuality"] == "Director"
    await create(api, contacts=[{"contact": "ana@example.com", "signerQuality": "CEO of Acme"}])
    propagated = await create(api, contacts=["ana@example.com", "new@example.com"])
    assert [s["signerQuality"] for s in propagated["subjects"]] == ["CEO of Acme", None]
    again = await create(api, contacts=[{"contact": "ana@example.com"}])
    assert again["subjects"][0]["signerQuality"] == "CEO of Acme"
    # another organization's subject with the same contact is another person to it
    other_api = SignedClient(http, new_org(engine, SecretCipher(settings.master_key_bytes()), settings))
    elsewhere = await create(other_api, contacts=["ana@example.com"])
    assert elsewhere["subjects"][0]["signerQuality"] is None


async def test_both_options_refused_together_name_each(api: SignedClient) -> None:
    resp = await api.post(
        "/request",
        policy_request(
            contacts=[
                {"contact": "ana@example.com", "secondaryContact": "ana@example.com"},
                {"contact": "bob@example.com", "signerQuality": "y" * 101},
            ]
        ),
    )
    lines = error_messages(resp)
    assert any("contacts.1.signerQuality" in m for m in lines), lines
    assert (await api.get("/request")).json()["data"] == []
