"""Mandate and document forms, the VP, digests: each verifies, and each tampering is caught."""

from __future__ import annotations

import base64
import copy
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from trust.credentials import (
    CredentialProofError,
    WrongSigner,
    action_pin,
    add_document_action,
    digest_sri,
    document_credential,
    evidence_entry,
    from_standard,
    mandate_credential,
    presentation,
    presentation_domain,
    reason_code,
    sri_sha256,
    to_standard,
    validity_error,
    verify_document_credential,
    verify_mandate,
    verify_presentation,
)
from trust.did import Resolver, did_document, key_id
from trust.eddsa_jcs import (
    ChallengeMismatch,
    DomainMismatch,
    InvalidSignature,
    MalformedProof,
    ProofError,
    ProofExpired,
    UnknownSigner,
    WrongProofPurpose,
    verify_document,
)
from trust.jcs import canonicalize
from trust.keys import Ed25519KeyPair

BASE = "https://mandatum.test"
SERVICE = "did:web:mandatum.test"
ORG = "did:web:mandatum.test:orgs:6b024f482d684ce25172847f"
SUBJECT = "did:web:mandatum.test:subjects:0b8f3f3e-3e0c-4b7e-9a57-0d8f5c0c1a11"
VERIFIER = "did:web:verifier.example"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MANDATE_ID = "urn:via:credential:2f0c6a1e-8c4b-4d2e-9f3a-6b7c8d9e0f12"
PRESENTATION_ID = "urn:via:presentation:9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"


@dataclass
class Parties:
    service: Ed25519KeyPair
    org: Ed25519KeyPair
    resolver: Resolver
    documents: dict[str, dict[str, Any]]


def keyed(did: str) -> Ed25519KeyPair:
    pair = Ed25519KeyPair.generate()
    return pair.with_verification_method(key_id(did, pair.public_multikey))


@pytest.fixture
def parties() -> Parties:
    service, org = keyed(SERVICE), keyed(ORG)
    documents = {
        SERVICE: did_document(SERVICE, [service.public_multikey]),
        ORG: did_document(ORG, [org.public_multikey]),
    }
    return Parties(service, org, Resolver(documents.get), documents)


def mandate(p: Parties, **changes: Any) -> dict[str, Any]:
    options: dict[str, Any] = dict(
        credential_id=MANDATE_ID,
        issuer_key=p.service,
        context_url=BASE + "/ns/v1",
        organization_did=ORG,
        grantors=[SUBJECT],
        scope="payments",
        authorized_dids=[ORG, VERIFIER],
        valid_from=NOW,
        valid_until=NOW + timedelta(days=30),
        created=NOW,
        action=action_pin(
            "urn:via:action:1",
            "urn:via:action-version:1",
            digest_sri({"rules": []}),
            {"maxAmount": 100, "currencies": ["EUR"]},
        ),
        evidences=[evidence_entry("urn:via:evidence:1", b"%PDF-1.7", BASE + "/evidence/1")],
    )
    options.update(changes)
    return mandate_credential(**options)


def vp(p: Parties, credential: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    options: dict[str, Any] = dict(
        holder_did=ORG,
        presentation_id=PRESENTATION_ID,
        challenge="nonce-1",
        created=NOW,
        expires=NOW + timedelta(minutes=5),
        domain=VERIFIER,
    )
    options.update(changes)
    key = options.pop("holder_key", p.org)
    return presentation(credential or mandate(p), key, **options)


# --- digests ------------------------------------------------------------------------------------


def test_digests_are_sha256_sri_of_the_bytes_or_the_jcs_form() -> None:
    content = b"evidence bytes"
    expected = "sha256-" + base64.b64encode(hashlib.sha256(content).digest()).decode()
    assert sri_sha256(content) == expected
    assert evidence_entry("urn:e", content, "https://x/e")["digestSRI"] == expected
    value = {"b": [1, "é"], "a": True}
    jcs = '{"a":true,"b":[1,"é"]}'.encode()
    assert canonicalize(value) == jcs
    assert digest_sri(value) == "sha256-" + base64.b64encode(hashlib.sha256(jcs).digest()).decode()


# --- mandate form -------------------------------------------------------------------------------


def test_the_mandate_form_has_spec_shape_and_verifies(parties: Parties) -> None:
    credential = mandate(parties)
    assert credential["@context"] == ["https://www.w3.org/ns/credentials/v2", BASE + "/ns/v1"]
    assert credential["type"] == ["VerifiableCredential", "VIAMandate"]
    assert credential["issuer"] == SERVICE
    assert credential["validFrom"] == "2026-03-01T12:00:00Z"
    assert credential["credentialSubject"]["mandate"]["context"]["authorizedDIDs"] == [ORG, VERIFIER]
    assert "proof" not in credential and len(credential["proofs"]) == 1
    proof = credential["proofs"][0]
    assert proof["proofPurpose"] == "assertionMethod"
    assert proof["verificationMethod"] == parties.service.verification_method
    verify_mandate(credential, parties.resolver, now=NOW)
    standard = to_standard(credential)
    assert standard["proof"] == proof and "proofs" not in standard
    verify_document(standard, parties.resolver, proof_purpose="assertionMethod", now=NOW)


def test_a_mandate_without_end_has_no_valid_until(parties: Parties) -> None:
    """VC Data Model 2.0: validUntil is a date-time or absent; a null is not a value."""
    credential = mandate(parties, valid_until=None, action=None, evidences=[])
    assert "validUntil" not in credential
    verify_mandate(credential, parties.resolver, now=NOW)
    ended = {**credential, "validUntil": "2099-01-01T00:00:00Z"}
    with pytest.raises(InvalidSignature):  # an end added afterwards breaks the proof
        verify_mandate(ended, parties.resolver, now=NOW)


def test_to_standard_and_from_standard_round_trip(parties: Parties) -> None:
    credential = mandate(parties)
    assert from_standard(to_standard(credential)) == credential
    standard = to_standard(credential)
    assert to_standard(from_standard(standard)) == standard
    two = {**credential, "proofs": credential["proofs"] * 2}
    assert to_standard(two)["proof"] == two["proofs"]
    assert from_standard(to_standard(two)) == two


@pytest.mark.parametrize(
    "tamper",
    [
        lambda c: c["credentialSubject"].update(id="did:web:evil.example"),
        lambda c: c["credentialSubject"]["mandate"]["grantor"].append("did:web:someone"),
        lambda c: c["credentialSubject"]["mandate"]["context"]["authorizedDIDs"].append("did:web:x"),
        lambda c: c["credentialSubject"]["mandate"]["action"]["userParams"].update(maxAmount=1000),
        lambda c: c["evidences"][0].update(digestSRI=sri_sha256(b"other")),
        lambda c: c.update(validUntil="2099-01-01T00:00:00Z"),
        lambda c: c.update(validUntil=None),
        lambda c: c["proofs"][0].update(created="2026-03-01T12:00:01Z"),
    ],
    ids=[
        "subject",
        "grantor",
        "authorizedDIDs",
        "userParams",
        "evidences",
        "validUntil",
        "validUntil-null",
        "proof-created",
    ],
)
def test_tampering_any_signed_member_of_a_mandate_breaks_it(parties: Parties, tamper: Any) -> None:
    credential = mandate(parties)
    tamper(credential)
    with pytest.raises(InvalidSignature):
        verify_mandate(credential, parties.resolver, now=NOW)


def test_a_mandate_signed_by_another_than_its_issuer_is_refused(parties: Parties) -> None:
    credential = mandate(parties, issuer_key=parties.org)  # issuer = ORG, valid signature
    verify_mandate(credential, parties.resolver, now=NOW)
    forged = {**credential, "issuer": SERVICE}
    with pytest.raises(WrongSigner):
        verify_mandate(forged, parties.resolver, now=NOW)


def test_a_mandate_signed_by_a_retired_key_still_verifies(parties: Parties) -> None:
    credential = mandate(parties)
    newer = keyed(SERVICE)
    parties.documents[SERVICE] = did_document(
        SERVICE, [newer.public_multikey, parties.service.public_multikey]
    )
    verify_mandate(credential, parties.resolver, now=NOW)
    parties.documents[SERVICE] = did_document(SERVICE, [newer.public_multikey])
    with pytest.raises(UnknownSigner):
        verify_mandate(credential, parties.resolver, now=NOW)


def test_the_validity_window(parties: Parties) -> None:
    credential = mandate(parties)
    assert validity_error(credential, NOW) is None
    assert validity_error(credential, NOW - timedelta(seconds=1)) == "not_yet_valid"
    assert validity_error(credential, NOW + timedelta(days=30)) == "expired"
    assert validity_error(mandate(parties, valid_until=None), NOW + timedelta(days=3650)) is None


# --- document form ------------------------------------------------------------------------------


def document(p: Parties) -> dict[str, Any]:
    return document_credential(
        credential_id=MANDATE_ID,
        issuer_key=p.service,
        context_url=BASE + "/ns/v1",
        organization_did=ORG,
        valid_from=NOW,
        valid_until=None,
        issuance_date=NOW,
        data=[{"label": "Name", "type": "text", "value": "Ada", "hidden": False, "fields": []}],
    )


def test_the_document_form_has_spec_shape_and_verifies_as_a_standard_vc(parties: Parties) -> None:
    doc = document(parties)
    assert doc["issuanceDate"] == "2026-03-01T12:00:00Z"
    assert doc["type"] == ["VerifiableCredential", "VIADocument"]
    assert doc["credentialSubject"]["data"][0]["label"] == "Name"
    [proof] = doc["proof"]
    assert proof["actionType"] == "ISSUE"
    assert proof["createdAt"] == proof["created"] == "2026-03-01T12:00:00Z"
    assert proof["actionProof"] == digest_sri({k: v for k, v in doc.items() if k != "proof"})
    verify_document_credential(doc, parties.resolver, now=NOW)
    verify_document(doc, parties.resolver, proof_purpose="assertionMethod", now=NOW)


def test_document_actions_accumulate_and_are_signed(parties: Parties) -> None:
    doc = add_document_action(document(parties), parties.service, "REVOKE", NOW + timedelta(days=1))
    assert [p["actionType"] for p in doc["proof"]] == ["ISSUE", "REVOKE"]
    verify_document_credential(doc, parties.resolver, now=NOW + timedelta(days=1))
    tampered = copy.deepcopy(doc)
    tampered["proof"][1]["actionType"] = "ISSUE"
    with pytest.raises(InvalidSignature):
        verify_document_credential(tampered, parties.resolver, now=NOW + timedelta(days=1))
    tampered = copy.deepcopy(doc)
    tampered["credentialSubject"]["data"][0]["value"] = "Eve"
    with pytest.raises(InvalidSignature):
        verify_document_credential(tampered, parties.resolver, now=NOW + timedelta(days=1))


# --- the VP ---------------------------------------------------------------------------------------


def test_a_presentation_has_spec_shape_and_verifies(parties: Parties) -> None:
    credential = mandate(parties)
    presented = vp(parties, credential)
    assert presented["holder"] == ORG and presented["type"] == ["VerifiablePresentation"]
    assert presented["verifiableCredential"] == credential
    proof = presented["proof"]
    assert proof["proofPurpose"] == "authentication"
    assert (proof["challenge"], proof["domain"]) == ("nonce-1", VERIFIER)
    assert proof["expires"] == "2026-03-01T12:05:00Z"
    assert presentation_domain(presented) == VERIFIER
    found = verify_presentation(
        presented, parties.resolver, challenge="nonce-1", domain=VERIFIER, now=NOW + timedelta(minutes=1)
    )
    assert found == credential
    unbound = vp(parties, credential, domain=None)
    assert "domain" not in unbound["proof"] and presentation_domain(unbound) is None
    verify_presentation(unbound, parties.resolver, challenge="nonce-1", now=NOW)


def failure(
    p: Parties, presented: dict[str, Any], error: type[ProofError], reason: str, **options: Any
) -> ProofError:
    options = {"challenge": "nonce-1", "domain": VERIFIER, "now": NOW, **options}
    with pytest.raises(error) as caught:
        verify_presentation(presented, p.resolver, **options)
    assert reason_code(caught.value) == reason
    return caught.value


def test_a_presentation_with_another_challenge_or_domain_fails(parties: Parties) -> None:
    presented = vp(parties)
    failure(parties, presented, ChallengeMismatch, "vp_proof_invalid", challenge="nonce-2")
    failure(parties, presented, DomainMismatch, "vp_domain_mismatch", domain="did:web:other.example")
    unbound = vp(parties, domain=None)
    failure(parties, unbound, DomainMismatch, "vp_domain_mismatch")


def test_an_expired_presentation_fails(parties: Parties) -> None:
    failure(parties, vp(parties), ProofExpired, "expired", now=NOW + timedelta(minutes=6))


def test_a_presentation_signed_by_a_key_not_in_the_holder_document_fails(parties: Parties) -> None:
    failure(parties, vp(parties, holder_key=keyed(ORG)), UnknownSigner, "vp_signer_unknown")


def test_a_presentation_signed_by_another_party_fails(parties: Parties) -> None:
    presented = vp(parties, holder_key=parties.service, holder_did=SERVICE)
    presented["holder"] = ORG
    failure(parties, presented, WrongSigner, "vp_signer_unknown")


def test_a_presentation_whose_holder_is_not_the_subject_fails(parties: Parties) -> None:
    other = keyed("did:key:placeholder")
    did = "did:key:" + other.public_multikey
    other = other.with_verification_method(f"{did}#{other.public_multikey}")
    presented = vp(parties, holder_key=other, holder_did=did)
    failure(parties, presented, WrongSigner, "vp_signer_unknown")


def test_a_tampered_presentation_fails_its_signature(parties: Parties) -> None:
    presented = vp(parties)
    presented["id"] = "urn:via:presentation:another"
    failure(parties, presented, InvalidSignature, "vp_signature_invalid")


def test_a_presentation_with_a_tampered_mandate_fails_on_the_credential(parties: Parties) -> None:
    credential = mandate(parties)
    credential["credentialSubject"]["mandate"]["scope"] = "everything"
    presented = vp(parties, credential)  # the holder signs the tampered mandate: its VP proof holds
    error = failure(parties, presented, CredentialProofError, "credential_signature_invalid")
    assert isinstance(error, CredentialProofError) and isinstance(error.cause, InvalidSignature)
    assert reason_code(InvalidSignature("x"), in_credential=True) == "credential_signature_invalid"


def test_a_presentation_with_a_wrong_purpose_or_no_credential_is_malformed(parties: Parties) -> None:
    presented = vp(parties)
    presented["proof"]["proofPurpose"] = "assertionMethod"
    failure(parties, presented, WrongProofPurpose, "vp_proof_invalid")
    empty = {k: v for k, v in vp(parties).items() if k != "verifiableCredential"}
    failure(parties, empty, MalformedProof, "vp_proof_invalid")


def test_a_presentation_always_needs_a_challenge_and_the_holder_key(parties: Parties) -> None:
    with pytest.raises(ValueError):
        vp(parties, challenge="")
    with pytest.raises(ValueError):
        vp(parties, holder_key=parties.service)


def member_names(value: Any, json_literals: frozenset[str] = frozenset({"userParams", "data"})) -> set[str]:
    """Every object member name in ``value``, not descending into our JSON-literal terms."""
    if isinstance(value, list):
        return set().union(*(member_names(v) for v in value)) if value else set()
    if not isinstance(value, dict):
        return set()
    names = set(value)
    for name, item in value.items():
        if name not in json_literals:
            names |= member_names(item)
    return names


def test_every_member_our_documents_use_is_defined_by_v2_or_our_context(parties: Parties) -> None:
    from tests.support.receipts import OUR_MEMBERS, V2_TERMS, denied

    used = member_names([vp(parties), document(parties), denied(parties.service)])
    assert used - {"@context"} <= OUR_MEMBERS | V2_TERMS
