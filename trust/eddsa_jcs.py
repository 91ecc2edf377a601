"""The ``eddsa-jcs-2022`` Data Integrity cryptosuite (W3C vc-di-eddsa), create and verify.

Signing (vc-di-eddsa "Create Proof (eddsa-jcs-2022)"):

- the proof configuration is the proof options without ``proofValue``; when the document has an
  ``@context`` the configuration's ``@context`` is set to it;
- hash data = SHA-256(JCS(proof configuration)) || SHA-256(JCS(document without ``proof``)),
  64 bytes;
- the Ed25519 signature over those bytes, encoded ``z`` + base58btc, is the ``proofValue``.

Verification reverses it: when the proof carries an ``@context``, the document's ``@context``
must start with it and the document is hashed with the proof's ``@context`` (as the spec says).
``extra`` members given to ``create_proof`` (our document form's ``actionType``, ``actionProof``
and ``createdAt``) are ordinary members of the proof configuration, so they are signed and any
standard verifier checks them without knowing what they mean.

Dates are RFC 3339 UTC at whole seconds, ``YYYY-MM-DDTHH:MM:SSZ`` (the W3C vectors' form):
``format_datetime`` drops sub-second precision, so a proof made from a ``datetime`` always
carries that form. Verification accepts any RFC 3339 date-time an independent signer may use.

Each way a proof can fail has its own ``ProofError`` subclass with a stable ``code``, so callers
(the verify endpoint, receipts) can say exactly which check refused it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

from trust.did import Resolver, UnknownVerificationMethod
from trust.jcs import CanonicalizationError, canonicalize
from trust.keys import Ed25519KeyPair
from trust.multikey import MultibaseError, decode_base58btc, encode_base58btc

PROOF_TYPE = "DataIntegrityProof"
CRYPTOSUITE = "eddsa-jcs-2022"
ASSERTION_METHOD = "assertionMethod"
AUTHENTICATION = "authentication"
# How far in the future a proof's ``created`` may lie before it is refused (clock drift).
CLOCK_SKEW = timedelta(minutes=2)
REQUIRED_MEMBERS = ("type", "cryptosuite", "verificationMethod", "proofPurpose", "proofValue")


class ProofError(Exception):
    """A proof that does not verify; ``code`` names the failed check."""

    code = "proof_invalid"


class MalformedProof(ProofError):
    """A required member is missing or not a string, a date or the proofValue does not decode."""

    code = "proof_malformed"


class WrongProofType(ProofError):
    code = "proof_type_unsupported"


class WrongCryptosuite(ProofError):
    code = "cryptosuite_unsupported"


class WrongProofPurpose(ProofError):
    code = "proof_purpose_mismatch"


class DomainMismatch(ProofError):
    """The expected domain is not the proof's (or the proof has none)."""

    code = "domain_mismatch"


class ChallengeMismatch(ProofError):
    code = "challenge_mismatch"


class ProofExpired(ProofError):
    code = "proof_expired"


class ProofCreatedInFuture(ProofError):
    code = "proof_created_in_future"


class UnknownSigner(ProofError):
    """The verification method does not resolve to a key allowed for the proof purpose."""

    code = "verification_method_unknown"


class InvalidSignature(ProofError):
    """The signature does not match: the document or a signed proof member was changed."""

    code = "signature_invalid"


def format_datetime(moment: datetime) -> str:
    """RFC 3339 UTC at whole seconds: ``2023-02-24T23:36:38Z``."""
    if moment.tzinfo is None:
        raise ValueError("datetimes in proofs must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_datetime(value: Any, member: str = "date") -> datetime:
    """An RFC 3339 date-time with a zone (``Z`` or an offset); MalformedProof otherwise."""
    if not isinstance(value, str) or "T" not in value.upper():
        raise MalformedProof(f"{member} is not an RFC 3339 date-time")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise MalformedProof(f"{member} is not an RFC 3339 date-time: {value!r}") from exc
    if parsed.tzinfo is None:
        raise MalformedProof(f"{member} has no time zone: {value!r}")
    return parsed


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def proof_configuration(document: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The proof options without ``proofValue``, with the document's ``@context`` when it has one."""
    config = {k: v for k, v in options.items() if k != "proofValue"}
    if "@context" in document:
        config["@context"] = document["@context"]
    return config


def unsecured(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document without its ``proof``."""
    return {k: v for k, v in document.items() if k != "proof"}


def hash_data(
    document: Mapping[str, Any], config: Mapping[str, Any], canonical_document: bytes | None = None
) -> bytes:
    """SHA-256(JCS(proof configuration)) || SHA-256(JCS(unsecured document)); the second from
    ``canonical_document`` when the caller has those bytes already."""
    try:
        if canonical_document is None:
            canonical_document = canonicalize(unsecured(document))
        return _sha256(canonicalize(config)) + _sha256(canonical_document)
    except CanonicalizationError as exc:
        raise MalformedProof(f"not canonicalizable JSON: {exc}") from exc


def create_proof(
    document: Mapping[str, Any],
    key: Ed25519KeyPair,
    *,
    proof_purpose: str,
    created: datetime,
    challenge: str | None = None,
    domain: str | None = None,
    expires: datetime | None = None,
    extra: Mapping[str, Any] | None = None,
    canonical_document: bytes | None = None,
) -> dict[str, Any]:
    """The signed proof object for ``document`` (whose own ``proof`` member, if any, is ignored).
    ``canonical_document``, when given, must be the JCS bytes of ``document`` without its proof."""
    if not key.verification_method:
        raise ValueError("the key pair has no verification method id")
    options: dict[str, Any] = {
        "type": PROOF_TYPE,
        "cryptosuite": CRYPTOSUITE,
        "created": format_datetime(created),
        "verificationMethod": key.verification_method,
        "proofPurpose": proof_purpose,
    }
    if expires is not None:
        options["expires"] = format_datetime(expires)
    if challenge is not None:
        options["challenge"] = challenge
    if domain is not None:
        options["domain"] = domain
    for name, value in (extra or {}).items():
        if name in options or name in ("proofValue", "@context"):
            raise ValueError(f"extra proof member {name!r} would replace a standard one")
        options[name] = value
    config = proof_configuration(document, options)
    proof = dict(config)
    proof["proofValue"] = encode_base58btc(key.sign(hash_data(document, config, canonical_document)))
    return proof


def sign_document(document: Mapping[str, Any], key: Ed25519KeyPair, **options: Any) -> dict[str, Any]:
    """``document`` with a ``proof`` member made by ``create_proof(document, key, **options)``."""
    secured = unsecured(document)
    secured["proof"] = create_proof(secured, key, **options)
    return secured


def _check_members(proof: Mapping[str, Any]) -> None:
    if not isinstance(proof, Mapping):
        raise MalformedProof("a proof is a JSON object")
    for name in REQUIRED_MEMBERS:
        if not isinstance(proof.get(name), str) or not proof[name]:
            raise MalformedProof(f"the proof has no {name}")
    if proof["type"] != PROOF_TYPE:
        raise WrongProofType(f"proof type {proof['type']!r} is not {PROOF_TYPE}")
    if proof["cryptosuite"] != CRYPTOSUITE:
        raise WrongCryptosuite(f"cryptosuite {proof['cryptosuite']!r} is not {CRYPTOSUITE}")


def _check_options(
    proof: Mapping[str, Any], *, proof_purpose: str, challenge: str | None, domain: str | None, now: datetime
) -> None:
    if proof["proofPurpose"] != proof_purpose:
        raise WrongProofPurpose(f"proof purpose {proof['proofPurpose']!r}, expected {proof_purpose!r}")
    if domain is not None:
        found = proof.get("domain")
        domains = found if isinstance(found, list) else [found]
        if domain not in domains:
            raise DomainMismatch(f"proof domain {found!r}, expected {domain!r}")
    if challenge is not None and proof.get("challenge") != challenge:
        raise ChallengeMismatch("the proof's challenge is not the expected one")
    if "created" in proof and parse_datetime(proof["created"], "created") > now + CLOCK_SKEW:
        raise ProofCreatedInFuture(f"proof created {proof['created']}, after {format_datetime(now)}")
    if "expires" in proof and parse_datetime(proof["expires"], "expires") < now:
        raise ProofExpired(f"proof expired at {proof['expires']}")


_verify_keys: dict[bytes, VerifyKey] = {}


def _verify_key(public_key: bytes) -> VerifyKey:
    found = _verify_keys.get(public_key)
    if found is None:
        if len(_verify_keys) > 1024:
            _verify_keys.clear()
        found = _verify_keys[public_key] = VerifyKey(public_key)
    return found


# Signatures found valid, each as its public key, signed bytes and signature: a mandate's VC
# comes back inside every VP made of it, and its Ed25519 check, a pure function of those three, is
# then not run again (over a tenth of a verification's instructions went to two Ed25519 checks).
# Only successes are kept; bounded, emptied when full (the mandates in use come back at once).
_VERIFIED: set[tuple[bytes, bytes, bytes]] = set()
VERIFIED_MAX = 4096


def _signature_verified(public_key: bytes, message: bytes, signature: bytes) -> None:
    """Return when ``signature`` is ``public_key``'s Ed25519 signature of ``message``; raise
    BadSignatureError (or ValueError for a malformed key) otherwise."""
    seen = (public_key, message, signature)
    if seen in _VERIFIED:
        return
    _verify_key(public_key).verify(message, signature)
    if len(_VERIFIED) >= VERIFIED_MAX:
        _VERIFIED.clear()
    _VERIFIED.add(seen)


def verify_proof(
    document: Mapping[str, Any],
    proof: Mapping[str, Any],
    resolver: Resolver,
    *,
    proof_purpose: str,
    challenge: str | None = None,
    domain: str | None = None,
    now: datetime | None = None,
) -> None:
    """Return when ``proof`` is a valid eddsa-jcs-2022 proof of ``document``; else a ProofError.

    ``document`` may still hold its ``proof`` member (it is left out of the hash). ``challenge``
    and ``domain``, when given, must be the proof's; ``expires`` must not be past ``now``.
    """
    _check_members(proof)
    now = now or datetime.now(UTC)
    _check_options(proof, proof_purpose=proof_purpose, challenge=challenge, domain=domain, now=now)
    try:
        signature = decode_base58btc(proof["proofValue"])
    except MultibaseError as exc:
        raise MalformedProof(f"proofValue: {exc}") from exc
    if len(signature) != 64:
        raise MalformedProof("proofValue is not a 64-byte Ed25519 signature")
    if "@context" in proof:
        context = proof["@context"]
        doc_context = document.get("@context")
        theirs = doc_context if isinstance(doc_context, list) else [doc_context]
        ours = context if isinstance(context, list) else [context]
        if theirs[: len(ours)] != ours:
            raise MalformedProof("the document's @context does not start with the proof's @context")
        if doc_context != context:
            document = {**document, "@context": context}
    config = proof_configuration(document, proof)
    try:
        public_key = resolver.public_key(proof["verificationMethod"], proof_purpose)
    except UnknownVerificationMethod as exc:
        raise UnknownSigner(str(exc)) from exc
    try:
        _signature_verified(public_key, hash_data(document, config), signature)
    except (BadSignatureError, ValueError) as exc:
        raise InvalidSignature("the signature does not match the document and proof") from exc


def proofs_of(secured: Mapping[str, Any], member: str = "proof") -> list[Mapping[str, Any]]:
    """The proof set under ``member``: one object or a non-empty list of them."""
    found = secured.get(member)
    items: list[Any] = found if isinstance(found, list) else [found]
    proofs = [p for p in items if isinstance(p, Mapping)]
    if not proofs or len(proofs) != len(items):
        raise MalformedProof(f"the document has no {member}")
    return proofs


def verify_document(
    secured: Mapping[str, Any],
    resolver: Resolver,
    *,
    proof_purpose: str,
    challenge: str | None = None,
    domain: str | None = None,
    now: datetime | None = None,
) -> None:
    """Verify ``secured["proof"]``; with a proof set (a list) every proof must verify."""
    document = unsecured(secured)
    for proof in proofs_of(secured):
        verify_proof(
            document,
            proof,
            resolver,
            proof_purpose=proof_purpose,
            challenge=challenge,
            domain=domain,
            now=now,
        )
