"""CONTRACT section 1, request authentication: the three headers, their spelling, and which bytes
are signed. (Keys: test_auth_keys.py; replay protection: test_auth_replay.py.)"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import httpx
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from store import orgs
from store.db import utcnow
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, hmac_hex, now_ms, policy_request
from tests.support.signatures import assert_invalid_signature, compact_json, create_request_id

FIVE_MINUTES_MS = 5 * 60 * 1000


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
    assert_invalid_signature(resp)


async def test_wrong_secret_is_401_invalid_signature(api: SignedClient) -> None:
    assert_invalid_signature(await api.get("/request", secret="not-the-secret"))
    assert_invalid_signature(await api.post("/request", policy_request(), secret="not-the-secret"))


async def test_signature_not_hex_or_missing_is_401(api: SignedClient) -> None:
    assert_invalid_signature(await api.get("/request", headers={"X-Signature": "z" * 64}))
    assert_invalid_signature(await api.get("/request", headers={"X-Signature": ""}))
    headers = api.headers(b"")
    del headers["X-Signature"]
    assert_invalid_signature(await api.http.get("/request", headers=headers))


async def test_signature_over_another_body_is_401(api: SignedClient) -> None:
    ts = now_ms()
    signed_for = compact_json(policy_request(name="Signed name"))
    sent = compact_json(policy_request(name="Tampered name"))
    signature = hmac_hex(api.creds.secret, ts.encode() + b"." + signed_for)
    resp = await api.post("/request", raw=sent, timestamp=ts, headers={"X-Signature": signature})
    assert_invalid_signature(resp)
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
    assert_error_shape(await api.get("/request", timestamp=now_ms(-FIVE_MINUTES_MS - 5_000)), 401)
    assert_error_shape(await api.get("/request", timestamp=now_ms(FIVE_MINUTES_MS + 5_000)), 401)
    assert_error_shape(
        await api.post("/request", policy_request(), timestamp=now_ms(-FIVE_MINUTES_MS - 5_000)), 401
    )
    assert (await api.get("/request", timestamp=now_ms(-FIVE_MINUTES_MS + 10_000))).status_code == 200
    assert (await api.get("/request", timestamp=now_ms(FIVE_MINUTES_MS - 10_000))).status_code == 200
    created = await api.post("/request", policy_request(), timestamp=now_ms(-FIVE_MINUTES_MS + 10_000))
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
        assert_invalid_signature(resp)
        bodies.append(resp.json())
    assert all(b == bodies[0] for b in bodies)


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
    signature = hmac_hex(api.creds.secret, ts.encode() + b"." + compact_json(body, ascii_only=True))
    assert b"\\u00eb" in compact_json(body, ascii_only=True) and "ë".encode() in pretty
    resp = await api.post("/request", raw=pretty, timestamp=ts, headers={"X-Signature": signature})
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["name"] == "Zoë, pago 😀 \u2013 fin"


async def test_non_ascii_body_signed_compact_unescaped(api: SignedClient) -> None:
    body = policy_request(name="Zoë")
    pretty = json.dumps(body, indent=4, ensure_ascii=True).encode()  # escaped on the wire
    ts = now_ms()
    signature = hmac_hex(api.creds.secret, ts.encode() + b"." + compact_json(body, ascii_only=False))
    resp = await api.post("/request", raw=pretty, timestamp=ts, headers={"X-Signature": signature})
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["name"] == "Zoë"


async def test_compact_form_keeps_key_order(api: SignedClient) -> None:
    """A signature over the keys sorted differently from the sent body is not a match."""
    body = policy_request(name="Zoë")
    pretty = json.dumps(body, indent=2).encode()
    ts = now_ms()
    resorted = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    assert resorted != compact_json(body)
    resp = await api.post(
        "/request",
        raw=pretty,
        timestamp=ts,
        headers={"X-Signature": hmac_hex(api.creds.secret, ts.encode() + b"." + resorted)},
    )
    assert_invalid_signature(resp)


async def test_empty_object_body_is_signed_over_the_timestamp_alone(api: SignedClient) -> None:
    request_id = await create_request_id(api)
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
    assert_invalid_signature(await api.post("/request", raw=raw, secret="wrong"))


async def test_lone_surrogate_in_a_body_with_a_bad_signature_is_401_not_500(api: SignedClient) -> None:
    raw = json.dumps(policy_request(name="bad \ud800 name")).encode()  # valid JSON, no UTF-8 form
    assert b"\\ud800" in raw
    assert_invalid_signature(await api.post("/request", raw=raw, secret="wrong"))
    assert_error_shape(await api.post("/request", raw=raw), 400)  # signed raw: authenticated, then refused


async def test_non_json_body_with_a_bad_signature_is_401(api: SignedClient) -> None:
    assert_invalid_signature(await api.post("/request", raw=b"\xff\xfe not json", secret="wrong"))
