"""Multikey encodings, Ed25519 key pairs and did:key resolution against the did:key vectors."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.vectors import vector_params
from trust.did import Resolver, UnknownVerificationMethod, did_document, did_key_document, key_id
from trust.keys import Ed25519KeyPair, verify_signature
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


def test_signatures_verify_only_with_their_key_and_message() -> None:
    a, b = Ed25519KeyPair.generate(), Ed25519KeyPair.generate()
    sig = a.sign(b"hello")
    assert verify_signature(a.public_key, b"hello", sig)
    assert not verify_signature(a.public_key, b"hellO", sig)
    assert not verify_signature(b.public_key, b"hello", sig)
    assert not verify_signature(a.public_key, b"hello", sig[:-1] + bytes([sig[-1] ^ 1]))


def test_our_did_documents_list_every_key_for_both_relationships() -> None:
    did = "did:web:mandatum.test:orgs:6b024f482d684ce25172847f"
    old, new = Ed25519KeyPair.generate(), Ed25519KeyPair.generate()
    doc = did_document(did, [new.public_multikey, old.public_multikey])
    resolver = Resolver(lambda d: doc if d == did else None)
    for pair in (old, new):
        vm = key_id(did, pair.public_multikey)
        assert resolver.public_key(vm, "assertionMethod") == pair.public_key
        assert resolver.public_key(vm, "authentication") == pair.public_key
    with pytest.raises(UnknownVerificationMethod):
        resolver.public_key(key_id(did, Ed25519KeyPair.generate().public_multikey), "assertionMethod")
    with pytest.raises(UnknownVerificationMethod):
        resolver.public_key(key_id("did:web:elsewhere.example", old.public_multikey), "assertionMethod")


def test_a_method_not_listed_for_the_purpose_is_refused() -> None:
    did = "did:web:mandatum.test"
    pair = Ed25519KeyPair.generate()
    doc = did_document(did, [pair.public_multikey])
    doc["authentication"] = []
    with pytest.raises(UnknownVerificationMethod, match="not authorized"):
        Resolver(lambda d: doc).public_key(key_id(did, pair.public_multikey), "authentication")


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


def test_a_method_missing_from_a_cached_document_is_looked_up_fresh_once() -> None:
    did = "did:web:mandatum.test"
    old, new = Ed25519KeyPair.generate(), Ed25519KeyPair.generate()
    stale, current = (
        did_document(did, [old.public_multikey]),
        did_document(did, [new.public_multikey, old.public_multikey]),
    )
    fresh_reads: list[str] = []

    def fresh(d: str) -> dict[str, Any]:
        fresh_reads.append(d)
        return current

    resolver = Resolver(lambda d: stale, fetch_fresh=fresh)
    assert resolver.public_key(key_id(did, old.public_multikey), "assertionMethod") == old.public_key
    assert fresh_reads == []  # found in the cached document: no extra read
    assert resolver.public_key(key_id(did, new.public_multikey), "assertionMethod") == new.public_key
    assert fresh_reads == [did]
    with pytest.raises(UnknownVerificationMethod):  # without a fresh fetcher the stale view stands
        Resolver(lambda d: stale).public_key(key_id(did, new.public_multikey), "assertionMethod")
    with pytest.raises(UnknownVerificationMethod):  # unknown even when fresh: still refused
        resolver.public_key(key_id(did, Ed25519KeyPair.generate().public_multikey), "assertionMethod")
