"""Credential requests through each SDK release: create (1.0.5 sends ``contacts``, 1.2.0
``users: [{contact}]``), list with every filter the release offers, detail and cancel. Each answer
must be the release's typed model with the values the test knows."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio

from cli.devstack import EXAMPLE_ACTION_ID
from tests.support.api_client import Credentials
from tests.support.live_stack import LiveStack
from tests.support.sdk import (
    RELEASE_105,
    Sdk,
    SdkClient,
    create_request,
    message_to,
    new_contact,
    new_org,
    read_request,
)

OBJECT_ID_RE = re.compile(r"^[0-9a-f]{24}$")


def request_body(sdk: Sdk, contact: str, **fields: Any) -> Any:
    """The release's GenerateRequestDto for one subject and the example action, as its integrator
    builds it (1.0.5: ``contacts``; 1.2.0: ``users``)."""
    m = sdk.models
    credential = m.CredentialDto(
        type="POLICY",
        name="Rent payments",
        scope="payments",
        action=m.ActionDto(id=EXAMPLE_ACTION_ID, userParams={"maxAmount": 1200}),
    )
    if sdk.release == RELEASE_105:
        subjects: dict[str, Any] = {"contacts": [contact]}
    else:
        subjects = {"users": [m.GenerateRequestUserDto(contact=contact)]}
    return m.GenerateRequestDto(credentials=[credential], **subjects, **fields)


def client_of(sdk: Sdk, live: LiveStack, creds: Credentials) -> SdkClient:
    return sdk.client(live.url, creds)


async def test_create_a_request(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    client = client_of(sdk, live, creds)
    contact = new_contact()
    body = request_body(sdk, contact, name="Pay the rent", securityLevel="CONTACT", internalId="order-1")
    created = await client.call(client.api.requests.create, body, returns="GenerateRequestEntity")

    assert OBJECT_ID_RE.match(created.id), created
    assert [s.contact for s in created.subjects] == [contact]
    assert [c.name for c in created.credentials] == ["Rent payments"]
    # what the service made of it, read in the version the set-up is written against
    record = await read_request(live, creds, created.id)
    assert (record["name"], record["internalId"], record["securityLevel"]) == (
        "Pay the rent",
        "order-1",
        "CONTACT",
    )
    assert [s["contact"] for s in record["subjects"]] == [contact]
    assert created.subjects[0].id == record["subjects"][0]["id"]  # the subject's DID
    [credential] = record["credentials"]
    assert created.credentials[0].id == credential["id"]
    assert credential["action"]["id"] == EXAMPLE_ACTION_ID
    assert credential["action"]["userParams"]["maxAmount"] == 1200
    await message_to(live, contact)  # the subject was sent a code


async def test_a_refused_request_is_the_releases_typed_error(sdk: Sdk, live: LiveStack) -> None:
    """A validation error's sentences reach the release as one string in its error model (the
    newest version answers them as a list), each sentence still there."""
    creds = new_org(live, sdk.release)
    client = client_of(sdk, live, creds)
    body = request_body(sdk, new_contact(), securityLevel="CONTACT")
    body.credentials[0].name = ""
    body.credentials[0].scope = "s" * 501
    refused = await client.refusal(
        client.api.requests.create, body, status=400, returns="RequestsCreate400Response"
    )
    assert isinstance(refused.message, str), refused
    sentences = refused.message.split("; ")
    assert [s.split(":")[0] for s in sentences] == ["credentials.0.name", "credentials.0.scope"], sentences


async def test_create_with_the_platform_identity_level(sdk: Sdk, live: LiveStack) -> None:
    """Both releases name the platform's identity check HUMANOS_KYC (the service: PLATFORM_KYC)."""
    creds = new_org(live, sdk.release)
    client = client_of(sdk, live, creds)
    body = request_body(sdk, new_contact(), securityLevel="HUMANOS_KYC")
    created = await client.call(client.api.requests.create, body, returns="GenerateRequestEntity")
    assert (await read_request(live, creds, created.id))["securityLevel"] == "PLATFORM_KYC"
    detail = await client.call(client.api.requests.detail, created.id, returns="RequestDetailEntity")
    assert detail.security_level == "HUMANOS_KYC"


async def test_create_is_idempotent_with_a_key(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    client = client_of(sdk, live, creds)
    body = request_body(sdk, new_contact(), securityLevel="CONTACT")
    key = f"idem-{sdk.release.version}-{creds.organization_id}"
    first = await client.call(
        client.api.requests.create, body, idempotency_key=key, returns="GenerateRequestEntity"
    )
    again = await client.call(
        client.api.requests.create, body, idempotency_key=key, returns="GenerateRequestEntity"
    )
    assert again.id == first.id


async def test_request_detail(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    client = client_of(sdk, live, creds)
    contact = new_contact()
    request = await create_request(
        live, creds, contacts=[{"contact": contact, "internalId": "subject-7"}], internalId="order-7"
    )
    detail = await client.call(client.api.requests.detail, request["id"], returns="RequestDetailEntity")

    assert (detail.id, detail.name, detail.internal_id) == (request["id"], "Pay the rent", "order-7")
    assert detail.security_level == "CONTACT"
    assert detail.created_at.tzinfo is not None
    assert abs(detail.created_at - datetime.now(UTC)) < timedelta(minutes=5)
    assert detail.canceled_at is None
    [subject] = detail.subjects
    assert subject.contact == contact and subject.internal_id == "subject-7"
    assert [c.contact for c in subject.contacts] == [contact]
    assert subject.identity_status in ("NONE", "KYC", "HUMANOS")
    [credential] = detail.credentials
    assert credential.id == request["credentials"][0]["id"]
    assert credential.name == "Rent payments" and credential.status == "DRAFT"
    assert isinstance(credential.w3c_credential, dict)


async def test_cancel_a_request(sdk: Sdk, live: LiveStack) -> None:
    creds = new_org(live, sdk.release)
    client = client_of(sdk, live, creds)
    request = await create_request(live, creds)
    canceled = await client.call(client.api.requests.cancel, request["id"], returns="SuccessEntity")
    assert canceled.success is True
    record = await read_request(live, creds, request["id"])
    assert record["canceledAt"] is not None and record["status"] == "CANCELED"
    detail = await client.call(client.api.requests.detail, request["id"], returns="RequestDetailEntity")
    assert detail.canceled_at is not None


# --- the list and its filters ---------------------------------------------------------------------


class Listed:
    """Three requests of one organization: A (CONTACT), B (ORGANIZATION_KYC), C (PLATFORM_KYC)."""

    def __init__(self, creds: Credentials, requests: dict[str, dict[str, Any]]) -> None:
        self.creds = creds
        self.requests = requests

    def ids(self, *names: str) -> set[str]:
        return {self.requests[n]["id"] for n in names}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def listed(sdk: Sdk, live: LiveStack) -> Listed:
    creds = new_org(live, sdk.release)
    made = {
        "A": await create_request(
            live,
            creds,
            contacts=[{"contact": new_contact("list-a"), "internalId": "subject-a"}],
            name="Rent of flat A",
            internalId="order-a",
        ),
        "B": await create_request(
            live, creds, contacts=[new_contact("list-b")], name="Lease B", securityLevel="ORGANIZATION_KYC"
        ),
        "C": await create_request(
            live, creds, contacts=[new_contact("list-c")], name="Deposit C", securityLevel="PLATFORM_KYC"
        ),
    }
    return Listed(creds, made)


async def test_list_requests(sdk: Sdk, live: LiveStack, listed: Listed) -> None:
    client = client_of(sdk, live, listed.creds)
    page = await client.call(client.api.requests.list, page_index=0, page_size=10, returns="RequestsEntity")
    assert {r.id for r in page.data} == listed.ids("A", "B", "C")
    assert page.total_pages == 1
    [a] = [r for r in page.data if r.id == listed.requests["A"]["id"]]
    assert (a.name, a.internal_id, a.security_level) == ("Rent of flat A", "order-a", "CONTACT")
    assert [s.contact for s in a.subjects] == [listed.requests["A"]["subjects"][0]["contact"]]
    assert [(c.id, c.name, c.status) for c in a.credentials] == [
        (listed.requests["A"]["credentials"][0]["id"], "Rent payments", "DRAFT")
    ]
    assert a.created_at.tzinfo is not None and a.canceled_at is None
    levels = {r.id: r.security_level for r in page.data}
    assert levels[listed.requests["C"]["id"]] == "HUMANOS_KYC"
    small = await client.call(client.api.requests.list, page_size=5, returns="RequestsEntity")
    assert len(small.data) == 3 and small.total_pages == 1


def _today() -> datetime:
    return datetime.now(UTC)


# (filters, the requests expected); "<contact A>" and "<did A>" are A's subject, read at run time
FILTERS: list[tuple[dict[str, Any], tuple[str, ...]]] = [
    ({"search": "lease"}, ("B",)),
    ({"internal_id": "order-a"}, ("A",)),
    ({"subject": "<contact A>"}, ("A",)),
    ({"subject": "<did A>"}, ("A",)),
    ({"subject": "subject-a"}, ("A",)),
    ({"security_level": ["ORGANIZATION_KYC"]}, ("B",)),
    ({"security_level": ["HUMANOS_KYC"]}, ("C",)),
    ({"security_level": ["CONTACT", "ORGANIZATION_KYC"]}, ("A", "B")),
    ({"date_from": "<yesterday>", "date_to": "<tomorrow>"}, ("A", "B", "C")),
    ({"date_from": "<3 days ago>", "date_to": "<2 days ago>"}, ()),
]


def _filter_id(filters: dict[str, Any], expected: tuple[str, ...]) -> str:
    given = ",".join(f"{k}={'|'.join(v) if isinstance(v, list) else v}" for k, v in filters.items())
    return f"{given}->{''.join(expected) or 'none'}"


@pytest.mark.parametrize(("filters", "expected"), FILTERS, ids=[_filter_id(f, e) for f, e in FILTERS])
async def test_list_with_a_filter(
    sdk: Sdk, live: LiveStack, listed: Listed, filters: dict[str, Any], expected: tuple[str, ...]
) -> None:
    subject_a = listed.requests["A"]["subjects"][0]
    values: dict[str, Any] = {
        "<contact A>": subject_a["contact"],
        "<did A>": subject_a["id"],
        "<yesterday>": _today() - timedelta(days=1),
        "<tomorrow>": _today() + timedelta(days=1),
        "<3 days ago>": _today() - timedelta(days=3),
        "<2 days ago>": _today() - timedelta(days=2),
    }
    given = {k: values.get(v, v) if isinstance(v, str) else v for k, v in filters.items()}
    client = client_of(sdk, live, listed.creds)
    page = await client.call(client.api.requests.list, returns="RequestsEntity", **given)
    assert {r.id for r in page.data} == listed.ids(*expected), given
    assert page.total_pages == (1 if expected else 0)
