"""Issuing Verifiable Presentations of a mandate (CONTRACT 5). What it refuses, in this order:

- an unknown mandate id (``MandateNotFound``, 404);
- another organization's mandate that does not list the caller's organization DID in its
  ``authorizedDIDs``: unknown too (``MandateNotFound``, 404, CONTRACT 2: never reveal that another
  organization's resource exists). An organization the mandate lists is a party to it (CONTRACT 3),
  so it gets the VP;
- a DOCUMENT credential (``NotAMandate``, 400): only mandates are presented;
- the mandate's own organization when its DID is not in the ``authorizedDIDs`` (``NotAuthorized``,
  403; only a mandate issued under another service DID gets there);
- a revoked mandate (``MandateRevoked``, 400 with reason ``credential_revoked``);
- an issued mandate in any other state than ACTIVE (``MandateNotActive``, 409).

The validity window is judged by verification, not here. The VP is signed by the mandate's
organization (the holder) whoever of the authorized organizations asks; it lives for the holder
organization's ``presentation_minutes``. The ``VP_ISSUED`` and ``VP_ISSUE_DENIED`` records name
the actor who asked.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from core.actors import Actor
from core.ids import urn
from core.kinds import CredentialStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit
from store import presentations as store
from store.db import utcnow
from store.keys import organization_key, service_key
from store.presentations import authorized_dids
from trust import credentials as vc
from trust import receipts
from trust.context import context_url
from trust.did import web_organization_did
from trust.keys import Ed25519KeyPair

CHALLENGE_BYTES = store.CHALLENGE_BYTES


class PresentationRefused(Exception):
    """Why no VP is issued; ``reason`` is the CONTRACT 5 code where one applies."""

    reason: str | None = None


class MandateNotFound(PresentationRefused):
    pass


class NotAuthorized(PresentationRefused):
    pass


class NotAMandate(PresentationRefused):
    pass


class MandateRevoked(PresentationRefused):
    reason = "credential_revoked"


class MandateNotActive(PresentationRefused):
    pass


# the reason code of each refusal in the "VP issue denied" audit record (CONTRACT 5 codes where
# one applies)
_REFUSAL_CODES: dict[type[PresentationRefused], str] = {
    MandateNotFound: "credential_not_found",
    NotAuthorized: "verifier_not_authorized",
    NotAMandate: "not_a_mandate",
    MandateNotActive: "credential_not_active",
}


@dataclass(frozen=True)
class IssuedPresentation:
    presentation: dict[str, Any]
    receipt: dict[str, Any]


@dataclass(frozen=True)
class _NewPresentation:
    """A VP being issued: its id and challenge, its window, and the verifier it is bound to."""

    presentation_id: str
    challenge: str
    created: datetime
    expires: datetime
    domain: str | None  # targetVerifier, as the proof's domain


# --- the VP lifetime setting -------------------------------------------------------------------


def _checked(found: store.Mandate | None, mandate_id: str, caller_did: str, owner_did: str) -> store.Mandate:
    if found is None:
        raise MandateNotFound(f"Mandate {mandate_id} not found")
    listed = found.resource_type == "POLICY" and caller_did in authorized_dids(found.w3c)
    if caller_did != owner_did and not listed:  # another organization's, and not shown to this one
        raise MandateNotFound(f"Mandate {mandate_id} not found")
    if found.resource_type != "POLICY":
        raise NotAMandate(
            f"Credential {mandate_id} is a {found.resource_type} credential, not a "
            f"mandate: only mandates are presented"
        )
    if not listed:
        raise NotAuthorized("Your organization is not among the mandate's authorizedDIDs")
    if found.revoked:
        raise MandateRevoked(f"Mandate {mandate_id} is revoked")
    if found.status != CredentialStatus.ACTIVE:
        raise MandateNotActive(f"Mandate {mandate_id} is {found.status.lower()}, not active")
    return found


def issue_presentation(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    *,
    actor: Actor,
    caller_org_id: str,
    mandate_id: str,
    target_verifier: str | None = None,
    now: datetime | None = None,
) -> IssuedPresentation:
    """A fresh VP of the mandate (``targetVerifier`` binds it through ``proof.domain``) with its
    ``PRESENTATION_ISSUED`` receipt; PresentationRefused otherwise (see the module docstring). The
    records name ``actor``."""
    found = store.load_mandate(engine, mandate_id)
    owner_did = web_organization_did(settings.public_url, found.organization_id) if found else ""
    service = service_key(engine, cipher, settings)
    try:
        mandate = _checked(
            found, mandate_id, web_organization_did(settings.public_url, caller_org_id), owner_did
        )
    except PresentationRefused as refused:
        _record_refusal(engine, service, actor, caller_org_id, mandate_id, found, refused)
        raise
    created = (now or utcnow()).replace(microsecond=0)  # proofs carry whole seconds
    new = _NewPresentation(
        presentation_id=urn("presentation"),
        challenge=secrets.token_urlsafe(CHALLENGE_BYTES),
        created=created,
        expires=created + timedelta(minutes=mandate.minutes),
        domain=target_verifier,
    )
    vp = vc.presentation(
        mandate.w3c,
        organization_key(engine, cipher, settings, mandate.organization_id),
        holder_did=owner_did,
        presentation_id=new.presentation_id,
        challenge=new.challenge,
        created=new.created,
        expires=new.expires,
        domain=new.domain,
    )
    receipt = _issued_receipt(service, settings, mandate, mandate_id, new)
    _save(engine, service, actor, caller_org_id, mandate, mandate_id, vp, receipt, new)
    return IssuedPresentation(vp, receipt)


def _issued_receipt(
    key: Ed25519KeyPair, settings: Settings, mandate: store.Mandate, mandate_id: str, new: _NewPresentation
) -> dict[str, Any]:
    """The VP's ``PRESENTATION_ISSUED`` receipt, signed by the service."""
    return receipts.receipt(
        key=key,
        context_url=context_url(settings.public_url),
        receipt_id=urn("receipt"),
        type=receipts.PRESENTATION_ISSUED,
        timestamp=new.created,
        credential_id=mandate_id,
        request_id=mandate.request_id,
        presentation_id=new.presentation_id,
        verifier=new.domain,
    )


def _save(
    engine: Engine,
    key: Ed25519KeyPair,
    actor: Actor,
    caller_org_id: str,
    mandate: store.Mandate,
    mandate_id: str,
    vp: dict[str, Any],
    receipt: dict[str, Any],
    new: _NewPresentation,
) -> None:
    """The VP's row (unused, for the caller's organization) with its ``VP_ISSUED`` record naming
    ``actor``."""
    store.save_presentation(
        engine,
        key,
        {
            "id": new.presentation_id,
            "credential_id": mandate.credential_id,
            "organization_id": caller_org_id,
            "challenge": new.challenge,
            "domain": new.domain,
            "created_at": new.created,
            "expires_at": new.expires,
            "receipt": receipt,
            "used_at": None,
            "used_by": None,
        },
        audit.Entry(
            audit.VP_ISSUED,
            caller_org_id,
            actor=str(actor),
            request_id=mandate.request_id,
            credential_id=mandate_id,
            data={
                "mandateId": mandate_id,
                "presentation": vp,
                "targetVerifier": new.domain,
                "receipt": receipt,
            },
        ),
        new.created,
    )


def _record_refusal(
    engine: Engine,
    key: Ed25519KeyPair,
    actor: Actor,
    caller_org_id: str,
    mandate_id: str,
    found: store.Mandate | None,
    refused: PresentationRefused,
) -> None:
    """The "VP issue denied" audit record, in the caller's organization."""
    reason = refused.reason or _REFUSAL_CODES.get(type(refused), "refused")
    store.record_refusal(
        engine,
        key,
        audit.Entry(
            audit.VP_ISSUE_DENIED,
            caller_org_id,
            credential_id=mandate_id,
            actor=str(actor),
            request_id=found.request_id if found and found.organization_id == caller_org_id else None,
            data={"mandateId": mandate_id, "reason": reason, "message": str(refused)},
        ),
    )


CREDENTIAL_URN_RE = store.CREDENTIAL_URN_RE  # a mandate URN (the path of POST .../presentation)
