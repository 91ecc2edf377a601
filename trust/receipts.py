"""Signed receipts (CONTRACT section 5): what the service attests it did, checkable offline.

``{@context, id: urn:via:receipt:<uuid>, type, timestamp, credentialId, requestId?, presentationId?,
decision?, reason?, verifier?, evaluationsDigest?, proof}``. Absent members are omitted, never
null. ``evaluationsDigest`` is ``digest_sri`` of the JCS form of the evaluations list (given an
empty list, the digest of ``[]``), so a receipt pins the exact per-rule results without carrying
them. The proof is an eddsa-jcs-2022 DataIntegrityProof by the service key, purpose
``assertionMethod``, created at the receipt's ``timestamp``.

``@context`` is ``[credentials v2, ours]`` rather than ours alone: v2 defines ``id``, ``type`` and
``DataIntegrityProof`` (whose terms the proof uses), and Data Integrity libraries look for it (or
the data-integrity context) before they accept a proof; our context defines the receipt types
(with ``proof``) and members.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from trust.context import RECEIPT_TYPES, contexts
from trust.credentials import WrongSigner, digest_sri
from trust.did import Resolver
from trust.eddsa_jcs import ASSERTION_METHOD, MalformedProof, format_datetime, proofs_of, sign_document
from trust.eddsa_jcs import verify_document as _verify_document
from trust.keys import Ed25519KeyPair

PRESENTATION_ISSUED, VERIFICATION_APPROVED, VERIFICATION_DENIED, MANDATE_REVOKED = RECEIPT_TYPES


def receipt(
    *,
    key: Ed25519KeyPair,
    context_url: str,
    receipt_id: str,
    type: str,
    timestamp: datetime,
    credential_id: str,
    request_id: str | None = None,
    presentation_id: str | None = None,
    decision: str | None = None,
    reason: str | None = None,
    verifier: str | None = None,
    evaluations: Sequence[Mapping[str, Any]] | None = None,
    limits: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A signed receipt of ``type`` (one of RECEIPT_TYPES); ``limits``, a verification's use
    limits (issue 31), are signed as they are (each limit's room after an allowed use)."""
    if type not in RECEIPT_TYPES:
        raise ValueError(f"unknown receipt type {type!r}")
    body: dict[str, Any] = {
        "@context": contexts(context_url),
        "id": receipt_id,
        "type": type,
        "timestamp": format_datetime(timestamp),
        "credentialId": credential_id,
    }
    optional = {
        "requestId": request_id,
        "presentationId": presentation_id,
        "decision": decision,
        "reason": reason,
        "verifier": verifier,
        "evaluationsDigest": None if evaluations is None else digest_sri(list(evaluations)),
        "limits": [dict(limit) for limit in limits] if limits else None,
    }
    body.update({name: value for name, value in optional.items() if value is not None})
    return sign_document(body, key, proof_purpose=ASSERTION_METHOD, created=timestamp)


def verify_receipt(
    signed: Mapping[str, Any],
    resolver: Resolver,
    *,
    issuer_did: str | None = None,
    evaluations: Sequence[Mapping[str, Any]] | None = None,
) -> None:
    """The receipt's proof verifies (and is ``issuer_did``'s when given); ProofError otherwise.

    With ``evaluations`` it also checks that ``evaluationsDigest`` is their digest.
    """
    if signed.get("type") not in RECEIPT_TYPES:
        raise MalformedProof(f"not a receipt type: {signed.get('type')!r}")
    if issuer_did is not None:
        for proof in proofs_of(signed):
            if str(proof.get("verificationMethod", "")).split("#", 1)[0] != issuer_did:
                raise WrongSigner(f"the receipt is not signed by {issuer_did}")
    _verify_document(signed, resolver, proof_purpose=ASSERTION_METHOD)
    if evaluations is not None and signed.get("evaluationsDigest") != digest_sri(list(evaluations)):
        raise MalformedProof("evaluationsDigest does not match the evaluations")
