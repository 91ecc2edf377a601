"""CONTRACT section 1, the API keys: expiry, revocation, rotation with its grace period, secrets
stored encrypted, and the short in-process key cache."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, text, update
from temporalio.client import Client

from api.app import create_app
from core.secretbox import SecretCipher
from core.settings import Settings
from store import orgs
from store.db import utcnow
from store.tables import ApiKey
from tests.conftest import new_org
from tests.support.api_client import Credentials, SignedClient, policy_request
from tests.support.signatures import assert_invalid_signature, client_for_key, create_request_id
from wire import versioning

# --- key lifecycle -------------------------------------------------------------------------------


async def test_expired_key_is_401(
    http: httpx.AsyncClient, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    past = orgs.create_key(
        engine,
        cipher,
        org.organization_id,
        expires_at=utcnow() - timedelta(seconds=1),
        actor="operator:tests",
    )
    assert_invalid_signature(await client_for_key(http, org, past).get("/request"))
    future = orgs.create_key(
        engine, cipher, org.organization_id, expires_at=utcnow() + timedelta(hours=1), actor="operator:tests"
    )
    assert (await client_for_key(http, org, future).get("/request")).status_code == 200


async def test_revoked_key_is_401_and_other_keys_keep_working(
    http: httpx.AsyncClient, api: SignedClient, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    second = orgs.create_key(engine, cipher, org.organization_id, actor="operator:tests")
    client = client_for_key(http, org, second)
    assert (await client.get("/request")).status_code == 200
    revoked_at = orgs.revoke_key(engine, second.key_id, actor="operator:tests")
    assert orgs.revoke_key(engine, second.key_id, actor="operator:tests") == revoked_at  # idempotent
    assert_invalid_signature(await client.get("/request"))
    assert_invalid_signature(await client.post("/request", policy_request()))
    assert (await api.get("/request")).status_code == 200


async def test_a_key_of_another_organization_sees_only_its_own(
    http: httpx.AsyncClient, api: SignedClient, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    request_id = await create_request_id(api)
    other = SignedClient(http, new_org(engine, cipher, settings))
    assert (await other.get("/request")).json()["data"] == []
    # the other organization's key with this organization's secret: a mismatch
    assert_invalid_signature(await other.get("/request", secret=api.creds.secret))
    assert (await api.get(f"/request/{request_id}")).status_code == 200


async def test_rotation_keeps_the_old_secret_for_24_hours(
    http: httpx.AsyncClient, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    old = SignedClient(http, org)
    rotated = orgs.rotate_key(engine, cipher, org.key_id, actor="operator:tests")
    assert rotated.key_id == org.key_id and rotated.signature_secret != org.secret
    assert rotated.api_key == ""  # the API key itself is kept, not re-issued
    new = SignedClient(
        http, Credentials(org.organization_id, org.key_id, org.api_key, rotated.signature_secret, org.did)
    )
    assert (await new.get("/request")).status_code == 200
    assert (await old.get("/request")).status_code == 200
    assert (await new.post("/request", policy_request())).status_code == 201
    assert (await old.post("/request", policy_request())).status_code == 201

    with engine.begin() as conn:
        conn.execute(
            update(ApiKey)
            .where(ApiKey.id == org.key_id)  # type: ignore[arg-type]
            .values(rotated_at=utcnow() - timedelta(hours=25))
        )
    assert_invalid_signature(await old.get("/request"))
    assert_invalid_signature(await old.post("/request", policy_request()))
    assert (await new.get("/request")).status_code == 200


async def test_second_rotation_retires_the_first_secret(
    http: httpx.AsyncClient, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    first = orgs.rotate_key(engine, cipher, org.key_id, actor="operator:tests")
    second = orgs.rotate_key(engine, cipher, org.key_id, actor="operator:tests")
    api = SignedClient(http, org)
    assert_invalid_signature(await api.get("/request"))  # the original secret: two rotations ago
    assert (await api.get("/request", secret=first.signature_secret)).status_code == 200
    assert (await api.get("/request", secret=second.signature_secret)).status_code == 200


async def test_rotating_a_revoked_key_is_refused(
    org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    orgs.revoke_key(engine, org.key_id, actor="operator:tests")
    try:
        orgs.rotate_key(engine, cipher, org.key_id, actor="operator:tests")
    except ValueError as exc:
        assert "revoked" in str(exc)
    else:
        raise AssertionError("rotating a revoked key must fail")


# --- secrets at rest -----------------------------------------------------------------------------


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return str(value).encode()


def test_secrets_are_not_stored_in_plain_text(
    engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    creds = new_org(engine, cipher, settings)
    rotated = orgs.rotate_key(engine, cipher, creds.key_id, actor="operator:tests")
    extra = orgs.create_key(engine, cipher, creds.organization_id, actor="operator:tests")
    needles = [
        s.encode()
        for s in (
            creds.api_key,
            creds.secret,
            rotated.signature_secret,
            extra.api_key,
            extra.signature_secret,
        )
    ]
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT * FROM api_key")).all()
        keys = conn.execute(text("SELECT * FROM seen_signature")).all()
    assert any(creds.key_id in r for r in rows) and any(extra.key_id in r for r in rows)
    for row in [*rows, *keys]:
        for value in row:
            if value is None:
                continue
            for needle in needles:
                assert needle not in _as_bytes(value)
    # the API key is kept only as its prefix (to recognise it) and a hash
    mapping = next(r for r in rows if creds.key_id in r)._mapping
    assert creds.api_key.startswith(mapping["key_prefix"])
    assert len(mapping["key_prefix"]) < len(creds.api_key) // 2
    if engine.dialect.name == "sqlite":
        database = engine.url.database
        assert database
        files = [Path(database), Path(database + "-wal")]
        # read by another process: closing a descriptor of the database file in this one would
        # drop every POSIX lock this process's SQLite connections hold on it, and another process
        # (a `mandatum` command of a later test) could then take itself for the last connection
        # and remove the WAL under them
        contents = b"".join(
            subprocess.run(["cat", str(f)], capture_output=True, check=True).stdout
            for f in files
            if f.exists()
        )
        assert creds.key_id.encode() in contents  # the scan sees the rows
        for needle in needles:
            assert needle not in contents


# --- the short in-process key cache --------------------------------------------------------------


@pytest.fixture
async def cached_http(settings: Settings, temporal: Client) -> AsyncIterator[httpx.AsyncClient]:
    """The app with the production-like key cache on (the shared app runs without it)."""
    app = create_app(settings.model_copy(update={"auth_cache_seconds": 60.0}), temporal=temporal)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        yield client
    app.state.ctx.engine.dispose()


async def test_rotated_secret_works_at_once_despite_the_cache(
    cached_http: httpx.AsyncClient, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    old = SignedClient(cached_http, org)
    assert (await old.get("/request")).status_code == 200  # the key is now cached
    rotated = orgs.rotate_key(engine, cipher, org.key_id, actor="operator:tests")
    new = SignedClient(
        cached_http,
        Credentials(org.organization_id, org.key_id, org.api_key, rotated.signature_secret, org.did),
    )
    assert (await new.get("/request")).status_code == 200
    assert (await old.get("/request")).status_code == 200
    assert_invalid_signature(await old.get("/request", secret="still-wrong"))


async def test_cached_key_pins_the_version_once(
    cached_http: httpx.AsyncClient, org: Credentials, engine: Engine
) -> None:
    client = SignedClient(cached_http, org)
    for _ in range(3):
        resp = await client.get("/request")
        assert resp.status_code == 200 and resp.headers["API-Version"] == versioning.newest()
    assert orgs.get_organization(engine, org.organization_id).api_version == versioning.newest()
