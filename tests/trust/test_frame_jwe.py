"""The iframe's messages encrypted to the integrator's key (``trust.frame_jwe``): a receiver holding
the private key opens exactly the event the webhook carries, by the standard's steps done here by
hand (what a browser does with WebCrypto); another key, any tampering, or a key that is not P-256
opens nothing."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.concatkdf import ConcatKDFHash
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.support.frame_keys import FrameKeyPair, new_key_pair
from trust.frame_jwe import MAX_KEY_CHARS, BadFrameKey, check_frame_key, decrypt_from_frame, encrypt_for_frame
from trust.webhook_envelope import compact_json

EVENT: dict[str, Any] = {
    "id": "urn:via:event:0b8f",
    "eventType": "credential",
    "requestId": "6b03dd7b79ea6a94710d6d71",
    "user": {"contact": "ana@example.com", "id": "did:web:mandatum.test:subjects:1"},
    "credential": {"id": "urn:via:credential:1", "data": [{"label": "IBAN", "value": "PT50 ... é"}]},
    "decision": {"action": "accept", "date": "2026-11-23T06:30:20.012Z"},
}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def spki_of(key: Any) -> str:
    return base64.b64encode(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).decode()


def open_by_hand(jwe: str, private: ec.EllipticCurvePrivateKey) -> bytes:
    """RFC 7516 / 7518 §4.6 step by step, as a browser does with WebCrypto: ECDH with ``epk``,
    Concat KDF (SHA-256, AlgorithmID ``enc``, no PartyU/PartyV info, 256 bits), AES-256-GCM with
    the protected header's ASCII as the associated data."""
    protected, encrypted_key, iv, ciphertext, tag = jwe.split(".")
    header = json.loads(unb64url(protected))
    assert encrypted_key == ""  # ECDH-ES: the agreed key is the content key
    epk = header["epk"]
    point = b"\x04" + unb64url(epk["x"]) + unb64url(epk["y"])
    ephemeral = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    shared = private.exchange(ec.ECDH(), ephemeral)

    def part(data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + data

    other = part(header["enc"].encode()) + part(b"") + part(b"") + struct.pack(">I", 256)
    cek = ConcatKDFHash(hashes.SHA256(), 32, other).derive(shared)
    return AESGCM(cek).decrypt(unb64url(iv), unb64url(ciphertext) + unb64url(tag), protected.encode("ascii"))


def thumbprint(spki: str) -> str:
    """RFC 7638: SHA-256 of the JWK's required members in lexicographic order, no spaces."""
    key = ec.EllipticCurvePublicKey.from_encoded_point(
        ec.SECP256R1(), base64.b64decode(spki)[-65:]
    ).public_numbers()
    members = {
        "crv": "P-256",
        "kty": "EC",
        "x": b64url(key.x.to_bytes(32, "big")),
        "y": b64url(key.y.to_bytes(32, "big")),
    }
    return b64url(hashlib.sha256(json.dumps(members, separators=(",", ":")).encode()).digest())


@pytest.fixture(scope="module")
def pair() -> FrameKeyPair:
    return new_key_pair()


def test_the_holder_of_the_private_key_opens_exactly_the_webhook_plaintext(pair: FrameKeyPair) -> None:
    jwe = encrypt_for_frame(EVENT, pair.spki)
    assert open_by_hand(jwe, pair.private) == compact_json(EVENT)  # byte for byte, the webhook's
    assert pair.open(jwe) == EVENT  # and by the library
    assert "ana@example.com" not in jwe and "IBAN" not in jwe


def test_the_header_names_the_scheme_and_the_key(pair: FrameKeyPair) -> None:
    first, second = encrypt_for_frame(EVENT, pair.spki), encrypt_for_frame(EVENT, pair.spki)
    headers = [json.loads(unb64url(j.split(".")[0])) for j in (first, second)]
    for header in headers:
        assert set(header) == {"alg", "enc", "kid", "cty", "epk"}
        assert (header["alg"], header["enc"], header["cty"]) == ("ECDH-ES", "A256GCM", "application/json")
        assert header["kid"] == thumbprint(pair.spki) == check_frame_key(pair.spki).kid
        assert (header["epk"]["kty"], header["epk"]["crv"]) == ("EC", "P-256") and "d" not in header["epk"]
    # a fresh ephemeral key and IV every time: the same event never looks the same twice
    assert headers[0]["epk"] != headers[1]["epk"] and first.split(".")[2] != second.split(".")[2]


def test_another_p256_key_opens_nothing(pair: FrameKeyPair) -> None:
    jwe = encrypt_for_frame(EVENT, pair.spki)
    other = new_key_pair()
    with pytest.raises(Exception):  # noqa: B017 (the library's own error for a failed tag)
        other.open(jwe)
    with pytest.raises(Exception):  # noqa: B017 (InvalidTag)
        open_by_hand(jwe, other.private)


def flip(text: str, at: int) -> str:
    return text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1 :]


@pytest.mark.parametrize("part", ["header", "encrypted key", "iv", "ciphertext", "tag"])
def test_tampering_with_any_part_opens_nothing(pair: FrameKeyPair, part: str) -> None:
    parts = encrypt_for_frame(EVENT, pair.spki).split(".")
    index = ["header", "encrypted key", "iv", "ciphertext", "tag"].index(part)
    if part == "header":  # a readable change: the same header with another kid
        header = json.loads(unb64url(parts[0]))
        parts[0] = b64url(json.dumps({**header, "kid": "x"}).encode())
    elif part == "encrypted key":  # ECDH-ES has none: one sent is refused
        parts[1] = b64url(b"\x00" * 40)
    else:
        parts[index] = flip(parts[index], 2)
    with pytest.raises(Exception):  # noqa: B017 (each part fails in its own way)
        pair.open(".".join(parts))


def test_a_message_under_another_algorithm_is_refused(pair: FrameKeyPair) -> None:
    parts = encrypt_for_frame(EVENT, pair.spki).split(".")
    header = json.loads(unb64url(parts[0]))
    parts[0] = b64url(json.dumps({**header, "alg": "dir"}).encode())
    with pytest.raises(Exception):  # noqa: B017
        pair.open(".".join(parts))


# --- the key, where it enters ---------------------------------------------------------------------


def test_a_p256_key_is_kept_in_one_spelling(pair: FrameKeyPair) -> None:
    key = check_frame_key(pair.spki)
    assert key.spki == pair.spki and len(key.spki) == 124
    assert check_frame_key(pair.spki.rstrip("=")) == key  # padding optional
    # the point compressed (SPKI of id-ecPublicKey on prime256v1, a 33-byte point): kept uncompressed
    point = pair.private.public_key().public_bytes(Encoding.X962, PublicFormat.CompressedPoint)
    compressed = bytes.fromhex("3039301306072a8648ce3d020106082a8648ce3d030107032200") + point
    assert check_frame_key(base64.b64encode(compressed).decode()) == key


def der_of(key: Any) -> bytes:
    return bytes(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo))


P256_DER = der_of(ec.generate_private_key(ec.SECP256R1()).public_key())
BAD_KEYS = {
    "empty": ("", "must be the base64"),
    "not base64": ("not a key!", "is not standard base64"),
    "base64url alphabet": (b64url(P256_DER).replace("A", "-", 1) + "_", "is not standard base64"),
    "a line break": (base64.encodebytes(P256_DER).decode(), "is not standard base64"),
    "too much padding": (base64.b64encode(P256_DER).decode() + "==", "is not standard base64"),
    "truncated DER": (base64.b64encode(P256_DER[:-5]).decode(), "is not a DER SubjectPublicKeyInfo"),
    "a byte after the DER": (
        base64.b64encode(P256_DER + b"\0").decode(),
        "is not a DER SubjectPublicKeyInfo",
    ),
    "the bare point": (base64.b64encode(P256_DER[-65:]).decode(), "is not a DER SubjectPublicKeyInfo"),
    "RSA": (
        base64.b64encode(der_of(rsa.generate_private_key(65537, 2048).public_key())).decode(),
        "not an RSA key",
    ),
    "Ed25519": (
        base64.b64encode(der_of(ed25519.Ed25519PrivateKey.generate().public_key())).decode(),
        "not an Ed25519 key",
    ),
    "P-384": (
        base64.b64encode(der_of(ec.generate_private_key(ec.SECP384R1()).public_key())).decode(),
        "not on secp384r1",
    ),
    "secp256k1": (
        base64.b64encode(der_of(ec.generate_private_key(ec.SECP256K1()).public_key())).decode(),
        "not on secp256k1",
    ),
    "too long": ("A" * (MAX_KEY_CHARS + 4), f"at most {MAX_KEY_CHARS} characters"),
}


@pytest.mark.parametrize("name", list(BAD_KEYS))
def test_anything_but_a_p256_spki_is_refused_saying_why(name: str) -> None:
    text, why = BAD_KEYS[name]
    with pytest.raises(BadFrameKey, match=why):
        check_frame_key(text)


def test_a_key_is_checked_again_where_it_is_used() -> None:
    with pytest.raises(BadFrameKey):
        encrypt_for_frame(EVENT, BAD_KEYS["P-384"][0])
    with pytest.raises(Exception):  # noqa: B017
        decrypt_from_frame("a.b.c.d.e", new_key_pair().jwk)
