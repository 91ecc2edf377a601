"""Builders and verifiers for our credentials (SPEC "W3C credential"), digests and the VP.

Pure: the caller passes ids, times, keys and the context URL; nothing here reads a clock or a
database. Every signature is a standard eddsa-jcs-2022 proof (``trust.eddsa_jcs``).

Mandate form (a ``POLICY`` credential, SPEC "mandate form"):
    ``{@context: [credentials v2, ours], id: urn:via:credential:<uuid>, type: [VerifiableCredential,
    VIAMandate], issuer: <service DID>, validFrom, validUntil (or null), credentialSubject: {id:
    <organization DID>, mandate: {grantor: [<subject DIDs>], scope, context: {authorizedDIDs},
    action?: {id, version, digestSRI, userParams}}}, evidences: [{id, digestSRI, location}],
    proofs: [<proof>]}``.
    The proof is an ordinary proof (purpose ``assertionMethod``, the issuer's key) over the
    credential without ``proofs``. SPEC names the member ``proofs`` (a list); a standard verifier
    reads the credential after renaming ``proofs`` to ``proof`` (``to_standard``; ``from_standard``
    goes back). ``evidences`` (SPEC's plural) and ``action`` are ordinary signed members defined by
    our context, so changing any of them breaks the proof. The action pin sits under
    ``credentialSubject.mandate.action``: the action id, the pinned version id, the version's
    ``digestSRI`` (``digest_sri`` of its JCS form) and the ``userParams`` approved by the user.

Document form (a ``DOCUMENT`` credential, SPEC "document form"):
    as the mandate form but type ``[VerifiableCredential, VIADocument]``, an ``issuanceDate``,
    ``credentialSubject: {id, data: [...], placements?: [...]}`` and the signatures under ``proof``
    (a list); a placement names its signer by DID (``{subject, type, identityType?, x, y, width,
    height, pageIndex}``), so it is signed with what the subjects approved. Each
    proof carries ``actionType`` (``ISSUE``, ...), ``actionProof`` and ``createdAt`` as extra members
    of the signed proof configuration, beside the standard ``created`` (same instant), so a
    standard verifier accepts the document as it is. ``actionProof`` is the ``digest_sri`` of the
    credential without ``proof``: it names the exact content the action applied to, and a reader
    can match it against an audit record without recomputing the signature.

Verifiable Presentation (SPEC "VP", CONTRACT 5):
    ``{@context (the mandate's), id: urn:via:presentation:<uuid>, type: [VerifiablePresentation],
    holder: <organization DID>, verifiableCredential: <mandate form>, proof}`` with purpose
    ``authentication`` by the organization's key, always a ``challenge``, ``domain`` when bound to
    a verifier, and ``expires``. A standard verifier renames the embedded ``proofs`` to ``proof``
    before checking the credential; the VP proof itself covers the mandate form as embedded.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from trust.context import contexts
from trust.did import Resolver
from trust.eddsa_jcs import (
    ASSERTION_METHOD,
    AUTHENTICATION,
    DomainMismatch,
    InvalidSignature,
    MalformedProof,
    ProofError,
    ProofExpired,
    UnknownSigner,
    create_proof,
    format_datetime,
    parse_datetime,
    proofs_of,
    unsecured,
    verify_document,
    verify_proof,
)
from trust.jcs import canonicalize
from trust.keys import Ed25519KeyPair

MANDATE_TYPE = "VIAMandate"
DOCUMENT_TYPE = "VIADocument"
ISSUE = "ISSUE"


class WrongSigner(ProofError):
    """A valid signature by someone other than the issuer (credential) or holder (VP)."""

    code = "signer_mismatch"


class CredentialProofError(ProofError):
    """The credential embedded in a VP failed; ``cause`` is the underlying ProofError."""

    code = "credential_proof_invalid"

    def __init__(self, cause: ProofError) -> None:
        super().__init__(f"embedded credential: {cause} ({cause.code})")
        self.cause = cause


# --- digests and evidences -------------------------------------------------------------------------


def sri_sha256(content: bytes) -> str:
    """The Subresource Integrity form of SHA-256: ``sha256-`` + base64 (padded) of the digest."""
    return "sha256-" + base64.b64encode(hashlib.sha256(content).digest()).decode("ascii")


def digest_sri(value: Any) -> str:
    """``sri_sha256`` of the JCS form of a JSON value (action versions, evaluations, credentials)."""
    return sri_sha256(canonicalize(value))


def evidence_entry(evidence_id: str, content: bytes, location: str) -> dict[str, str]:
    """One ``evidences`` item: the evidence's id, the SRI digest of its bytes and where it is."""
    return {"id": evidence_id, "digestSRI": sri_sha256(content), "location": location}


def action_pin(
    action_id: str, version_id: str, version_digest: str, user_params: Mapping[str, Any]
) -> dict[str, Any]:
    """``credentialSubject.mandate.action``: the pinned action version and the approved params."""
    return {
        "id": action_id,
        "version": version_id,
        "digestSRI": version_digest,
        "userParams": dict(user_params),
    }


# --- helpers -------------------------------------------------------------------------------------


def _did_of(verification_method: str) -> str:
    return verification_method.split("#", 1)[0]


def _issuer_did(credential: Mapping[str, Any]) -> str:
    issuer = credential.get("issuer")
    return str(issuer.get("id", "")) if isinstance(issuer, Mapping) else str(issuer or "")


def _signing_did(key: Ed25519KeyPair) -> str:
    if "#" not in key.verification_method:
        raise ValueError("the key pair needs a verification method id (did#fragment)")
    return _did_of(key.verification_method)


def _check_signers(proofs: Sequence[Mapping[str, Any]], did: str, what: str) -> None:
    for proof in proofs:
        if _did_of(str(proof.get("verificationMethod", ""))) != did:
            raise WrongSigner(f"a proof is not by the {what} {did}")


def _subject(
    organization_did: str, members: Mapping[str, Any], signer_qualities: Sequence[Mapping[str, str]]
) -> dict[str, Any]:
    """``credentialSubject``: the organization, the form's members, and ``signerQualities`` only
    when a signer has one (a credential without them is signed exactly as before)."""
    subject: dict[str, Any] = {"id": organization_did, **members}
    if signer_qualities:
        subject["signerQualities"] = [dict(q) for q in signer_qualities]
    return subject


# --- mandate form --------------------------------------------------------------------------------


def mandate_credential(
    *,
    credential_id: str,
    issuer_key: Ed25519KeyPair,
    context_url: str,
    organization_did: str,
    grantors: Sequence[str],
    scope: str,
    authorized_dids: Sequence[str],
    valid_from: datetime,
    valid_until: datetime | None,
    created: datetime,
    action: Mapping[str, Any] | None = None,
    evidences: Sequence[Mapping[str, str]] = (),
    credential_status: Mapping[str, Any] | None = None,
    limits: Sequence[Mapping[str, Any]] | None = None,
    max_executions: int | None = None,
    signer_qualities: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """The signed mandate, in the mandate form (signatures under ``proofs``); ``credential_status``
    is its W3C status entry (a BitstringStatusListEntry) when given; ``limits`` (the action's use
    limits, each ``max`` resolved) and ``max_executions`` (the request's) when it has them;
    ``signer_qualities`` (``{id: <grantor DID>, signerQuality}``, in which capacity each grantor
    signed) when any grantor has one."""
    mandate: dict[str, Any] = {
        "grantor": list(grantors),
        "scope": scope,
        "context": {"authorizedDIDs": list(authorized_dids)},
    }
    if action is not None:
        mandate["action"] = dict(action)
    if limits:
        mandate["limits"] = [dict(limit) for limit in limits]
    if max_executions is not None:
        mandate["maxExecutions"] = max_executions
    credential: dict[str, Any] = {
        "@context": contexts(context_url),
        "id": credential_id,
        "type": ["VerifiableCredential", MANDATE_TYPE],
        "issuer": _signing_did(issuer_key),
        "validFrom": format_datetime(valid_from),
        "credentialSubject": _subject(organization_did, {"mandate": mandate}, signer_qualities),
        "evidences": [dict(e) for e in evidences],
    }
    if valid_until is not None:  # VC Data Model 2.0: a date-time or no member at all, never null
        credential["validUntil"] = format_datetime(valid_until)
    if credential_status is not None:
        credential["credentialStatus"] = dict(credential_status)
    proof = create_proof(credential, issuer_key, proof_purpose=ASSERTION_METHOD, created=created)
    return {**credential, "proofs": [proof]}


def to_standard(mandate_form: Mapping[str, Any]) -> dict[str, Any]:
    """The standard VC: ``proofs`` renamed ``proof`` (one object when there is one proof)."""
    standard = {k: v for k, v in mandate_form.items() if k != "proofs"}
    proofs = mandate_form.get("proofs")
    if proofs is not None:
        standard["proof"] = proofs[0] if isinstance(proofs, list) and len(proofs) == 1 else proofs
    return standard


def from_standard(standard: Mapping[str, Any]) -> dict[str, Any]:
    """The mandate form of a standard VC: ``proof`` (object or list) renamed ``proofs`` (a list)."""
    form = {k: v for k, v in standard.items() if k != "proof"}
    proof = standard.get("proof")
    if proof is not None:
        form["proofs"] = list(proof) if isinstance(proof, list) else [proof]
    return form


def verify_credential(
    standard: Mapping[str, Any], resolver: Resolver, *, now: datetime | None = None
) -> None:
    """Every proof (purpose assertionMethod) is valid and made by the credential's issuer."""
    _check_signers(proofs_of(standard), _issuer_did(standard), "issuer")
    verify_document(standard, resolver, proof_purpose=ASSERTION_METHOD, now=now)


def verify_mandate(
    mandate_form: Mapping[str, Any], resolver: Resolver, *, now: datetime | None = None
) -> None:
    """The mandate form's ``proofs`` verify as a standard VC's proof set (ProofError otherwise)."""
    verify_credential(to_standard(mandate_form), resolver, now=now)


def validity_error(credential: Mapping[str, Any], now: datetime) -> str | None:
    """``not_yet_valid`` / ``expired`` (CONTRACT 5) for the credential's window at ``now``."""
    if credential.get("validFrom") and parse_datetime(credential["validFrom"], "validFrom") > now:
        return "not_yet_valid"
    if credential.get("validUntil") and parse_datetime(credential["validUntil"], "validUntil") <= now:
        return "expired"
    return None


# --- document form -------------------------------------------------------------------------------


def _action_proof(
    document: Mapping[str, Any], key: Ed25519KeyPair, action_type: str, created: datetime
) -> dict[str, Any]:
    extra = {
        "actionType": action_type,
        "actionProof": digest_sri(unsecured(document)),
        "createdAt": format_datetime(created),
    }
    return create_proof(
        unsecured(document), key, proof_purpose=ASSERTION_METHOD, created=created, extra=extra
    )


def document_credential(
    *,
    credential_id: str,
    issuer_key: Ed25519KeyPair,
    context_url: str,
    organization_did: str,
    data: Sequence[Mapping[str, Any]],
    valid_from: datetime,
    valid_until: datetime | None,
    issuance_date: datetime,
    evidences: Sequence[Mapping[str, str]] = (),
    action_type: str = ISSUE,
    credential_status: Mapping[str, Any] | None = None,
    signer_qualities: Sequence[Mapping[str, str]] = (),
    placements: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The signed document form, with one ``proof`` item of ``action_type`` made at issuance (and
    ``signer_qualities`` as the mandate form has them); ``placements`` (where each signer's marks go
    on the document's pages) join its subject."""
    credential: dict[str, Any] = {
        "@context": contexts(context_url),
        "id": credential_id,
        "type": ["VerifiableCredential", DOCUMENT_TYPE],
        "issuer": _signing_did(issuer_key),
        "issuanceDate": format_datetime(issuance_date),
        "validFrom": format_datetime(valid_from),
        "credentialSubject": _subject(
            organization_did, {"data": [dict(item) for item in data]}, signer_qualities
        ),
        "evidences": [dict(e) for e in evidences],
    }
    if placements:
        credential["credentialSubject"]["placements"] = [dict(p) for p in placements]
    if valid_until is not None:
        credential["validUntil"] = format_datetime(valid_until)
    if credential_status is not None:
        credential["credentialStatus"] = dict(credential_status)
    return {**credential, "proof": [_action_proof(credential, issuer_key, action_type, issuance_date)]}


def add_document_action(
    document: Mapping[str, Any], key: Ed25519KeyPair, action_type: str, created: datetime
) -> dict[str, Any]:
    """The document with one more signed ``proof`` item recording ``action_type``."""
    proofs = proofs_of(document) if "proof" in document else []
    return {**unsecured(document), "proof": [*proofs, _action_proof(document, key, action_type, created)]}


def verify_document_credential(
    document: Mapping[str, Any], resolver: Resolver, *, now: datetime | None = None
) -> None:
    """Every proof item verifies, is the issuer's, and its ``actionProof`` names this content."""
    verify_credential(document, resolver, now=now)
    expected = digest_sri(unsecured(document))
    for proof in proofs_of(document):
        if proof.get("actionProof") != expected:
            raise MalformedProof("actionProof does not match the credential's content")


# --- the VP ---------------------------------------------------------------------------------------


def presentation(
    mandate_form: Mapping[str, Any],
    holder_key: Ed25519KeyPair,
    *,
    holder_did: str,
    presentation_id: str,
    challenge: str,
    created: datetime,
    expires: datetime,
    domain: str | None = None,
) -> dict[str, Any]:
    """A VP of the mandate by its holder (the organization), bound to ``challenge`` (and ``domain``)."""
    if _signing_did(holder_key) != holder_did:
        raise ValueError("the holder key is not one of the holder DID's keys")
    if not challenge:
        raise ValueError("a presentation always carries a challenge")
    vp = {
        "@context": list(mandate_form["@context"]),
        "id": presentation_id,
        "type": ["VerifiablePresentation"],
        "holder": holder_did,
        "verifiableCredential": dict(mandate_form),
    }
    proof = create_proof(
        vp,
        holder_key,
        proof_purpose=AUTHENTICATION,
        created=created,
        challenge=challenge,
        domain=domain,
        expires=expires,
    )
    return {**vp, "proof": proof}


def presented_credential(vp: Mapping[str, Any]) -> dict[str, Any]:
    """The one credential a VP carries, in the mandate form."""
    found = vp.get("verifiableCredential")
    if isinstance(found, list) and len(found) == 1:
        found = found[0]
    if not isinstance(found, Mapping):
        raise MalformedProof("the presentation carries no single credential")
    return dict(found) if "proofs" in found else from_standard(found)


def presentation_domain(vp: Mapping[str, Any]) -> str | None:
    """The verifier a VP is bound to (its proof's ``domain``), if any."""
    proof = vp.get("proof")
    domain = proof.get("domain") if isinstance(proof, Mapping) else None
    return domain if isinstance(domain, str) else None


def verify_presentation(
    vp: Mapping[str, Any],
    resolver: Resolver,
    *,
    challenge: str,
    domain: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Verify the VP proof, then the embedded credential; return the credential (mandate form).

    VP failures raise the eddsa_jcs errors (or WrongSigner when the proof is not the holder's or
    the holder is not the credential's subject); credential failures raise CredentialProofError.
    """
    proof = vp.get("proof")
    if not isinstance(proof, Mapping) or "VerifiablePresentation" not in (vp.get("type") or []):
        raise MalformedProof("not a presentation with one proof")
    holder = str(vp.get("holder", ""))
    credential = presented_credential(vp)
    _check_signers([proof], holder, "holder")
    verify_proof(
        vp, proof, resolver, proof_purpose=AUTHENTICATION, challenge=challenge, domain=domain, now=now
    )
    subject = credential.get("credentialSubject")
    if not isinstance(subject, Mapping) or subject.get("id") != holder:
        raise WrongSigner("the holder is not the credential's subject")
    try:
        verify_mandate(credential, resolver, now=now)
    except ProofError as exc:
        raise CredentialProofError(exc) from exc
    return credential


def reason_code(error: ProofError, in_credential: bool = False) -> str:
    """The CONTRACT 5 reason for a failed VP or embedded-credential check."""
    if in_credential or isinstance(error, CredentialProofError):
        return "credential_signature_invalid"
    if isinstance(error, UnknownSigner | WrongSigner):
        return "vp_signer_unknown"
    if isinstance(error, InvalidSignature):
        return "vp_signature_invalid"
    if isinstance(error, DomainMismatch):
        return "vp_domain_mismatch"
    if isinstance(error, ProofExpired):
        return "expired"
    return "vp_proof_invalid"  # malformed, type, cryptosuite, purpose, challenge, created ahead
