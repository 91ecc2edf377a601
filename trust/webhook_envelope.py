"""Webhook bodies and headers of CONTRACT section 7: pure functions, no I/O.

Body: compact JSON ``{"iv", "data", "tag"}`` (in that order), AES-256-GCM with a 12-byte random IV
and no associated data; ``data`` is the ciphertext without its 16-byte tag. The key is
PBKDF2-HMAC-SHA256 over the base64-decoded encryption secret, salted with the UTF-8 salt string,
10,000 iterations, 32 bytes. ``X-Signature`` is the lower-case hex HMAC-SHA256 of
``"<X-Timestamp>.<raw body>"`` keyed with the UTF-8 signature secret.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import os
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PBKDF2_ITERATIONS = 10_000
KEY_BYTES = 32
IV_BYTES = 12
TAG_BYTES = 16


def compact_json(value: Any) -> bytes:
    """JSON without spaces, key order kept, UTF-8 (the event plaintext and the body)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


@functools.lru_cache(maxsize=256)
def derive_key(encryption_secret_b64: str, salt: str) -> bytes:
    """The AES key of an organization's secret and salt: PBKDF2, 10,000 iterations (about 2 ms),
    so derived once per process for each (secret, salt) a delivery uses, not per attempt."""
    password = base64.b64decode(encryption_secret_b64, validate=True)
    return hashlib.pbkdf2_hmac("sha256", password, salt.encode(), PBKDF2_ITERATIONS, KEY_BYTES)


def encrypt_event(
    event: dict[str, Any], encryption_secret_b64: str, salt: str, iv: bytes | None = None
) -> bytes:
    """The request body for one delivery attempt: a fresh random IV unless one is given (tests)."""
    iv = os.urandom(IV_BYTES) if iv is None else iv
    if len(iv) != IV_BYTES:
        raise ValueError(f"the IV must be {IV_BYTES} bytes")
    sealed = AESGCM(derive_key(encryption_secret_b64, salt)).encrypt(iv, compact_json(event), None)
    ciphertext, tag = sealed[:-TAG_BYTES], sealed[-TAG_BYTES:]
    return compact_json({"iv": _b64(iv), "data": _b64(ciphertext), "tag": _b64(tag)})


def decrypt_body(body: bytes, encryption_secret_b64: str, salt: str) -> dict[str, Any]:
    """The event inside a body (what an integrator runs; raises on any tampering)."""
    envelope = json.loads(body)
    iv, data, tag = (base64.b64decode(envelope[k]) for k in ("iv", "data", "tag"))
    plain = AESGCM(derive_key(encryption_secret_b64, salt)).decrypt(iv, data + tag, None)
    event: dict[str, Any] = json.loads(plain)
    return event


def hmac_sha256(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def signature(signature_secret: str, timestamp_ms: str, body: bytes) -> str:
    return hmac_sha256(signature_secret.encode(), timestamp_ms.encode() + b"." + body).hex()


def signature_matches(signature_secret: str, timestamp_ms: str, body: bytes, received: str) -> bool:
    return hmac.compare_digest(signature(signature_secret, timestamp_ms, body), received.lower())


def delivery_headers(
    event_id: str, signature_secret: str, body: bytes, timestamp_ms: int, previous_secret: str | None = None
) -> dict[str, str]:
    """The delivery's headers. During a rotation's overlap (``previous_secret``), ``X-Signature``
    is still made with the previous secret, so a receiver not yet given the new one verifies as
    before, and ``X-Signature-Next`` with the new one; a receiver accepts a delivery when either
    matches its secret. After the overlap, ``X-Signature`` alone, with the new secret."""
    stamp = str(timestamp_ms)
    headers = {
        "Content-Type": "application/json",
        "X-Timestamp": stamp,
        "X-Signature": signature(previous_secret or signature_secret, stamp, body),
        "Webhook-Id": event_id,
    }
    if previous_secret is not None:
        headers["X-Signature-Next"] = signature(signature_secret, stamp, body)
    return headers


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
