"""``iframe.pubKey`` of POST /request (issue 36): anything but a P-256 public key is a 400 naming it
that stores and starts nothing; with a key, the iframe's last page posts each ``credential`` event
whole, as the webhook carries it, encrypted to that key, and nothing of it readable."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from sqlalchemy import Engine, func, select, update
from sqlmodel import col
from sqlmodel import select as sql_select
from temporalio.client import Client

from adapters.delivery import Outbox
from services import journey as journey_service
from store import orgs
from store.db import read_session, write_session
from store.tables import CredentialRequest, WebhookEvent
from tests.support.api_client import SignedClient, error_messages, policy_request
from tests.support.documents import LEASE, SECRET
from tests.support.frame_keys import new_key_pair, posted
from tests.support.journey_messages import TEST_OUTBOX, code_in, message_for

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")
PARENT = "https://app.example.com"


def spki(key: Any) -> str:
    return base64.b64encode(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).decode()


P256 = new_key_pair().spki
BAD = {
    "not base64": ("-----BEGIN PUBLIC KEY-----", "is not standard base64"),
    "RSA": (spki(rsa.generate_private_key(65537, 2048).public_key()), "not an RSA key"),
    "P-384": (spki(ec.generate_private_key(ec.SECP384R1()).public_key()), "not on secp384r1"),
    "Ed25519": (spki(ed25519.Ed25519PrivateKey.generate().public_key()), "not an Ed25519 key"),
    "truncated DER": (
        base64.b64encode(base64.b64decode(P256)[:60]).decode(),
        "not a DER SubjectPublicKeyInfo",
    ),
    "too long": ("QUFB" * 300, "at most 1024 characters"),
}


def stored(engine: Engine, organization_id: str) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(CredentialRequest)
                .where(col(CredentialRequest.organization_id) == organization_id)
            ).scalar_one()
        )


async def assert_nothing_stored(api: SignedClient, engine: Engine, temporal: Client, contact: str) -> None:
    org = api.creds.organization_id
    assert stored(engine, org) == 0
    assert [w async for w in temporal.list_workflows(f"MandatumOrganization = '{org}'")] == []
    assert Outbox(TEST_OUTBOX).entries(to=contact) == []


@pytest.mark.parametrize("name", list(BAD))
async def test_a_key_that_is_not_p256_is_a_400_naming_it_and_stores_nothing(
    api: SignedClient, engine: Engine, temporal: Client, name: str
) -> None:
    key, why = BAD[name]
    contact = f"frame-{secrets.token_hex(4)}@example.com"
    resp = await api.post("/request", policy_request(contacts=[contact], iframe={"pubKey": key}))
    [line] = error_messages(resp)
    assert line.startswith("iframe.pubKey") and why in line, line
    await assert_nothing_stored(api, engine, temporal, contact)


@pytest.mark.parametrize(
    ("iframe", "named"),
    [
        ({"pubKey": ""}, "iframe.pubKey"),
        ({"pubKey": P256, "other": 1}, "iframe.other"),
        ({"pubKey": 5}, "iframe.pubKey"),
    ],
)
async def test_an_empty_key_or_a_stranger_in_the_iframe_is_refused(
    api: SignedClient, engine: Engine, temporal: Client, iframe: dict[str, Any], named: str
) -> None:
    contact = f"frame-{secrets.token_hex(4)}@example.com"
    resp = await api.post("/request", policy_request(contacts=[contact], iframe=iframe))
    assert any(line.startswith(named) for line in error_messages(resp)), resp.text
    await assert_nothing_stored(api, engine, temporal, contact)


def key_of(engine: Engine, request_id: str) -> str | None:
    with read_session(engine) as session:
        row = session.get(CredentialRequest, request_id)
        assert row is not None
        return row.iframe_pub_key


async def test_the_key_is_kept_in_one_spelling_and_none_without_it(api: SignedClient, engine: Engine) -> None:
    created = await api.post("/request", policy_request(iframe={"pubKey": P256.rstrip("=")}))
    assert created.status_code == 201, created.text
    assert key_of(engine, created.json()["data"]["id"]) == P256  # padded, as the check spells it
    for iframe in (None, {"pubKey": P256}):
        body = policy_request() if iframe is None else policy_request(iframe=iframe)
        made = await api.post("/request", {**body, "iframe": None} if iframe is None else body)
        assert made.status_code == 201, made.text
        assert key_of(engine, made.json()["data"]["id"]) == (iframe and P256)


async def test_2026_05_20_sent_the_key_at_the_top(api: SignedClient, engine: Engine) -> None:
    old = {"API-Version": "2026-05-20"}
    created = await api.post("/request", policy_request(pubKey=P256), headers=old)
    assert created.status_code == 201, created.text
    request_id = (await api.get("/request", headers={})).json()["data"][0]["id"]
    assert key_of(engine, request_id) == P256
    none = await api.post("/request", policy_request(pubKey=None), headers=old)
    assert none.status_code == 201, none.text
    refused = await api.post("/request", policy_request(pubKey=BAD["RSA"][0]), headers=old)
    assert any("iframe.pubKey" in line and "RSA" in line for line in error_messages(refused)), refused.text


# --- the messages -----------------------------------------------------------------------------------


async def decide_in_the_frame(
    api: SignedClient,
    http: httpx.AsyncClient,
    engine: Engine,
    surface: str = "iframe",
    before_deciding: Callable[[str], None] | None = None,
    **fields: Any,
) -> tuple[str, list[httpx.Response]]:
    """A request to a fresh subject, accepted on its page: (its id, every page the browser got)."""
    orgs.set_frame_origins(engine, api.creds.organization_id, [PARENT], False, actor="operator:tests")
    contact = f"frame-{secrets.token_hex(4)}@example.com"
    created = await api.post("/request", policy_request(contacts=[contact], **fields))
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    link = await api.get(f"/request/link/{request_id}", params={"contact": contact})
    path = link.json()["data"]["url"].removeprefix("https://mandatum.test")
    framing = {"surface": "iframe", "parent": PARENT} if surface == "iframe" else {}
    pages = [await http.get(path, params=framing)]
    subject = created.json()["data"]["subjects"][0]["id"]
    code = code_in((await message_for(request_id, subject.rsplit(":", 1)[1])).text)
    pages.append(await http.post(f"{path}/otp", data={"code": code, **framing}))
    session = pages[-1].text.split('name="session" value="', 1)[1].split('"', 1)[0]
    choices = {f"decision-{c['id']}": "accept" for c in created.json()["data"]["credentials"]}
    if before_deciding is not None:
        before_deciding(request_id)
    pages.append(await http.post(f"{path}/decide", data={"session": session, **choices, **framing}))
    pages.append(await http.get(path, params=framing))  # the page once the request is complete
    assert [p.status_code for p in pages] == [200, 200, 200, 200], [p.text[:300] for p in pages]
    return request_id, pages


def credential_events(engine: Engine, request_id: str) -> list[dict[str, Any]]:
    with read_session(engine) as session:
        found = session.exec(
            sql_select(WebhookEvent).where(
                col(WebhookEvent.request_id) == request_id, col(WebhookEvent.event_type) == "credential"
            )
        )
        return [dict(e.payload) for e in found]


async def test_the_frame_gets_the_webhook_event_whole_and_only_encrypted(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine
) -> None:
    pair = new_key_pair()
    request_id, pages = await decide_in_the_frame(
        api, http, engine, iframe={"pubKey": pair.spki}, credentials=[LEASE]
    )
    [message] = posted(pages[2].text)
    assert set(message) == {"type", "jwe"} and message["type"] == "mandatum.encrypted"
    [event] = credential_events(engine, request_id)
    assert pair.open(message["jwe"]) == event  # exactly what the webhook carries, hidden items too
    assert SECRET in json.dumps(event)
    for page in pages:  # nothing of it readable in any page the subject's browser got
        for readable in (SECRET, "IBAN", request_id, event["id"], event["credential"]["id"]):
            assert readable not in page.text
    assert posted(pages[3].text) == []  # sent once, by the page that records the decision
    with pytest.raises(Exception):  # noqa: B017 (another P-256 key opens nothing)
        new_key_pair().open(message["jwe"])


async def test_the_hosted_page_posts_nothing_even_with_a_key(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[list[str]] = []
    real = journey_service.decision_events

    async def reading(ctx: Any, decision_ids: list[str]) -> Any:
        read.append(decision_ids)
        return await real(ctx, decision_ids)

    monkeypatch.setattr(journey_service, "decision_events", reading)
    _, pages = await decide_in_the_frame(api, http, engine, surface="hosted", iframe={"pubKey": P256})
    assert all(posted(p.text) == [] and "postMessage" not in p.text for p in pages)
    assert read == []  # outside the iframe the decisions' events are not even read
    await decide_in_the_frame(api, http, engine, iframe={"pubKey": P256})
    assert len(read) == 1 and len(read[0]) == 1  # in the frame: the one decision's event


async def test_a_stored_key_that_no_longer_passes_posts_nothing_readable(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine
) -> None:
    def hand_edit(request_id: str) -> None:  # written around the checks: the page checks it again
        with write_session(engine) as session:
            session.execute(
                update(CredentialRequest)
                .where(col(CredentialRequest.id) == request_id)
                .values(iframe_pub_key=BAD["P-384"][0])
            )

    request_id, pages = await decide_in_the_frame(
        api, http, engine, iframe={"pubKey": P256}, before_deciding=hand_edit
    )
    assert posted(pages[2].text) == [] and request_id not in pages[2].text
    assert credential_events(engine, request_id)  # the decision is recorded, its webhook made


async def test_the_openapi_document_shows_the_iframe_key(http: httpx.AsyncClient) -> None:
    schemas = (await http.get("/openapi.json")).json()["components"]["schemas"]
    iframe = schemas["CreateRequestIn"]["properties"]["iframe"]
    assert {"$ref": "#/components/schemas/IframeIn"} in iframe["anyOf"]
    # optional: an iframe may offer only the trusted browser session (iframe.cookie)
    [key] = [k for k in schemas["IframeIn"]["properties"]["pubKey"]["anyOf"] if k.get("type") == "string"]
    assert (key["maxLength"], schemas["IframeIn"].get("required")) == (1024, None)
    assert "P-256" in key["description"] and "JWE" in key["description"]
    assert schemas["IframeIn"]["additionalProperties"] is False
