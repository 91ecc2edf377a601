"""The iframe's messages encrypted to the integrator's key (``iframe.pubKey`` of ``POST /request``):
pure functions, no I/O.

The key is what 1.2.0 sends: standard base64 (padding optional) of a DER SubjectPublicKeyInfo of an
EC key on P-256 (secp256r1), what ``crypto.subtle.exportKey("spki", ...)`` gives. Any other key
(RSA, Ed25519, another curve), bytes that are not one DER structure, or text that is not base64 is
refused (``BadFrameKey``). It is kept in the one spelling ``check_frame_key`` returns.

Each message is a JWE in the compact serialization (RFC 7516) with ``alg`` ``ECDH-ES`` (direct key
agreement with an ephemeral P-256 key in ``epk``, Concat KDF; RFC 7518 §4.6) and ``enc``
``A256GCM``, ``kid`` the RFC 7638 thumbprint (SHA-256) of the registered key and ``cty``
``application/json``. Its plaintext is the event as the webhook's plaintext is
(``webhook_envelope.compact_json``): a browser opens it with WebCrypto, and any JOSE library does.
``joserfc`` does the key agreement, the KDF and the encryption.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_der_public_key
from joserfc import jwe
from joserfc.jwk import ECKey

from trust.webhook_envelope import compact_json

ALG, ENC, CTY = "ECDH-ES", "A256GCM", "application/json"
# an uncompressed P-256 SPKI is 91 bytes, 124 characters of base64; the bound leaves room to read
# (and name) the other kinds of key sent by mistake, an RSA-4096 key's 736 characters
MAX_KEY_CHARS = 1024
BASE64_RE = re.compile(r"[A-Za-z0-9+/]+={0,2}")


class BadFrameKey(ValueError):
    """The text is not a base64 DER SubjectPublicKeyInfo of a P-256 key (the message says which)."""


@dataclass(frozen=True)
class FrameKey:
    spki: str  # standard base64 with padding of the DER SPKI, the point uncompressed
    kid: str  # RFC 7638 thumbprint of its JWK, SHA-256, base64url


def check_frame_key(text: str) -> FrameKey:
    """The registered key in its one spelling, or ``BadFrameKey`` saying what is wrong."""
    if not isinstance(text, str) or not text:
        raise BadFrameKey("must be the base64 of a P-256 public key (DER SubjectPublicKeyInfo)")
    if len(text) > MAX_KEY_CHARS:
        raise BadFrameKey(f"must be at most {MAX_KEY_CHARS} characters (a P-256 key is 124)")
    if not BASE64_RE.fullmatch(text):
        raise BadFrameKey("is not standard base64")
    try:
        der = base64.b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadFrameKey("is not standard base64") from exc
    try:
        key = load_der_public_key(der)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise BadFrameKey("is not a DER SubjectPublicKeyInfo public key") from exc
    if not isinstance(key, ec.EllipticCurvePublicKey):
        kind = type(key).__name__.removeprefix("_").removesuffix("PublicKey") or "another kind of"
        raise BadFrameKey(f"must be an EC key on P-256 (secp256r1), not an {kind} key")
    if not isinstance(key.curve, ec.SECP256R1):
        raise BadFrameKey(f"must be an EC key on P-256 (secp256r1), not on {key.curve.name}")
    canonical = key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return FrameKey(base64.b64encode(canonical).decode(), _jwk(canonical).thumbprint())


def _jwk(der: bytes) -> ECKey:
    return ECKey.import_key(der)


def encrypt_for_frame(payload: Any, spki: str) -> str:
    """``payload`` (JSON) as a JWE compact serialization only the holder of the private key of
    ``spki`` (a key ``check_frame_key`` returned) can open."""
    key = check_frame_key(spki)  # checked again where it is used
    header = {"alg": ALG, "enc": ENC, "kid": key.kid, "cty": CTY}
    return jwe.encrypt_compact(header, compact_json(payload), _jwk(base64.b64decode(key.spki)))


def decrypt_from_frame(value: str, private_key: ECKey) -> Any:
    """The JSON a message carries (for tests and receivers in Python); raises on any tampering,
    another key, or a header other than ``ECDH-ES`` / ``A256GCM``."""
    opened = jwe.decrypt_compact(value, private_key, algorithms=[ALG, ENC])
    if opened.protected.get("alg") != ALG or opened.protected.get("enc") != ENC:
        raise ValueError("not an ECDH-ES / A256GCM message")
    return json.loads(opened.plaintext or b"")
