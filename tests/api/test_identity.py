"""The public identity documents: DID documents of the service, organizations and subjects, and
the JSON-LD context, fetched unsigned the way an outside verifier fetches them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from fastapi.routing import APIRoute
from sqlalchemy import Engine

from api.app import create_app
from api.auth import PUBLIC_PREFIXES
from api.routes import identity
from core.ids import new_object_id
from core.secretbox import SecretCipher
from core.settings import Settings
from store import keys
from store.db import utcnow, write_session
from store.tables import Subject
from tests.support.api_client import Credentials, assert_error_shape
from trust.context import CONTEXT_PATH, context_document
from trust.did import DID_CONTEXT, MULTIKEY_CONTEXT, web_subject_did


def _app(settings: Settings) -> FastAPI:
    return create_app(settings)  # no Temporal needed: the lifespan is not run, these routes never use it


@pytest_asyncio.fixture
async def public(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, FastAPI]]:
    """An unsigned client of the real app on the session's database."""
    app = _app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        yield client, app
    app.state.ctx.engine.dispose()


def _assert_did_document(resp: httpx.Response, did: str) -> list[str]:
    """Checks the shape every key-holding document has; returns its multikeys in order."""
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/did+json"
    assert resp.headers["cache-control"] == "no-cache" and resp.headers["etag"]
    doc = resp.json()
    assert doc["@context"] == [DID_CONTEXT, MULTIKEY_CONTEXT]
    assert doc["id"] == did
    methods = doc["verificationMethod"]
    assert methods and all(
        m["type"] == "Multikey"
        and m["controller"] == did
        and m["id"] == f"{did}#{m['publicKeyMultibase']}"
        and m["publicKeyMultibase"].startswith("z6Mk")
        for m in methods
    )
    ids = [m["id"] for m in methods]
    assert doc["assertionMethod"] == ids and doc["authentication"] == ids
    return [m["publicKeyMultibase"] for m in methods]


async def test_service_document_lists_every_key_active_first(
    public: tuple[httpx.AsyncClient, FastAPI], settings: Settings, cipher: SecretCipher
) -> None:
    client, app = public
    engine: Engine = app.state.ctx.engine
    resp = await client.get("/.well-known/did.json")  # no Authorization, no signature
    before = _assert_did_document(resp, "did:web:mandatum.test")
    assert before[0] == keys.service_signing_key(engine, cipher, settings).public_multikey

    rotation = keys.rotate_service_key(engine, cipher, settings)
    after = _assert_did_document(await client.get("/.well-known/did.json"), "did:web:mandatum.test")
    assert after == [rotation.key.public_multikey, *before]

    etag = (await client.get("/.well-known/did.json")).headers["etag"]
    cached = await client.get("/.well-known/did.json", headers={"If-None-Match": etag})
    assert cached.status_code == 304 and not cached.content
    # If-None-Match compares weakly (RFC 9110): a W/ form, a list, or * match too
    for header in (f"W/{etag}", f'"other", {etag}', "*"):
        assert (
            await client.get("/.well-known/did.json", headers={"If-None-Match": header})
        ).status_code == 304
    assert (
        await client.get("/.well-known/did.json", headers={"If-None-Match": '"other"'})
    ).status_code == 200


async def test_document_ids_follow_the_public_url_not_the_request_host(settings: Settings) -> None:
    app = _app(settings.model_copy(update={"public_url": "http://127.0.0.1:8000"}))
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://attacker.example") as client:
            resp = await client.get("/.well-known/did.json")
    finally:
        app.state.ctx.engine.dispose()
    _assert_did_document(resp, "did:web:127.0.0.1%3A8000")
    assert "attacker" not in resp.text


async def test_organization_document(
    public: tuple[httpx.AsyncClient, FastAPI], settings: Settings, cipher: SecretCipher, org: Credentials
) -> None:
    client, app = public
    resp = await client.get(f"/orgs/{org.organization_id}/did.json")
    assert org.did == f"did:web:mandatum.test:orgs:{org.organization_id}"
    multikeys = _assert_did_document(resp, org.did)
    own = keys.organization_signing_key(app.state.ctx.engine, cipher, settings, org.organization_id)
    assert multikeys == [own.public_multikey]  # made by the first fetch, and the one that signs
    again = await client.get(f"/orgs/{org.organization_id}/did.json")
    assert again.json() == resp.json() and again.headers["etag"] == resp.headers["etag"]


@pytest.mark.parametrize("org_id", ["unknown", "NOT-AN-ID", "0" * 23, "A" * 24])
async def test_unknown_organization_is_404(public: tuple[httpx.AsyncClient, FastAPI], org_id: str) -> None:
    client, _ = public
    for path in (f"/orgs/{new_object_id()}/did.json", f"/orgs/{org_id}/did.json"):
        body = assert_error_shape(await client.get(path), 404)
        assert body["error"] == "Not Found" and "not found" in body["message"]


async def test_subject_document(
    public: tuple[httpx.AsyncClient, FastAPI], engine: Engine, settings: Settings, org: Credentials
) -> None:
    client, _ = public
    subject_id = str(uuid.uuid4())
    with write_session(engine) as session:
        session.add(
            Subject(
                id=subject_id,
                organization_id=org.organization_id,
                contact=f"{subject_id}@example.com",
                contact_kind="email",
                created_at=utcnow(),
            )
        )
    resp = await client.get(f"/subjects/{subject_id}/did.json")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/did+json"
    assert resp.json() == {"@context": [DID_CONTEXT], "id": f"did:web:mandatum.test:subjects:{subject_id}"}
    assert resp.json()["id"] == web_subject_did(settings.public_url, subject_id)
    for unknown in (str(uuid.uuid4()), "not-a-uuid", subject_id.upper()):
        body = assert_error_shape(await client.get(f"/subjects/{unknown}/did.json"), 404)
        assert body["error"] == "Not Found"


async def test_json_ld_context(public: tuple[httpx.AsyncClient, FastAPI]) -> None:
    client, _ = public
    assert CONTEXT_PATH == "/ns/v1"
    resp = await client.get("/ns/v1")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/ld+json"
    assert "max-age" in resp.headers["cache-control"] and resp.headers["etag"]
    assert resp.json() == context_document()
    cached = await client.get("/ns/v1", headers={"If-None-Match": resp.headers["etag"]})
    assert cached.status_code == 304


async def test_signed_routes_are_not_under_public_prefixes(settings: Settings) -> None:
    """ "/orgs/", "/subjects/" and "/credentials/status/" are public prefixes: only the identity
    documents and the status list credentials may live there."""
    app = _app(settings)
    try:
        identity_paths = {r.path for r in identity.router.routes if isinstance(r, APIRoute)}
        identity_paths.add("/credentials/status/{listId}")  # api/routes/mandates.py, public too
        identity_paths.remove("/did/resolve/{did}")  # the SDK's resolver: a signed API call
        # included routers are not listed flat in app.routes (FastAPI 0.16x); the schema lists all
        paths = {*app.openapi()["paths"], *(r.path for r in app.routes if isinstance(r, APIRoute))}
        under_public = {p for p in paths if p.startswith(PUBLIC_PREFIXES)}
        assert "/request" in paths  # the schema does list the signed routes
        assert "/did/resolve/{did}" in paths and "/did/resolve/{did}" not in under_public
        assert identity_paths <= under_public
        assert under_public - identity_paths <= {"/healthz", "/readyz"}, "a route under a public prefix"
    finally:
        app.state.ctx.engine.dispose()


async def test_signed_routes_still_need_a_signature(public: tuple[httpx.AsyncClient, FastAPI]) -> None:
    client, _ = public
    assert_error_shape(await client.get("/request"), 401)
