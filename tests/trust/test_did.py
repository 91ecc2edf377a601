"""trust.did: our DID documents list every key for both relationships, and the resolver refuses a
method not listed for the purpose and looks a method missing from a cached document up afresh."""

from __future__ import annotations

from typing import Any

import pytest

from trust.did import Resolver, UnknownVerificationMethod, did_document, key_id
from trust.keys import Ed25519KeyPair


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
