"""Signed receipts (CONTRACT 5) and our JSON-LD context."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.receipts import EVALUATIONS, NOW, OUR_MEMBERS, V2_TERMS, denied
from trust.context import CONTEXT_PATH, CREDENTIALS_V2, VOCAB, context_document, context_url
from trust.credentials import WrongSigner, digest_sri
from trust.did import Resolver, did_document, key_id
from trust.eddsa_jcs import InvalidSignature, MalformedProof, UnknownSigner
from trust.keys import Ed25519KeyPair
from trust.receipts import MANDATE_REVOKED, receipt, verify_receipt

SERVICE = "did:web:mandatum.test"


@pytest.fixture
def service() -> tuple[Ed25519KeyPair, Resolver]:
    pair = Ed25519KeyPair.generate()
    pair = pair.with_verification_method(key_id(SERVICE, pair.public_multikey))
    doc = did_document(SERVICE, [pair.public_multikey])
    return pair, Resolver(lambda did: doc if did == SERVICE else None)


def test_a_receipt_has_the_contract_members_and_verifies(service: tuple[Ed25519KeyPair, Resolver]) -> None:
    key, resolver = service
    signed = denied(key)
    assert signed["@context"] == [CREDENTIALS_V2, "https://mandatum.test/ns/v1"]
    assert signed["timestamp"] == "2026-03-01T12:00:00Z"
    assert signed["evaluationsDigest"] == digest_sri(EVALUATIONS)
    assert "requestId" not in signed
    assert signed["proof"]["proofPurpose"] == "assertionMethod"
    assert signed["proof"]["created"] == signed["timestamp"]
    verify_receipt(signed, resolver, issuer_did=SERVICE, evaluations=EVALUATIONS)


def test_absent_members_are_omitted_not_null(service: tuple[Ed25519KeyPair, Resolver]) -> None:
    key, resolver = service
    signed = receipt(
        key=key,
        context_url="https://mandatum.test",
        receipt_id="urn:via:receipt:2",
        type=MANDATE_REVOKED,
        timestamp=NOW,
        credential_id="urn:via:credential:1",
        reason="user_initiated",
        evaluations=[],
    )
    assert set(signed) == {
        "@context",
        "id",
        "type",
        "timestamp",
        "credentialId",
        "reason",
        "evaluationsDigest",
        "proof",
    }
    assert signed["evaluationsDigest"] == digest_sri([])
    assert signed["@context"][1] == "https://mandatum.test/ns/v1"
    verify_receipt(signed, resolver)


@pytest.mark.parametrize(
    "member,value",
    [
        ("decision", "allow"),
        ("reason", None),
        ("credentialId", "urn:via:credential:2"),
        ("timestamp", "2026-03-01T12:00:01Z"),
    ],
)
def test_tampering_a_receipt_breaks_it(
    service: tuple[Ed25519KeyPair, Resolver], member: str, value: Any
) -> None:
    key, resolver = service
    signed = denied(key)
    if value is None:
        del signed[member]
    else:
        signed[member] = value
    with pytest.raises(InvalidSignature):
        verify_receipt(signed, resolver)


def test_a_receipt_by_another_key_or_with_other_evaluations_is_refused(
    service: tuple[Ed25519KeyPair, Resolver],
) -> None:
    key, resolver = service
    stranger = Ed25519KeyPair.generate()
    stranger = stranger.with_verification_method(key_id(SERVICE, stranger.public_multikey))
    with pytest.raises(UnknownSigner):
        verify_receipt(denied(stranger), resolver)
    with pytest.raises(WrongSigner):
        verify_receipt(denied(key), resolver, issuer_did="did:web:elsewhere.example")
    with pytest.raises(MalformedProof):
        verify_receipt(denied(key), resolver, evaluations=[])
    with pytest.raises(ValueError):
        receipt(
            key=key,
            context_url="https://x",
            receipt_id="urn:via:receipt:3",
            type="OTHER",
            timestamp=NOW,
            credential_id="urn:via:credential:1",
        )


# --- the context ----------------------------------------------------------------------------------


def test_the_context_defines_our_terms_and_none_of_v2s() -> None:
    terms = context_document()["@context"]
    assert terms.pop("@protected") is True
    assert set(terms) == OUR_MEMBERS
    assert not set(terms) & V2_TERMS
    for name, definition in terms.items():
        iri = definition if isinstance(definition, str) else definition["@id"]
        assert iri.startswith((VOCAB, "https://www.w3.org/2018/credentials#")), name
    assert json.loads(json.dumps(context_document())) == context_document()


def test_the_context_url_is_the_stable_path_on_the_service() -> None:
    assert CONTEXT_PATH == "/ns/v1"
    assert context_url("https://mandatum.test/") == "https://mandatum.test/ns/v1"
