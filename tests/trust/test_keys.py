"""trust.keys: an Ed25519 signature verifies only with its key and its message."""

from __future__ import annotations

from trust.keys import Ed25519KeyPair, verify_signature


def test_signatures_verify_only_with_their_key_and_message() -> None:
    a, b = Ed25519KeyPair.generate(), Ed25519KeyPair.generate()
    sig = a.sign(b"hello")
    assert verify_signature(a.public_key, b"hello", sig)
    assert not verify_signature(a.public_key, b"hellO", sig)
    assert not verify_signature(b.public_key, b"hello", sig)
    assert not verify_signature(a.public_key, b"hello", sig[:-1] + bytes([sig[-1] ^ 1]))
