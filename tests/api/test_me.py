"""``GET /me``: the calling organization, behind the same signature middleware as every route."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest_asyncio
from sqlalchemy import Engine

from api.app import create_app
from core.secretbox import SecretCipher
from core.settings import Settings
from tests.conftest import new_org
from tests.support.api_client import Credentials, SignedClient, assert_error_shape
from wire import versioning


@pytest_asyncio.fixture
async def http(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The real app on the session's database; /me never uses Temporal, so no lifespan."""
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        yield client
    app.state.ctx.engine.dispose()


def _signed(http: httpx.AsyncClient, org: Credentials) -> SignedClient:
    return SignedClient(http, org)


async def test_me_names_the_caller(http: httpx.AsyncClient, org: Credentials) -> None:
    resp = await _signed(http, org).get("/me")
    assert resp.status_code == 200, resp.text
    assert resp.json() == {
        "organizationId": org.organization_id,
        "did": f"did:web:mandatum.test:orgs:{org.organization_id}",
        "apiVersion": versioning.newest(),
    }
    assert resp.headers["api-version"] == versioning.newest()


async def test_me_did_is_the_published_document(http: httpx.AsyncClient, org: Credentials) -> None:
    did = (await _signed(http, org).get("/me")).json()["did"]
    document = await http.get(f"/orgs/{org.organization_id}/did.json")
    assert document.status_code == 200, document.text
    assert document.json()["id"] == did


async def test_each_key_sees_its_own_organization(
    http: httpx.AsyncClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
) -> None:
    other = new_org(engine, cipher, settings)
    mine = (await _signed(http, org).get("/me")).json()
    theirs = (await _signed(http, other).get("/me")).json()
    assert mine["organizationId"] == org.organization_id
    assert theirs["organizationId"] == other.organization_id != org.organization_id
    assert theirs["did"] == other.did != mine["did"]


async def test_me_serves_the_asked_version(http: httpx.AsyncClient, org: Credentials) -> None:
    client = _signed(http, org)
    newest = versioning.newest()
    resp = await client.get("/me", headers={"API-Version": newest})
    assert resp.status_code == 200, resp.text
    assert resp.json()["apiVersion"] == newest == resp.headers["api-version"]
    # a past date after the newest version resolves to the newest version not after it
    asked = "2026-11-02"
    later = await client.get("/me", headers={"API-Version": asked})
    assert later.status_code == 200, later.text
    assert later.json()["apiVersion"] == [v for v in versioning.VERSIONS if v <= asked][-1]
    assert_error_shape(await client.get("/me", headers={"API-Version": "2999-01-01"}), 400)


async def test_me_refuses_an_unsigned_call(http: httpx.AsyncClient) -> None:
    body = assert_error_shape(await http.get("/me"), 401)
    assert body["message"] == "Missing API key: send Authorization: Bearer <apiKey>"


async def test_me_refuses_a_wrong_signature(http: httpx.AsyncClient, org: Credentials) -> None:
    resp = await _signed(http, org).get("/me", secret="not-the-secret")
    assert assert_error_shape(resp, 401)["message"] == "Invalid signature"


async def test_me_refuses_a_stale_timestamp(http: httpx.AsyncClient, org: Credentials) -> None:
    resp = await _signed(http, org).get("/me", timestamp="1000")
    assert assert_error_shape(resp, 401)["message"].startswith("Stale X-Timestamp")


async def test_me_signature_cannot_authorize_a_write(http: httpx.AsyncClient, org: Credentials) -> None:
    """A captured /me signature covers only the timestamp: it must not authorize a POST."""
    client = _signed(http, org)
    headers = client.headers(b"")
    assert (await http.get("/me", headers=headers)).status_code == 200
    replayed = await http.post("/request", headers=headers)
    assert assert_error_shape(replayed, 401)["message"] == "Signature already used"
