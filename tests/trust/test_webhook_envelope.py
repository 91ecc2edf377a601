"""The pure webhook primitives (trust/webhook_envelope.py) against the contract and shared vectors."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag

from tests.support.vectors import load_vector
from tests.support.webhook_receiver import ENCRYPTION_SECRET, SALT, SIGNATURE_SECRET, decrypt, signature_ok
from trust import webhook_envelope as env

EVENT: dict[str, Any] = {"id": "urn:via:event:1", "eventType": "test", "message": "Olá, ☃"}


def vectors() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = load_vector("webhooks", "standard-webhooks-v1.json")
    return loaded


def test_hmac_primitive_matches_the_standard_webhooks_vectors() -> None:
    """Standard Webhooks signs ``id.timestamp.payload`` with the base64 key after ``whsec_`` and
    prints base64; our header signs ``timestamp.body`` in hex: the HMAC-SHA256 underneath is shared."""
    found = vectors()
    assert len(found) >= 2
    for v in found:
        signed = f"{v['msgId']}.{v['timestamp']}.{v['payload']}"
        assert signed == v["signedContent"]
        key = base64.b64decode(v["secret"].removeprefix("whsec_"))
        mac = env.hmac_sha256(key, signed.encode())
        assert "v1," + base64.b64encode(mac).decode() == v["expectedSignature"]
        assert env.hmac_sha256(key, signed.encode() + b"x") != mac


def test_header_signature_is_hex_hmac_of_timestamp_dot_body() -> None:
    body = b'{"iv":"a","data":"b","tag":"c"}'
    headers = env.delivery_headers("urn:via:event:42", SIGNATURE_SECRET, body, 1_700_000_000_123)
    assert headers["X-Timestamp"] == "1700000000123"
    assert headers["Webhook-Id"] == "urn:via:event:42"
    assert headers["Content-Type"] == "application/json"
    sig = headers["X-Signature"]
    assert len(sig) == 64 and sig == sig.lower()
    assert signature_ok(body, "1700000000123", sig)
    assert not signature_ok(body + b" ", "1700000000123", sig)  # re-serialized bodies fail
    assert not signature_ok(body, "1700000000124", sig)
    assert env.signature_matches(SIGNATURE_SECRET, "1700000000123", body, sig.upper())


def test_body_is_compact_iv_data_tag_and_decrypts_with_the_contract_recipe() -> None:
    body = env.encrypt_event(EVENT, ENCRYPTION_SECRET, SALT)
    assert body.startswith(b'{"iv":"') and b" " not in body
    event, order = decrypt(body)
    assert order == ["iv", "data", "tag"]
    assert event == EVENT
    envelope = json.loads(body)
    assert len(base64.b64decode(envelope["iv"])) == 12
    assert len(base64.b64decode(envelope["tag"])) == 16
    # data is the ciphertext alone: as long as the compact UTF-8 plaintext
    assert len(base64.b64decode(envelope["data"])) == len(env.compact_json(EVENT))


def test_each_body_has_a_fresh_iv_and_a_fixed_iv_is_deterministic() -> None:
    first, second = (json.loads(env.encrypt_event(EVENT, ENCRYPTION_SECRET, SALT)) for _ in range(2))
    assert first["iv"] != second["iv"] and first["data"] != second["data"]
    iv = bytes(range(12))
    assert env.encrypt_event(EVENT, ENCRYPTION_SECRET, SALT, iv) == env.encrypt_event(
        EVENT, ENCRYPTION_SECRET, SALT, iv
    )
    with pytest.raises(ValueError):
        env.encrypt_event(EVENT, ENCRYPTION_SECRET, SALT, b"short")


def test_key_derivation_uses_every_parameter() -> None:
    key = env.derive_key(ENCRYPTION_SECRET, SALT)
    assert len(key) == 32
    assert key != env.derive_key(ENCRYPTION_SECRET, SALT + "x")
    assert key != env.derive_key(base64.b64encode(b"other").decode(), SALT)


def test_tampering_or_a_wrong_salt_is_refused() -> None:
    body = env.encrypt_event(EVENT, ENCRYPTION_SECRET, SALT)
    with pytest.raises(InvalidTag):
        decrypt(body, salt="another salt")
    envelope = json.loads(body)
    data = bytearray(base64.b64decode(envelope["data"]))
    data[0] ^= 1
    envelope["data"] = base64.b64encode(bytes(data)).decode()
    with pytest.raises(InvalidTag):
        env.decrypt_body(json.dumps(envelope).encode(), ENCRYPTION_SECRET, SALT)
    assert env.decrypt_body(body, ENCRYPTION_SECRET, SALT) == EVENT


def test_the_key_is_derived_once_per_secret_and_salt() -> None:
    from trust.webhook_envelope import derive_key

    secret = base64.b64encode(b"k" * 32).decode()
    first = derive_key(secret, "salt-one")
    hits = derive_key.cache_info().hits
    assert derive_key(secret, "salt-one") is first and derive_key.cache_info().hits == hits + 1
    assert derive_key(secret, "salt-two") != first  # another salt, another key
