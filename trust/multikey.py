"""Multibase (base58btc, prefix ``z``) and Multikey encodings of Ed25519 keys.

A Multikey is the multibase of a multicodec-prefixed key: ``0xed 0x01`` for an Ed25519 public
key (``z6Mk…``), ``0x80 0x26`` for an Ed25519 secret seed (``z3u2…``).
"""

from __future__ import annotations

from functools import lru_cache

import base58

ED25519_PUB_PREFIX = b"\xed\x01"
ED25519_PRIV_PREFIX = b"\x80\x26"


class MultibaseError(ValueError):
    pass


def encode_base58btc(data: bytes) -> str:
    return "z" + base58.b58encode(data).decode("ascii")


_B58_INDEX = {char: i for i, char in enumerate(base58.BITCOIN_ALPHABET.decode("ascii"))}


def decode_base58btc(value: str) -> bytes:
    # Our own decoder: one big-int accumulation and ``int.to_bytes``, several times faster than
    # the ``base58`` package's byte-by-byte divmod (it runs on every proofValue we verify).
    if not isinstance(value, str) or not value.startswith("z") or len(value) < 2:
        raise MultibaseError("not a base58btc multibase value (must start with 'z')")
    number = 0
    try:
        for char in value[1:]:
            number = number * 58 + _B58_INDEX[char]
    except KeyError as exc:
        raise MultibaseError(f"invalid base58btc character {exc}") from exc
    zeros = len(value) - 1 - len(value[1:].lstrip("1"))
    return b"\0" * zeros + number.to_bytes((number.bit_length() + 7) // 8, "big")


def _encode(prefix: bytes, key: bytes) -> str:
    if len(key) != 32:
        raise MultibaseError("an Ed25519 key is 32 bytes")
    return encode_base58btc(prefix + key)


def _decode(prefix: bytes, value: str, what: str) -> bytes:
    raw = decode_base58btc(value)
    if not raw.startswith(prefix) or len(raw) != len(prefix) + 32:
        raise MultibaseError(f"not an Ed25519 {what} Multikey")
    return raw[len(prefix) :]


def encode_public_key(public_key: bytes) -> str:
    return _encode(ED25519_PUB_PREFIX, public_key)


@lru_cache(maxsize=1024)  # a pure function of the string; DID documents repeat the same keys
def decode_public_key(multikey: str) -> bytes:
    return _decode(ED25519_PUB_PREFIX, multikey, "public key")


def encode_private_key(seed: bytes) -> str:
    return _encode(ED25519_PRIV_PREFIX, seed)


def decode_private_key(multikey: str) -> bytes:
    return _decode(ED25519_PRIV_PREFIX, multikey, "secret key")
