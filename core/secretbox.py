"""Encryption of stored secrets (API signature secrets, webhook secrets, signing keys) under the
master key."""

from __future__ import annotations

import hashlib

from nacl.secret import SecretBox


class SecretCipher:
    """XSalsa20-Poly1305 (PyNaCl SecretBox) with a random nonce per value."""

    def __init__(self, master_key: bytes) -> None:
        # Derive a purpose-bound key so the master key itself never encrypts anything directly.
        self._box = SecretBox(hashlib.blake2b(master_key, digest_size=32, person=b"mdt-secrets").digest())

    def encrypt(self, plaintext: str) -> bytes:
        return bytes(self._box.encrypt(plaintext.encode()))

    def decrypt(self, ciphertext: bytes) -> str:
        return self._box.decrypt(ciphertext).decode()


def hash_api_key(api_key: str) -> str:
    """API keys carry 256 bits of randomness, so a plain SHA-256 is a sufficient one-way store."""
    return hashlib.sha256(api_key.encode()).hexdigest()
