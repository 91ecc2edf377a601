"""JCS and eddsa-jcs-2022 against the W3C vectors, the independent interop VP, and each refusal."""

from __future__ import annotations

import copy
import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support.vectors import load_vector, vector_names, vector_path
from trust import jcs
from trust.did import Resolver, did_document, key_id
from trust.eddsa_jcs import (
    ASSERTION_METHOD,
    AUTHENTICATION,
    ChallengeMismatch,
    DomainMismatch,
    InvalidSignature,
    MalformedProof,
    ProofCreatedInFuture,
    ProofError,
    ProofExpired,
    UnknownSigner,
    WrongCryptosuite,
    WrongProofPurpose,
    WrongProofType,
    create_proof,
    format_datetime,
    hash_data,
    proof_configuration,
    sign_document,
    verify_document,
    verify_proof,
)
from trust.jcs import CanonicalizationError, canonical_object, canonicalize, canonicalize_reference
from trust.keys import Ed25519KeyPair

JCS_NAMES = vector_names("jcs", "input")
VP_CHALLENGE = "1f44d55f-f161-4938-a659-f8026467f126"
VP_DOMAIN = "issuer.example.com"
NOW = datetime(2023, 2, 25, tzinfo=UTC)


def load(name: str) -> Any:
    return load_vector("eddsa-jcs-2022", name)


def text(name: str) -> str:
    return vector_path("eddsa-jcs-2022", name).read_text().strip()


def vector_key() -> Ed25519KeyPair:
    pair = load("keyPair.json")
    return Ed25519KeyPair.from_private_multikey(
        pair["privateKeyMultibase"], load("proofConfigJCS.json")["verificationMethod"]
    )


# --- JCS ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", JCS_NAMES)
def test_jcs_reproduces_every_vector_on_both_paths(name: str) -> None:
    value = json.loads(vector_path("jcs", "input", name).read_text(encoding="utf-8"))
    expected = vector_path("jcs", "output", name).read_bytes()
    assert canonicalize(value) == expected
    assert canonicalize_reference(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1.5, "b": [1e30, 56.0]},
        {"\U0001f602": 1, "\ufb33": 2},  # UTF-16 order differs from code point order here
        {"ctl": '\x00\x1f\x7f\b\t\n\f\r"\\/'},
    ],
)
def test_the_fast_path_never_differs_from_the_reference(value: Any) -> None:
    assert canonicalize(value) == canonicalize_reference(value)


def test_signed_documents_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the service signs is full of text that looks like numbers (timestamps with fractions,
    URNs whose hex starts with a digit and an ``e``, keys with digits): none of it may send the
    document to the reference path, while a number that only the reference writes right still does."""
    document = {
        "id": "urn:uuid:6e0f1c3a-1d2e-4f5a-8b9c-0d1e2f3a4b5c",
        "createdAt": "2026-11-25T06:58:51.123456Z",
        "validFrom": "2026-11-25T06:58:51Z",
        "seq": 41,
        "quote": 'say "1.5" and \\"2e3\\"',
        "data": {"amount": 950, "limit": 10**15 - 1, "list": [1, -2, "3.5", "1e9"], "ok": True, "no": None},
        "proof": {"proofValue": "z3t9e8sU", "created": "2026-11-25T06:58:51.5Z"},
    }
    expected = canonicalize_reference(document)
    calls: list[Any] = []

    def reference(value: Any) -> bytes:
        calls.append(value)
        return canonicalize_reference(value)

    monkeypatch.setattr("trust.jcs.canonicalize_reference", reference)
    assert canonicalize(document) == expected
    assert calls == []
    for number in (1.5, 1e21, 10**15, -(10**15)):  # a float, or 16 digits: the reference decides
        assert canonicalize({**document, "n": number}) == canonicalize_reference({**document, "n": number})
    assert len(calls) == 4


@pytest.mark.parametrize(
    "number", [1.5, -0.25, 1.0, 1e16, 1e21, -1e-05, 5e-324, 1.5e-07, 2.5e300, 10**15, -(10**20)]
)
@pytest.mark.parametrize("place", ["object", "last", "array", "array end", "nested"])
def test_the_pre_check_sees_every_float_and_long_integer(number: float | int, place: str) -> None:
    """Wherever the encoder writes a float (a fraction or a signed exponent, as Python writes it) or
    an integer of 16 digits, the pre-check passes the text on to the exact expression."""
    value = {
        "object": {"n": number, "t": "06:58:51.123Z"},
        "last": {"a": "x:1.5", "z": number},
        "array": {"a": [number, 1]},
        "array end": {"a": [1, number]},
        "nested": {"a": [{"b": {"c": number}}]},
    }[place]
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert jcs._may_hold_float_or_long(data)
    try:
        expected = canonicalize_reference(value)
    except CanonicalizationError:  # beyond 2^53: refused by both
        with pytest.raises(CanonicalizationError):
            canonicalize(value)
    else:
        assert canonicalize(value) == expected


def test_the_pre_check_clears_text_that_only_looks_like_numbers() -> None:
    data = canonicalize(
        {"at": "2026-11-25T06:58:51.123456Z", "id": "urn:uuid:6e0f1c3e-4d2e", "n": [41, -2, 10**15 - 1]}
    )
    assert not jcs._may_hold_float_or_long(data)


@pytest.mark.parametrize("value", [{"x": float("nan")}, {"x": "\ud800"}, {"x": {1, 2}}, {"big": 2**60}])
def test_values_jcs_cannot_express_are_refused(value: Any) -> None:
    with pytest.raises(CanonicalizationError):
        canonicalize(value)


# --- the W3C eddsa-jcs-2022 vector ----------------------------------------------------------------


def test_every_intermediate_value_of_the_w3c_vector() -> None:
    unsigned = load("unsigned.json")
    options = {k: v for k, v in load("proofConfigJCS.json").items() if k != "@context"}
    config = proof_configuration(unsigned, options)
    assert config == load("proofConfigJCS.json")
    assert canonicalize(unsigned).decode() == text("canonDocJCS.txt")
    assert canonicalize(config).decode() == text("proofCanonJCS.txt")
    doc_hash = hashlib.sha256(canonicalize(unsigned)).hexdigest()
    proof_hash = hashlib.sha256(canonicalize(config)).hexdigest()
    assert doc_hash == text("docHashJCS.txt")
    assert proof_hash == text("proofHashJCS.txt")
    assert hash_data(unsigned, config).hex() == text("combinedHashJCS.txt")
    key = vector_key()
    assert key.public_multikey == load("keyPair.json")["publicKeyMultibase"]
    assert key.sign(hash_data(unsigned, config)).hex() == text("sigHexJCS.txt")
    created = datetime(2023, 2, 24, 23, 36, 38, tzinfo=UTC)
    proof = create_proof(unsigned, key, proof_purpose=ASSERTION_METHOD, created=created)
    assert proof["proofValue"] == text("sigBTC58JCS.txt")
    assert sign_document(unsigned, key, proof_purpose=ASSERTION_METHOD, created=created) == load(
        "signedJCS.json"
    )


def test_the_signed_vector_verifies() -> None:
    verify_document(load("signedJCS.json"), Resolver(), proof_purpose=ASSERTION_METHOD, now=NOW)


def test_the_independent_js_presentation_verifies_with_its_challenge_and_domain() -> None:
    vp = load("interop/js-signed-vp.json")
    verify_document(
        vp, Resolver(), proof_purpose=AUTHENTICATION, challenge=VP_CHALLENGE, domain=VP_DOMAIN, now=NOW
    )
    verify_document(vp["verifiableCredential"][0], Resolver(), proof_purpose=ASSERTION_METHOD, now=NOW)


def test_the_independent_js_presentation_is_refused_with_another_challenge_or_domain() -> None:
    vp = load("interop/js-signed-vp.json")
    with pytest.raises(ChallengeMismatch):
        verify_document(
            vp, Resolver(), proof_purpose=AUTHENTICATION, challenge="another", domain=VP_DOMAIN, now=NOW
        )
    with pytest.raises(DomainMismatch):
        verify_document(
            vp,
            Resolver(),
            proof_purpose=AUTHENTICATION,
            challenge=VP_CHALLENGE,
            domain="verifier.example.org",
            now=NOW,
        )


# --- each refusal, with its own class and code --------------------------------------------------


def signed() -> dict[str, Any]:
    return copy.deepcopy(load("signedJCS.json"))


def check(document: dict[str, Any], error: type[ProofError], code: str, **options: Any) -> None:
    options = {"proof_purpose": ASSERTION_METHOD, "now": NOW, **options}
    with pytest.raises(error) as caught:
        verify_document(document, Resolver(), **options)
    assert type(caught.value) is error
    assert caught.value.code == code


def test_a_tampered_document_is_an_invalid_signature() -> None:
    doc = signed()
    doc["credentialSubject"]["alumniOf"] = "Another School"
    check(doc, InvalidSignature, "signature_invalid")


def test_a_tampered_proof_option_is_an_invalid_signature() -> None:
    doc = signed()
    doc["proof"]["created"] = "2023-02-24T23:36:39Z"
    check(doc, InvalidSignature, "signature_invalid")


def test_a_tampered_proof_value_is_an_invalid_signature() -> None:
    doc = signed()
    value = doc["proof"]["proofValue"]
    doc["proof"]["proofValue"] = value[:-1] + ("Y" if value[-1] != "Y" else "Z")
    check(doc, InvalidSignature, "signature_invalid")


def test_a_wrong_cryptosuite_is_refused() -> None:
    doc = signed()
    doc["proof"]["cryptosuite"] = "eddsa-rdfc-2022"
    check(doc, WrongCryptosuite, "cryptosuite_unsupported")


def test_a_wrong_proof_type_is_refused() -> None:
    doc = signed()
    doc["proof"]["type"] = "Ed25519Signature2020"
    check(doc, WrongProofType, "proof_type_unsupported")


def test_a_wrong_proof_purpose_is_refused() -> None:
    check(signed(), WrongProofPurpose, "proof_purpose_mismatch", proof_purpose=AUTHENTICATION)


def test_an_expected_domain_that_is_absent_is_a_mismatch() -> None:
    check(signed(), DomainMismatch, "domain_mismatch", domain="verifier.example.org")


def test_an_expected_challenge_that_is_absent_is_a_mismatch() -> None:
    check(signed(), ChallengeMismatch, "challenge_mismatch", challenge="nonce")


@pytest.mark.parametrize(
    "member", ["type", "cryptosuite", "verificationMethod", "proofPurpose", "proofValue"]
)
def test_a_proof_without_a_required_member_is_malformed(member: str) -> None:
    doc = signed()
    del doc["proof"][member]
    check(doc, MalformedProof, "proof_malformed")


@pytest.mark.parametrize("value", ["2HnFSSPP", "z0OIl", "z" + "2" * 20])
def test_a_proof_value_that_does_not_decode_is_malformed(value: str) -> None:
    doc = signed()
    doc["proof"]["proofValue"] = value
    check(doc, MalformedProof, "proof_malformed")


def test_a_document_without_proof_is_malformed() -> None:
    check(load("unsigned.json"), MalformedProof, "proof_malformed")


def test_a_proof_context_the_document_does_not_start_with_is_malformed() -> None:
    doc = signed()
    doc["@context"] = doc["@context"][:1]
    check(doc, MalformedProof, "proof_malformed")


def test_an_unknown_verification_method_is_refused() -> None:
    doc = signed()
    did = doc["proof"]["verificationMethod"].split("#")[0]
    doc["proof"]["verificationMethod"] = f"{did}#key-2"  # a fragment the did:key does not list
    check(doc, UnknownSigner, "verification_method_unknown")
    doc["proof"]["verificationMethod"] = "did:web:nowhere.example#key-1"
    check(doc, UnknownSigner, "verification_method_unknown")


def our_key() -> tuple[Ed25519KeyPair, Resolver]:
    did = "did:web:mandatum.test"
    pair = Ed25519KeyPair.generate()
    pair = pair.with_verification_method(key_id(did, pair.public_multikey))
    doc = did_document(did, [pair.public_multikey])
    return pair, Resolver(lambda d: doc if d == did else None)


def test_an_expired_proof_is_refused_and_a_current_one_accepted() -> None:
    key, resolver = our_key()
    created = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    doc = sign_document(
        {"id": "urn:x"},
        key,
        proof_purpose=AUTHENTICATION,
        created=created,
        expires=created + timedelta(minutes=5),
        challenge="c",
    )
    verify_document(
        doc, resolver, proof_purpose=AUTHENTICATION, challenge="c", now=created + timedelta(minutes=4)
    )
    with pytest.raises(ProofExpired) as caught:
        verify_document(
            doc, resolver, proof_purpose=AUTHENTICATION, challenge="c", now=created + timedelta(minutes=6)
        )
    assert caught.value.code == "proof_expired"


def test_a_proof_created_in_the_future_is_refused_beyond_the_skew() -> None:
    key, resolver = our_key()
    created = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    doc = sign_document({"id": "urn:x"}, key, proof_purpose=ASSERTION_METHOD, created=created)
    verify_document(doc, resolver, proof_purpose=ASSERTION_METHOD, now=created - timedelta(seconds=30))
    with pytest.raises(ProofCreatedInFuture) as caught:
        verify_document(doc, resolver, proof_purpose=ASSERTION_METHOD, now=created - timedelta(hours=1))
    assert caught.value.code == "proof_created_in_future"


def test_every_error_kind_has_its_own_code() -> None:
    kinds = [
        MalformedProof,
        WrongProofType,
        WrongCryptosuite,
        WrongProofPurpose,
        DomainMismatch,
        ChallengeMismatch,
        ProofExpired,
        ProofCreatedInFuture,
        UnknownSigner,
        InvalidSignature,
    ]
    assert len({k.code for k in kinds}) == len(kinds)
    assert all(issubclass(k, ProofError) for k in kinds)


def test_extra_members_are_signed_and_proof_sets_need_every_proof() -> None:
    key, resolver = our_key()
    other, _ = our_key()
    created = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
    document = {"@context": ["https://www.w3.org/ns/credentials/v2"], "id": "urn:x"}
    proof = create_proof(
        document,
        key,
        proof_purpose=ASSERTION_METHOD,
        created=created,
        extra={"actionType": "ISSUE", "createdAt": format_datetime(created)},
    )
    assert proof["created"] == "2026-01-01T12:00:00Z"
    assert proof["@context"] == document["@context"]
    verify_proof(document, proof, resolver, proof_purpose=ASSERTION_METHOD, now=created)
    with pytest.raises(InvalidSignature):
        verify_proof(
            document, {**proof, "actionType": "REVOKE"}, resolver, proof_purpose=ASSERTION_METHOD, now=created
        )
    second = create_proof(document, key, proof_purpose=ASSERTION_METHOD, created=created)
    verify_document(
        {**document, "proof": [proof, second]}, resolver, proof_purpose=ASSERTION_METHOD, now=created
    )
    stranger = create_proof(document, other, proof_purpose=ASSERTION_METHOD, created=created)
    with pytest.raises(UnknownSigner):
        verify_document(
            {**document, "proof": [proof, stranger]}, resolver, proof_purpose=ASSERTION_METHOD, now=created
        )
    with pytest.raises(ValueError):
        create_proof(
            document,
            key,
            proof_purpose=ASSERTION_METHOD,
            created=created,
            extra={"proofPurpose": "authentication"},
        )


def _generated(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value of the kinds that decide between the two paths: floats, integers about
    2^53, strings with controls, escapes, numbers-looking text and characters outside the BMP in
    keys and values, nesting."""
    alphabet = [
        "a",
        "Z",
        "\x00",
        "\x1f",
        '"',
        "\\",
        "/",
        ":",
        ",",
        "[",
        "1",
        ".",
        "e",
        "\u00e9",
        "\ufb33",
        "\uffff",
        "\U0001f602",
        "\U00010000",
        "\ud83d",  # a lone surrogate: neither path can write it
    ]
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice(
            [0, -1, 2**53 - 1, -(2**53) + 1, 10**15, 999_999_999_999_999, rng.randrange(-(10**6), 10**6)]
        )
    if kind == 2:
        return rng.choice([0.5, -0.0, 1e21, 1e-7, 123456789.125, float(rng.randrange(100)), 1 / 3])
    if kind in (3, 4, 5):
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if kind in (6, 7):
        return {
            "".join(rng.choice(alphabet) for _ in range(rng.randrange(4))): _generated(rng, depth + 1)
            for _ in range(rng.randrange(5))
        }
    return [_generated(rng, depth + 1) for _ in range(rng.randrange(5))]


def test_the_fast_path_agrees_with_the_reference_on_generated_values() -> None:
    rng = random.Random(8785)
    for _ in range(3000):
        value = _generated(rng)
        try:
            expected = canonicalize_reference(value)
        except CanonicalizationError:
            with pytest.raises(CanonicalizationError):
                canonicalize(value)
            continue
        assert canonicalize(value) == expected, value


def test_an_object_assembled_from_canonical_members_is_its_canonical_form() -> None:
    """``canonical_object`` (the audit record's members encoded once) gives exactly JCS, keys in
    UTF-16 order included (the non-BMP key sorts before U+FB33 there, after it by code point); a
    key JCS cannot hold (a lone surrogate) is refused as ``canonicalize`` refuses it."""
    rng = random.Random(2022)
    checked = refused = 0
    for _ in range(500):
        value = _generated(rng)
        if not isinstance(value, dict):
            value = {"v": value}
        value.update({"\U0001f602": 1, "\ufb33": [2], "proof": {"a": "b"}})
        try:
            members = {name: canonicalize(member) for name, member in value.items()}
        except CanonicalizationError:
            continue  # a value JCS cannot hold: never assembled
        try:
            expected = canonicalize_reference(value)
        except CanonicalizationError:
            with pytest.raises(CanonicalizationError):
                canonical_object(members)
            refused += 1
            continue
        assert canonical_object(members) == expected, value
        checked += 1
    assert checked > 300 and refused > 0
