"""What a verification answers (POST /credential/verify, ``services.verification``): its signed
receipt, the message of each denial reason, and the ``Verdict`` once the verification is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from core.ids import urn
from core.observe import events
from core.settings import Settings
from services.access import SIGNATURE_USED
from services.errors import Replayed
from store.limit_use import EXHAUSTED
from store.verifications import ALLOW, DENY, Outcome, Pending
from trust import credentials as vc
from trust import receipts
from trust.context import context_url
from trust.keys import Ed25519KeyPair
from workflows.ids import request_workflow_id

REVOKE_ACTION = "REVOKE"  # the document form's item (services.mandates)
MESSAGES = {
    "vp_proof_invalid": "The presentation or its proof is malformed",
    "vp_signature_invalid": "The presentation's signature does not verify",
    "vp_signer_unknown": "The presentation is not signed by a known key of its holder",
    "credential_signature_invalid": "The presented credential's signature does not verify",
    "credential_not_found": "The presentation or its credential was not issued by this service",
    "not_yet_valid": "The mandate is not valid yet",
    "expired": "The mandate or the presentation has expired",
    "credential_revoked": "The mandate is revoked",
    "verifier_not_authorized": "Your organization is not among the mandate's authorizedDIDs",
    "vp_domain_mismatch": "The presentation is bound to another verifier",
    "vp_already_used": "The presentation has already been used",
    "execution_params_invalid": "executionParams do not match the action",
    "rule_failed": "The action's rules deny this execution",
    "rule_limit_exceeded": "The action's rules took more steps than one verification may take",
    "limit_exceeded": "A use limit of the mandate has no room for this execution",
}


@dataclass(frozen=True)
class Verdict:
    """What POST /credential/verify answers: the decision, and for a deny its reason."""

    decision: str
    credential_id: str
    evaluations: list[dict[str, Any]]
    receipt: dict[str, Any]
    reason: str | None = None
    message: str = ""
    limits: list[dict[str, Any]] = field(default_factory=list)  # each use limit (issue 31)


def signed_receipt(
    out: Outcome, key: Ed25519KeyPair, settings: Settings, verifier_did: str, now: datetime
) -> dict[str, Any]:
    return receipts.receipt(
        key=key,
        context_url=context_url(settings.public_url),
        receipt_id=urn("receipt"),
        type=receipts.VERIFICATION_DENIED if out.reason else receipts.VERIFICATION_APPROVED,
        timestamp=now,
        credential_id=out.credential_id,
        request_id=out.request_id,
        presentation_id=out.presentation_id,
        decision=DENY if out.reason else ALLOW,
        reason=out.reason,
        verifier=verifier_did,
        evaluations=out.evaluations,
        limits=out.limits,
    )


def exhaustion_signer(
    key: Ed25519KeyPair,
    settings: Settings,
    mandate_id: str,
    request_id: str,
    document: dict[str, Any],
    now: datetime,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``MANDATE_REVOKED`` receipt (reason ``exhausted``) of a mandate whose last use was just
    spent, and its document form with the REVOKE item (``store.limit_use.revoke``)."""
    receipt = receipts.receipt(
        key=key,
        context_url=context_url(settings.public_url),
        receipt_id=urn("receipt"),
        type=receipts.MANDATE_REVOKED,
        timestamp=now,
        credential_id=mandate_id,
        request_id=request_id,
        reason=EXHAUSTED,
    )
    return receipt, vc.add_document_action(document, key, REVOKE_ACTION, now)


def verdict(pending: Pending) -> Verdict:
    """What the written verification answers; ``Replayed`` (401) when its signature was used, or
    what failed its own transaction."""
    if pending.failed is not None:
        raise pending.failed
    if pending.replayed:
        raise Replayed(SIGNATURE_USED)
    out = pending.out
    events.verification_decided(  # recorded: once per call, with its receipt
        organization_id=pending.verifier_org_id,
        request_id=out.request_id,
        workflow_id=request_workflow_id(out.request_id) if out.request_id else None,
        credential_id=out.credential_id or None,
        decision=DENY if out.reason else ALLOW,
        reason=out.reason,
        reasons=MESSAGES,
    )
    message = MESSAGES[out.reason] if out.reason else "Allowed"
    if out.detail:
        message = f"{message}: {out.detail}"
    return Verdict(
        DENY if out.reason else ALLOW,
        out.credential_id,
        out.evaluations,
        pending.receipt,
        out.reason,
        message,
        out.limits,
    )
