"""Receipts and our JSON-LD context in the trust tests: a denied receipt (its time and evaluations),
the members our context defines, and the W3C credentials v2 terms it may not redefine."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from trust.context import RECEIPT_TYPES
from trust.keys import Ed25519KeyPair
from trust.receipts import VERIFICATION_DENIED, receipt

NOW = datetime(2026, 3, 1, 12, 0, 0, 500000, tzinfo=UTC)


EVALUATIONS = [
    {"rule": "max", "expression": "executionParams.amount <= userParams.maxAmount", "result": "fail"}
]


def denied(key: Ed25519KeyPair) -> dict[str, Any]:
    return receipt(
        key=key,
        context_url="https://mandatum.test/ns/v1",
        receipt_id="urn:via:receipt:1",
        type=VERIFICATION_DENIED,
        timestamp=NOW,
        credential_id="urn:via:credential:1",
        presentation_id="urn:via:presentation:1",
        decision="deny",
        reason="rule_failed",
        verifier="did:web:verifier.example",
        evaluations=EVALUATIONS,
    )


# Every term the W3C credentials v2 context defines (top level and in its type-scoped contexts);
# a @protected context may not redefine them.
V2_TERMS = {
    "id",
    "type",
    "description",
    "digestMultibase",
    "digestSRI",
    "mediaType",
    "name",
    "VerifiableCredential",
    "EnvelopedVerifiableCredential",
    "VerifiablePresentation",
    "EnvelopedVerifiablePresentation",
    "JsonSchemaCredential",
    "JsonSchema",
    "BitstringStatusListCredential",
    "BitstringStatusList",
    "BitstringStatusListEntry",
    "DataIntegrityProof",
    "confidenceMethod",
    "credentialSchema",
    "credentialStatus",
    "credentialSubject",
    "evidence",
    "issuer",
    "proof",
    "refreshService",
    "relatedResource",
    "renderMethod",
    "termsOfUse",
    "validFrom",
    "validUntil",
    "holder",
    "verifiableCredential",
    "challenge",
    "created",
    "cryptosuite",
    "domain",
    "expires",
    "nonce",
    "previousProof",
    "proofPurpose",
    "proofValue",
    "verificationMethod",
}


OUR_MEMBERS = {
    "VIAMandate",
    "VIADocument",
    "mandate",
    "grantor",
    "scope",
    "context",
    "authorizedDIDs",
    "action",
    "version",
    "userParams",
    "maxExecutions",
    "limits",
    "evidences",
    "location",
    "proofs",
    "issuanceDate",
    "data",
    "label",
    "value",
    "hidden",
    "fields",
    "placements",  # a document's placements (issue 36)
    "signerQualities",  # in which capacity each grantor signs (issue 36)
    "actionType",
    "actionProof",
    "createdAt",
    "credentialId",
    "requestId",
    "presentationId",
    "decision",
    "reason",
    "verifier",
    "evaluationsDigest",
    "timestamp",
    *RECEIPT_TYPES,
}
