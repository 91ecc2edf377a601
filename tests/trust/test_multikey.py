"""trust.multikey: Multikey and base58btc encodings, and did:key documents and resolution, against the
did:key vectors; malformed Multikeys refused."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.vectors import vector_params
from trust.did import Resolver, did_key_document
from trust.keys import Ed25519KeyPair
from trust.multikey import MultibaseError, decode_public_key, encode_private_key, encode_public_key

DID_KEY = vector_params("did-key", "ed25519-multikey-vectors.json")


@pytest.mark.parametrize("vector", DID_KEY, ids=lambda v: str(v["did"][-8:]))
def test_multikeys_and_did_key_documents_match_the_vectors(vector: dict[str, Any]) -> None:
    seed = bytes.fromhex(vector["seedHex"])
    pair = Ed25519KeyPair(seed)
    assert pair.public_key.hex() == vector["publicKeyHex"]
    assert pair.public_multikey == vector["publicKeyMultibase"]
    assert encode_private_key(seed) == vector["secretKeyMultibase"]
    assert decode_public_key(vector["publicKeyMultibase"]).hex() == vector["publicKeyHex"]
    document = did_key_document(vector["did"])
    expected = vector["didDocument"]
    assert document["id"] == expected["id"]
    ours = {m["id"]: m["publicKeyMultibase"] for m in document["verificationMethod"]}
    theirs = {m["id"]: m["publicKeyMultibase"] for m in expected["verificationMethod"]}
    assert ours == theirs
    vm = next(iter(theirs))
    assert Resolver().public_key(vm, "assertionMethod").hex() == vector["publicKeyHex"]
    assert Resolver().public_key(vm, "authentication").hex() == vector["publicKeyHex"]


@pytest.mark.parametrize("bad", ["", "6Mk", "zz", "z" + "1" * 10, encode_private_key(b"\x01" * 32)])
def test_malformed_multikeys_are_refused(bad: str) -> None:
    with pytest.raises(MultibaseError):
        decode_public_key(bad)
    with pytest.raises(MultibaseError):
        encode_public_key(b"short")


def test_base58btc_decoding_matches_the_reference_package_with_leading_zeros() -> None:
    import base58

    from trust.multikey import decode_base58btc, encode_base58btc

    for data in [b"\0", b"\0\0\x01", b"\x00" * 3 + bytes(range(1, 64)), bytes(range(256)), b"\xff" * 64]:
        encoded = "z" + base58.b58encode(data).decode()
        assert encode_base58btc(data) == encoded
        assert decode_base58btc(encoded) == data
    with pytest.raises(MultibaseError):
        decode_base58btc("z0OIl")
