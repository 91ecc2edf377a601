"""core.secretbox: stored secrets encrypted with fresh nonces, and API keys' hashes."""

from __future__ import annotations

import pytest

from core.secretbox import SecretCipher, hash_api_key


def test_cipher_round_trip_and_fresh_nonces() -> None:
    cipher = SecretCipher(b"m" * 32)
    a, b = cipher.encrypt("same"), cipher.encrypt("same")
    assert a != b and b"same" not in a
    assert cipher.decrypt(a) == cipher.decrypt(b) == "same"
    with pytest.raises(Exception):  # noqa: B017 - PyNaCl's CryptoError
        SecretCipher(b"n" * 32).decrypt(a)


def test_api_key_hash_is_sha256_hex() -> None:
    assert hash_api_key("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
