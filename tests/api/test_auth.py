"""CONTRACT section 1: request authentication, replay protection, rotation, stored secrets."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
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
from tests.support.helpers import (
    Credentials,
    SignedClient,
    assert_error_shape,
    hmac_hex,
    now_ms,
    policy_request,
)
from wire import versioning

FIVE_MINUTES_MS = 5 * 60 * 1000


def _ms(offset_ms: int = 0) -> str:
    return str(int(time.time() * 1000) + offset_ms)


def _compact(body: Any, ascii_only: bool = True) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=ascii_only).encode()


async def _create(api: SignedClient) -> str:
    resp = await api.post("/request", policy_request())
    assert resp.status_code == 201, resp.text
    return str(resp.json()["data"]["id"])


def _assert_invalid_signature(resp: httpx.Response) -> None:
    body = assert_error_shape(resp, 401)
    assert body["message"] == "Invalid signature"
    assert body["error"] == "Unauthorized"


# --- the three headers ---------------------------------------------------------------------------


async def test_signed_call_is_accepted(api: SignedClient) -> None:
    resp = await api.get("/request")
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"data": [], "totalPages": 0}


async def test_missing_authorization_is_401(api: SignedClient) -> None:
    headers = api.headers(b"")
    del headers["Authorization"]
    assert_error_shape(await api.http.get("/request", headers=headers), 401)


async def test_no_headers_at_all_is_401(http: httpx.AsyncClient) -> None:
    assert_error_shape(await http.get("/request"), 401)


async def test_malformed_scheme_is_401(api: SignedClient) -> None:
    for value in (f"Basic {api.creds.api_key}", api.creds.api_key, "Bearer", "Bearer   "):
        resp = await api.get("/request", headers={"Authorization": value})
        assert_error_shape(resp, 401)


async def test_unknown_key_is_401(api: SignedClient) -> None:
    resp = await api.get("/request", api_key="mdt_" + "x" * 43)
    _assert_invalid_signature(resp)


async def test_wrong_secret_is_401_invalid_signature(api: SignedClient) -> None:
    _assert_invalid_signature(await api.get("/request", secret="not-the-secret"))
    _assert_invalid_signature(await api.post("/request", policy_request(), secret="not-the-secret"))


async def test_signature_not_hex_or_missing_is_401(api: SignedClient) -> None:
    _assert_invalid_signature(await api.get("/request", headers={"X-Signature": "z" * 64}))
    _assert_invalid_signature(await api.get("/request", headers={"X-Signature": ""}))
    headers = api.headers(b"")
    del headers["X-Signature"]
    _assert_invalid_signature(await api.http.get("/request", headers=headers))


async def test_signature_over_another_body_is_401(api: SignedClient) -> None:
    ts = now_ms()
    signed_for = _compact(policy_request(name="Signed name"))
    sent = _compact(policy_request(name="Tampered name"))
    signature = hmac_hex(api.creds.secret, ts.encode() + b"." + signed_for)
    resp = await api.post("/request", raw=sent, timestamp=ts, headers={"X-Signature": signature})
    _assert_invalid_signature(resp)
    assert (await api.get("/request")).json()["data"] == []


async def test_signature_in_upper_case_hex_is_accepted(api: SignedClient) -> None:
    headers = api.headers(b"")
    headers["X-Signature"] = headers["X-Signature"].upper()
    assert (await api.http.get("/request", headers=headers)).status_code == 200


async def test_missing_timestamp_is_401(api: SignedClient) -> None:
    headers = api.headers(b"")
    del headers["X-Timestamp"]
    assert_error_shape(await api.http.get("/request", headers=headers), 401)


async def test_non_integer_timestamps_are_401(api: SignedClient) -> None:
    seconds = str(int(time.time()))
    for ts in ("", "abc", "1.7e12", f"{now_ms()}.5", "-" + now_ms(), " ", "0x1a"):
        resp = await api.get("/request", timestamp=ts or None, headers={"X-Timestamp": ts})
        assert_error_shape(resp, 401)
    # seconds instead of milliseconds is 50 years in the past
    assert_error_shape(await api.get("/request", timestamp=seconds), 401)


async def test_timestamp_window(api: SignedClient) -> None:
    assert_error_shape(await api.get("/request", timestamp=_ms(-FIVE_MINUTES_MS - 5_000)), 401)
    assert_error_shape(await api.get("/request", timestamp=_ms(FIVE_MINUTES_MS + 5_000)), 401)
    assert_error_shape(
        await api.post("/request", policy_request(), timestamp=_ms(-FIVE_MINUTES_MS - 5_000)), 401
    )
    assert (await api.get("/request", timestamp=_ms(-FIVE_MINUTES_MS + 10_000))).status_code == 200
    assert (await api.get("/request", timestamp=_ms(FIVE_MINUTES_MS - 10_000))).status_code == 200
    created = await api.post("/request", policy_request(), timestamp=_ms(-FIVE_MINUTES_MS + 10_000))
    assert created.status_code == 201, created.text


async def test_401_does_not_say_which_part_of_the_key_failed(
    http: httpx.AsyncClient, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    """Unknown, expired and revoked keys answer exactly like a bad signature: a leaked API key
    alone must not tell whether it is still live."""
    creds = new_org(engine, cipher, settings)
    expired = orgs.create_key(
        engine,
        cipher,
        creds.organization_id,
        expires_at=utcnow() - timedelta(minutes=1),
        actor="operator:tests",
    )
    revoked = orgs.create_key(engine, cipher, creds.organization_id, actor="operator:tests")
    orgs.revoke_key(engine, revoked.key_id, actor="operator:tests")
    bodies = []
    for api_key, secret in (
        (creds.api_key, "wrong"),
        ("mdt_unknown", creds.secret),
        (expired.api_key, expired.signature_secret),
        (revoked.api_key, revoked.signature_secret),
    ):
        resp = await SignedClient(http, creds).get("/request", api_key=api_key, secret=secret)
        _assert_invalid_signature(resp)
        bodies.append(resp.json())
    assert all(b == bodies[0] for b in bodies)


# --- key lifecycle -------------------------------------------------------------------------------


def _client_for(http: httpx.AsyncClient, creds: Credentials, key: orgs.IssuedKey) -> SignedClient:
    return SignedClient(
        http, Credentials(creds.organization_id, key.key_id, key.api_key, key.signature_secret, creds.did)
    )


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
    _assert_invalid_signature(await _client_for(http, org, past).get("/request"))
    future = orgs.create_key(
        engine, cipher, org.organization_id, expires_at=utcnow() + timedelta(hours=1), actor="operator:tests"
    )
    assert (await _client_for(http, org, future).get("/request")).status_code == 200


async def test_revoked_key_is_401_and_other_keys_keep_working(
    http: httpx.AsyncClient, api: SignedClient, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    second = orgs.create_key(engine, cipher, org.organization_id, actor="operator:tests")
    client = _client_for(http, org, second)
    assert (await client.get("/request")).status_code == 200
    revoked_at = orgs.revoke_key(engine, second.key_id, actor="operator:tests")
    assert orgs.revoke_key(engine, second.key_id, actor="operator:tests") == revoked_at  # idempotent
    _assert_invalid_signature(await client.get("/request"))
    _assert_invalid_signature(await client.post("/request", policy_request()))
    assert (await api.get("/request")).status_code == 200


async def test_a_key_of_another_organization_sees_only_its_own(
    http: httpx.AsyncClient, api: SignedClient, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    request_id = await _create(api)
    other = SignedClient(http, new_org(engine, cipher, settings))
    assert (await other.get("/request")).json()["data"] == []
    # the other organization's key with this organization's secret: a mismatch
    _assert_invalid_signature(await other.get("/request", secret=api.creds.secret))
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
    _assert_invalid_signature(await old.get("/request"))
    _assert_invalid_signature(await old.post("/request", policy_request()))
    assert (await new.get("/request")).status_code == 200


async def test_second_rotation_retires_the_first_secret(
    http: httpx.AsyncClient, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    first = orgs.rotate_key(engine, cipher, org.key_id, actor="operator:tests")
    second = orgs.rotate_key(engine, cipher, org.key_id, actor="operator:tests")
    api = SignedClient(http, org)
    _assert_invalid_signature(await api.get("/request"))  # the original secret: two rotations ago
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


# --- header spelling and extra headers ------------------------------------------------------------


async def test_header_names_are_case_insensitive(api: SignedClient) -> None:
    ts = now_ms()
    headers = {
        "AUTHORIZATION": f"bearer {api.creds.api_key}",
        "x-TIMESTAMP": ts,
        "x-SIGNATURE": hmac_hex(api.creds.secret, ts.encode()),
    }
    resp = await api.http.get("/request", headers=headers)
    assert resp.status_code == 200, resp.text


async def test_extra_headers_are_tolerated(api: SignedClient) -> None:
    resp = await api.post(
        "/request",
        policy_request(),
        headers={
            "api-version": "2026-11-01",
            "X-SDK-Language": "typescript",
            "User-Agent": "via-sdk/1.2.3",
            "X-Request-Id": "abc",
            "Accept": "application/json",
        },
    )
    assert resp.status_code == 201, resp.text
    assert resp.headers["API-Version"] == "2026-11-01"


# --- which bytes were signed ---------------------------------------------------------------------


async def test_raw_bytes_with_extra_spaces_signed_raw(api: SignedClient) -> None:
    raw = (
        b'{ "contacts" : [ "ana@example.com" ],\n  "securityLevel" : "CONTACT" , "credentials": '
        b'[ { "type": "POLICY", "name": "Spaced", "action": { "id": '
        b'"urn:via:action:0b1e4c1a-7f1d-4a7e-9a55-1f2b3c4d5e6f" } } ] }  '
    )
    resp = await api.post("/request", raw=raw)
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["credentials"][0]["name"] == "Spaced"


async def test_non_ascii_body_signed_compact_escaped(api: SignedClient) -> None:
    body = policy_request(name="Zoë, pago 😀 \u2013 fin")
    pretty = json.dumps(body, indent=2, ensure_ascii=False).encode()
    ts = now_ms()
    signature = hmac_hex(api.creds.secret, ts.encode() + b"." + _compact(body, ascii_only=True))
    assert b"\\u00eb" in _compact(body, ascii_only=True) and "ë".encode() in pretty
    resp = await api.post("/request", raw=pretty, timestamp=ts, headers={"X-Signature": signature})
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["name"] == "Zoë, pago 😀 \u2013 fin"


async def test_non_ascii_body_signed_compact_unescaped(api: SignedClient) -> None:
    body = policy_request(name="Zoë")
    pretty = json.dumps(body, indent=4, ensure_ascii=True).encode()  # escaped on the wire
    ts = now_ms()
    signature = hmac_hex(api.creds.secret, ts.encode() + b"." + _compact(body, ascii_only=False))
    resp = await api.post("/request", raw=pretty, timestamp=ts, headers={"X-Signature": signature})
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["name"] == "Zoë"


async def test_compact_form_keeps_key_order(api: SignedClient) -> None:
    """A signature over the keys sorted differently from the sent body is not a match."""
    body = policy_request(name="Zoë")
    pretty = json.dumps(body, indent=2).encode()
    ts = now_ms()
    resorted = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    assert resorted != _compact(body)
    resp = await api.post(
        "/request",
        raw=pretty,
        timestamp=ts,
        headers={"X-Signature": hmac_hex(api.creds.secret, ts.encode() + b"." + resorted)},
    )
    _assert_invalid_signature(resp)


async def test_empty_object_body_is_signed_over_the_timestamp_alone(api: SignedClient) -> None:
    request_id = await _create(api)
    ts = now_ms()
    resp = await api.delete(
        f"/request/{request_id}",
        raw=b"{}",
        timestamp=ts,
        headers={"X-Signature": hmac_hex(api.creds.secret, ts.encode())},
    )
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"success": True}
    # a POST of {} passes authentication and then fails validation
    ts = now_ms()
    resp = await api.post(
        "/request", raw=b"{}", timestamp=ts, headers={"X-Signature": hmac_hex(api.creds.secret, ts.encode())}
    )
    body = assert_error_shape(resp, 400)
    assert "contacts is required" in body["message"]


async def test_pretty_printed_empty_object_counts_as_empty(api: SignedClient) -> None:
    ts = now_ms()
    resp = await api.post(
        "/request",
        raw=b"{\n}\n",
        timestamp=ts,
        headers={"X-Signature": hmac_hex(api.creds.secret, ts.encode())},
    )
    assert_error_shape(resp, 400)


async def test_deeply_nested_body_with_a_bad_signature_is_401_not_500(api: SignedClient) -> None:
    raw = b"[" * 200_000 + b"]" * 200_000
    _assert_invalid_signature(await api.post("/request", raw=raw, secret="wrong"))


async def test_lone_surrogate_in_a_body_with_a_bad_signature_is_401_not_500(api: SignedClient) -> None:
    raw = json.dumps(policy_request(name="bad \ud800 name")).encode()  # valid JSON, no UTF-8 form
    assert b"\\ud800" in raw
    _assert_invalid_signature(await api.post("/request", raw=raw, secret="wrong"))
    assert_error_shape(await api.post("/request", raw=raw), 400)  # signed raw: authenticated, then refused


async def test_non_json_body_with_a_bad_signature_is_401(api: SignedClient) -> None:
    _assert_invalid_signature(await api.post("/request", raw=b"\xff\xfe not json", secret="wrong"))


# --- replay --------------------------------------------------------------------------------------


async def test_same_signed_post_twice_is_refused(api: SignedClient) -> None:
    body = _compact(policy_request())
    headers = {**api.headers(body), "Content-Type": "application/json"}
    first = await api.http.post("/request", content=body, headers=headers)
    assert first.status_code == 201, first.text
    second = await api.http.post("/request", content=body, headers=headers)
    assert_error_shape(second, 401)
    assert len((await api.get("/request")).json()["data"]) == 1


async def test_refused_replay_of_a_write_with_a_different_method_is_refused(api: SignedClient) -> None:
    body = _compact(policy_request())
    headers = {**api.headers(body), "Content-Type": "application/json"}
    assert (await api.http.post("/request", content=body, headers=headers)).status_code == 201
    assert_error_shape(await api.http.request("PATCH", "/request", content=body, headers=headers), 401)


async def test_parallel_reads_may_repeat_a_get_signature(api: SignedClient) -> None:
    request_id = await _create(api)
    headers = api.headers(b"")
    first = await api.http.get("/request", headers=headers)
    second = await api.http.get(f"/request/{request_id}", headers=headers)
    assert first.status_code == 200 and second.status_code == 200
    results = await asyncio.gather(*(api.http.get("/request", headers=headers) for _ in range(5)))
    assert [r.status_code for r in results] == [200] * 5


async def test_get_signature_never_authorizes_a_cancel(api: SignedClient) -> None:
    request_id = await _create(api)
    headers = api.headers(b"")
    assert (await api.http.get(f"/request/{request_id}", headers=headers)).status_code == 200
    assert_error_shape(await api.http.delete(f"/request/{request_id}", headers=headers), 401)
    after = (await api.get(f"/request/{request_id}")).json()
    assert after["canceledAt"] is None and after["status"] != "CANCELED"
    # and the read signature keeps working for reads
    assert (await api.http.get(f"/request/{request_id}", headers=headers)).status_code == 200


async def test_cancel_signature_is_not_reusable_for_a_read(api: SignedClient) -> None:
    request_id = await _create(api)
    headers = api.headers(b"")
    assert (await api.http.delete(f"/request/{request_id}", headers=headers)).status_code == 200
    assert_error_shape(await api.http.get(f"/request/{request_id}", headers=headers), 401)
    assert_error_shape(await api.http.delete(f"/request/{request_id}", headers=headers), 401)


async def test_replay_is_per_key(
    http: httpx.AsyncClient, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    """Two keys of one organization signing the same timestamp do not collide."""
    second = orgs.create_key(engine, cipher, org.organization_id, actor="operator:tests")
    ts = now_ms()
    a = SignedClient(http, org)
    b = _client_for(http, org, second)
    assert (await a.delete("/request/" + "0" * 24, timestamp=ts)).status_code == 404
    assert (await b.delete("/request/" + "0" * 24, timestamp=ts)).status_code == 404


async def test_concurrent_identical_posts_create_exactly_one(api: SignedClient) -> None:
    body = _compact(policy_request(name="Concurrent"))
    headers = {**api.headers(body), "Content-Type": "application/json"}
    results = await asyncio.gather(
        *(api.http.post("/request", content=body, headers=headers) for _ in range(20))
    )
    statuses = sorted(r.status_code for r in results)
    assert statuses == [201] + [401] * 19, [r.text for r in results if r.status_code != 401]
    for r in results:
        if r.status_code == 401:
            assert_error_shape(r, 401)
    assert len((await api.get("/request")).json()["data"]) == 1


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
    _assert_invalid_signature(await old.get("/request", secret="still-wrong"))


async def test_cached_key_pins_the_version_once(
    cached_http: httpx.AsyncClient, org: Credentials, engine: Engine
) -> None:
    client = SignedClient(cached_http, org)
    for _ in range(3):
        resp = await client.get("/request")
        assert resp.status_code == 200 and resp.headers["API-Version"] == versioning.newest()
    assert orgs.get_organization(engine, org.organization_id).api_version == versioning.newest()
