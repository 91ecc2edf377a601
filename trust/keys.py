"""Ed25519 key pairs (PyNaCl) as the rest of the trust core uses them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from trust.multikey import decode_private_key, encode_private_key, encode_public_key


@dataclass(frozen=True)
class Ed25519KeyPair:
    """A signing key and the verification method id it signs as (``did#fragment``)."""

    seed: bytes = field(repr=False)
    verification_method: str = ""

    @classmethod
    def generate(cls, verification_method: str = "") -> Ed25519KeyPair:
        return cls(bytes(SigningKey.generate()), verification_method)

    @classmethod
    def from_private_multikey(cls, multikey: str, verification_method: str = "") -> Ed25519KeyPair:
        return cls(decode_private_key(multikey), verification_method)

    @cached_property
    def _signing_key(self) -> SigningKey:
        # Deriving the key from the seed costs about one signature; do it once per pair.
        return SigningKey(self.seed)

    @property
    def public_key(self) -> bytes:
        return bytes(self._signing_key.verify_key)

    @property
    def public_multikey(self) -> str:
        return encode_public_key(self.public_key)

    @property
    def private_multikey(self) -> str:
        return encode_private_key(self.seed)

    def with_verification_method(self, verification_method: str) -> Ed25519KeyPair:
        return Ed25519KeyPair(self.seed, verification_method)

    def sign(self, message: bytes) -> bytes:
        return self._signing_key.sign(message).signature


def verify_signature(public_key: bytes, message: bytes, signature: bytes) -> bool:
    try:
        VerifyKey(public_key).verify(message, signature)
    except (BadSignatureError, ValueError):
        return False
    return True
