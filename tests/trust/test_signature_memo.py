"""A signature found valid is not checked by Ed25519 again (``trust.eddsa_jcs._VERIFIED``): a
mandate's VC comes back inside every VP made of it. Everything else about a proof is still checked
each time, a changed document or proof value is checked anew, failures are not remembered, and the
memo is bounded."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support.vectors import load_vector
from trust import eddsa_jcs
from trust.did import Resolver
from trust.eddsa_jcs import (
    ASSERTION_METHOD,
    InvalidSignature,
    ProofCreatedInFuture,
    ProofError,
    sign_document,
    verify_document,
)
from trust.keys import Ed25519KeyPair

NOW = datetime(2023, 2, 25, tzinfo=UTC)


def signed() -> dict[str, Any]:
    return copy.deepcopy(load_vector("eddsa-jcs-2022", "signedJCS.json"))


def vector_key() -> Ed25519KeyPair:
    pair = load_vector("eddsa-jcs-2022", "keyPair.json")
    method = load_vector("eddsa-jcs-2022", "proofConfigJCS.json")["verificationMethod"]
    return Ed25519KeyPair.from_private_multikey(pair["privateKeyMultibase"], method)


def check(document: dict[str, Any], error: type[ProofError], code: str) -> None:
    with pytest.raises(error) as caught:
        verify_document(document, Resolver(), proof_purpose=ASSERTION_METHOD, now=NOW)
    assert type(caught.value) is error and caught.value.code == code


@pytest.fixture
def ed25519_checks(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The messages Ed25519 is asked to check from here on, with the memo of valid ones empty."""
    from nacl.signing import VerifyKey

    monkeypatch.setattr(eddsa_jcs, "_VERIFIED", set())
    checked: list[bytes] = []
    real = VerifyKey.verify

    def counted(self: VerifyKey, smessage: bytes, signature: bytes | None = None, *args: Any) -> bytes:
        checked.append(smessage)
        return real(self, smessage, signature, *args)

    monkeypatch.setattr(VerifyKey, "verify", counted)
    return checked


def test_a_signature_found_valid_is_not_checked_again(ed25519_checks: list[bytes]) -> None:
    for _ in range(3):
        verify_document(signed(), Resolver(), proof_purpose=ASSERTION_METHOD, now=NOW)
    assert len(ed25519_checks) == 1
    # the proof's other checks still run each time: an expired one is refused after a success
    with pytest.raises(ProofCreatedInFuture):
        verify_document(signed(), Resolver(), proof_purpose=ASSERTION_METHOD, now=NOW - timedelta(days=9))
    assert len(ed25519_checks) == 1


def test_after_a_success_a_tampered_copy_is_still_checked_and_refused(ed25519_checks: list[bytes]) -> None:
    verify_document(signed(), Resolver(), proof_purpose=ASSERTION_METHOD, now=NOW)
    doc = signed()
    doc["credentialSubject"]["alumniOf"] = "Another School"
    check(doc, InvalidSignature, "signature_invalid")
    doc = signed()
    value = doc["proof"]["proofValue"]
    doc["proof"]["proofValue"] = value[:-1] + ("Y" if value[-1] != "Y" else "Z")
    check(doc, InvalidSignature, "signature_invalid")
    assert len(ed25519_checks) == 3


def test_a_failed_check_is_not_remembered(ed25519_checks: list[bytes]) -> None:
    doc = signed()
    doc["credentialSubject"]["alumniOf"] = "Another School"
    for _ in range(2):
        check(doc, InvalidSignature, "signature_invalid")
    assert len(ed25519_checks) == 2
    assert not eddsa_jcs._VERIFIED


def test_the_memo_of_valid_signatures_is_bounded(
    ed25519_checks: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eddsa_jcs, "VERIFIED_MAX", 3)
    key = vector_key()
    documents = [
        sign_document({"id": f"urn:x:{i}"}, key, proof_purpose=ASSERTION_METHOD, created=NOW)
        for i in range(4)
    ]
    for document in documents:
        verify_document(document, Resolver(), proof_purpose=ASSERTION_METHOD, now=NOW)
    assert len(eddsa_jcs._VERIFIED) == 1  # emptied at the fourth, which is then kept
    verify_document(documents[3], Resolver(), proof_purpose=ASSERTION_METHOD, now=NOW)
    verify_document(documents[0], Resolver(), proof_purpose=ASSERTION_METHOD, now=NOW)
    assert len(ed25519_checks) == 5
