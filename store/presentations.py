"""Issuing Verifiable Presentations of a mandate (CONTRACT 5), and the signing keys they need.

``issue_presentation`` is one read (the credential with its request's organization and that
organization's VP lifetime), the signatures, and one insert of the ``presentation`` row that
verification later consumes (``store.verifications``). What it refuses, in this order:

- an unknown mandate id (``MandateNotFound``, 404);
- another organization's mandate that does not list the caller's organization DID in its
  ``authorizedDIDs``: unknown too (``MandateNotFound``, 404, CONTRACT 2: never reveal that another
  organization's resource exists). An organization the mandate lists is a party to it (CONTRACT 3:
  ``authorizedDIDs`` names the agents and verifiers it may be shown to), so it gets the VP;
- a DOCUMENT credential (``NotAMandate``, 400): only mandates are presented. For another
  organization than its own it is unknown (404): it has no ``authorizedDIDs`` to let anyone see it;
- the mandate's own organization when its DID is not in the ``authorizedDIDs`` (``NotAuthorized``,
  403; the service always lists it, so only a mandate issued under another service DID, e.g.
  before the public URL changed, gets there);
- a revoked mandate (``MandateRevoked``, 400 with reason ``credential_revoked``);
- an issued mandate in any other state than ACTIVE (``MandateNotActive``, 409). Credentials that
  are not issued yet have no mandate URN, so asking for one is a 404.

The validity window (``validFrom``/``validUntil``) is not judged here: verification reports
``not_yet_valid`` or ``expired`` with a signed receipt, which is what the verifier needs to see.

The VP is signed by the mandate's organization (the holder, ``credentialSubject.id``) whoever of
the authorized organizations asks for it; its lifetime is the holder organization's
``presentation_minutes``. The ``presentation`` row records the organization that asked.

Signing keys are decrypted once and kept for ``KEY_CACHE_SECONDS`` per process (like the DID
document cache of ``store.keys``), so a rotation elsewhere applies within that time; a key kept a
moment after a rotation is retired but still listed in the DID document, so what it signed verifies.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, bindparam, select, update
from sqlmodel import col

from core.ids import urn
from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit, keys
from store.db import utcnow, write_connection
from store.orgs import NotFound
from store.tables import Credential, CredentialRequest, Organization, Presentation
from trust import credentials as vc
from trust import receipts
from trust.keys import Ed25519KeyPair

ACTIVE, REVOKED = "ACTIVE", "REVOKED"
MIN_MINUTES, MAX_MINUTES = 1, 60
KEY_CACHE_SECONDS = 2.0
CHALLENGE_BYTES = 24  # 192 bits, 32 URL-safe characters
PRESENTATION = Presentation.__table__  # type: ignore[attr-defined]
_C, _R = Credential.__table__, CredentialRequest.__table__  # type: ignore[attr-defined]
_O = Organization.__table__  # type: ignore[attr-defined]
# built once (building a statement per call costs about as much as running it on SQLite)
LOAD_MANDATE = (
    select(
        _C.c.id,
        _C.c.request_id,
        _R.c.organization_id,
        _C.c.resource_type,
        _C.c.status,
        _C.c.revoked_at,
        _O.c.presentation_minutes,
        _C.c.w3c_credential,
    )
    .join_from(_C, _R, _R.c.id == _C.c.request_id)
    .join(_O, _O.c.id == _R.c.organization_id)
    .where(_C.c.mandate_id == bindparam("mandate_id"))
)
INSERT_PRESENTATION = PRESENTATION.insert()


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


# --- signing keys, cached briefly -------------------------------------------------------------

_keys: weakref.WeakKeyDictionary[Engine, dict[tuple[str, str], tuple[float, Ed25519KeyPair]]] = (
    weakref.WeakKeyDictionary()
)
_keys_lock = threading.Lock()


def _cached_key(engine: Engine, owner: str, did: str, load: Callable[[], Ed25519KeyPair]) -> Ed25519KeyPair:
    with _keys_lock:
        hit = _keys.get(engine, {}).get((owner, did))
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    pair = load()
    with _keys_lock:
        entries = _keys.setdefault(engine, {})
        if len(entries) > 10_000:
            entries.clear()
        entries[(owner, did)] = (time.monotonic() + KEY_CACHE_SECONDS, pair)
    return pair


def service_key(engine: Engine, cipher: SecretCipher, settings: Settings) -> Ed25519KeyPair:
    """The issuer's active key (receipts), from a per-process cache of ``KEY_CACHE_SECONDS``."""
    return _cached_key(
        engine,
        keys.SERVICE_OWNER,
        settings.service_did,
        lambda: keys.service_signing_key(engine, cipher, settings),
    )


def organization_key(engine: Engine, cipher: SecretCipher, settings: Settings, org_id: str) -> Ed25519KeyPair:
    """An organization's active key (its VPs), cached like ``service_key``."""
    return _cached_key(
        engine,
        org_id,
        settings.organization_did(org_id),
        lambda: keys.organization_signing_key(engine, cipher, settings, org_id),
    )


def forget_keys() -> None:
    """Drop every cached key, so the next signature uses the active key at once (after a rotation
    in this process; tests)."""
    with _keys_lock:
        _keys.clear()


# --- the VP lifetime setting -------------------------------------------------------------------


def set_presentation_minutes(engine: Engine, org_id: str, minutes: int) -> None:
    """How long the organization's VPs stay valid (CONTRACT 5: 1 to 60 minutes, default 5)."""
    if not MIN_MINUTES <= minutes <= MAX_MINUTES:
        raise ValueError(f"a presentation lifetime is {MIN_MINUTES} to {MAX_MINUTES} minutes")
    with write_connection(engine) as conn:
        done = conn.execute(
            update(Organization).where(col(Organization.id) == org_id).values(presentation_minutes=minutes)
        )
    if done.rowcount != 1:
        raise NotFound(f"organization {org_id} not found")


# --- issuing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mandate:
    credential_id: str
    request_id: str
    organization_id: str
    resource_type: str
    status: str
    revoked: bool
    minutes: int
    w3c: dict[str, Any]


def _load_mandate(engine: Engine, mandate_id: str) -> _Mandate | None:
    with engine.connect() as conn:
        row = conn.execute(LOAD_MANDATE, {"mandate_id": mandate_id}).first()
    if row is None or row.w3c_credential is None:
        return None
    return _Mandate(
        row.id,
        row.request_id,
        row.organization_id,
        row.resource_type,
        row.status,
        row.status == REVOKED or row.revoked_at is not None,
        row.presentation_minutes,
        row.w3c_credential,
    )


# --- reading mandates and VPs (shared with store.verifications) ------------------------------

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
CREDENTIAL_URN_RE = re.compile(rf"urn:via:credential:{_UUID}")
PRESENTATION_URN_RE = re.compile(rf"urn:via:presentation:{_UUID}")


def matching(pattern: re.Pattern[str], value: Any) -> str | None:
    """``value`` when it is a string matching ``pattern`` entirely."""
    return value if isinstance(value, str) and pattern.fullmatch(value) else None


def _mandate_part(credential: Mapping[str, Any], name: str) -> Any:
    subject = credential.get("credentialSubject")
    mandate = subject.get("mandate") if isinstance(subject, Mapping) else None
    return mandate.get(name) if isinstance(mandate, Mapping) else None


def authorized_dids(credential: Mapping[str, Any]) -> list[str]:
    """``credentialSubject.mandate.context.authorizedDIDs`` of a mandate form (empty if absent)."""
    context = _mandate_part(credential, "context")
    found = context.get("authorizedDIDs") if isinstance(context, Mapping) else None
    return [d for d in found if isinstance(d, str)] if isinstance(found, list) else []


def action_pin(credential: Mapping[str, Any]) -> dict[str, Any] | None:
    """``credentialSubject.mandate.action`` (the pinned version and userParams), if any."""
    pin = _mandate_part(credential, "action")
    return pin if isinstance(pin, dict) else None


def claimed_credential_id(vp: Mapping[str, Any]) -> str:
    """The mandate URN a VP says it carries, or "" when it names none."""
    found = vp.get("verifiableCredential")
    if isinstance(found, list) and len(found) == 1:
        found = found[0]
    return (matching(CREDENTIAL_URN_RE, found.get("id")) if isinstance(found, Mapping) else None) or ""


def bound_verifiers(vp: Mapping[str, Any]) -> list[str] | None:
    """The verifiers a VP is bound to (``proof.domain``, one DID or a list), None when unbound."""
    proof = vp.get("proof")
    domain = proof.get("domain") if isinstance(proof, Mapping) else None
    if domain is None:
        return None
    return [d for d in domain if isinstance(d, str)] if isinstance(domain, list) else [str(domain)]


def _checked(found: _Mandate | None, mandate_id: str, caller_did: str, owner_did: str) -> _Mandate:
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
    if found.status != ACTIVE:
        raise MandateNotActive(f"Mandate {mandate_id} is {found.status.lower()}, not active")
    return found


def issue_presentation(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    *,
    caller_org_id: str,
    mandate_id: str,
    target_verifier: str | None = None,
    now: datetime | None = None,
) -> IssuedPresentation:
    """A fresh VP of the mandate (``targetVerifier`` binds it through ``proof.domain``) with its
    ``PRESENTATION_ISSUED`` receipt; PresentationRefused otherwise (see the module docstring)."""
    found = _load_mandate(engine, mandate_id)
    owner_did = settings.organization_did(found.organization_id) if found else ""
    service = service_key(engine, cipher, settings)
    try:
        mandate = _checked(found, mandate_id, settings.organization_did(caller_org_id), owner_did)
    except PresentationRefused as refused:
        _record_refusal(engine, service, caller_org_id, mandate_id, found, refused)
        raise
    created = (now or utcnow()).replace(microsecond=0)  # proofs carry whole seconds
    expires = created + timedelta(minutes=mandate.minutes)
    presentation_id = urn("presentation")
    challenge = secrets.token_urlsafe(CHALLENGE_BYTES)
    vp = vc.presentation(
        mandate.w3c,
        organization_key(engine, cipher, settings, mandate.organization_id),
        holder_did=owner_did,
        presentation_id=presentation_id,
        challenge=challenge,
        created=created,
        expires=expires,
        domain=target_verifier,
    )
    receipt = receipts.receipt(
        key=service,
        context_url=settings.context_url,
        receipt_id=urn("receipt"),
        type=receipts.PRESENTATION_ISSUED,
        timestamp=created,
        credential_id=mandate_id,
        request_id=mandate.request_id,
        presentation_id=presentation_id,
        verifier=target_verifier,
    )
    with write_connection(engine) as conn:
        conn.execute(
            INSERT_PRESENTATION,
            {
                "id": presentation_id,
                "credential_id": mandate.credential_id,
                "organization_id": caller_org_id,
                "challenge": challenge,
                "domain": target_verifier,
                "created_at": created,
                "expires_at": expires,
                "receipt": receipt,
                "used_at": None,
                "used_by": None,
            },
        )
        audit.append(
            conn,
            service,
            audit.Entry(
                audit.VP_ISSUED,
                caller_org_id,
                request_id=mandate.request_id,
                credential_id=mandate_id,
                data={
                    "mandateId": mandate_id,
                    "presentation": vp,
                    "targetVerifier": target_verifier,
                    "receipt": receipt,
                },
            ),
            created,
        )
    return IssuedPresentation(vp, receipt)


def _record_refusal(
    engine: Engine,
    key: Ed25519KeyPair,
    caller_org_id: str,
    mandate_id: str,
    found: _Mandate | None,
    refused: PresentationRefused,
) -> None:
    """The "VP issue denied" audit record, in the caller's organization."""
    reason = refused.reason or _REFUSAL_CODES.get(type(refused), "refused")
    with write_connection(engine) as conn:
        audit.append(
            conn,
            key,
            audit.Entry(
                audit.VP_ISSUE_DENIED,
                caller_org_id,
                credential_id=mandate_id,
                request_id=found.request_id if found and found.organization_id == caller_org_id else None,
                data={"mandateId": mandate_id, "reason": reason, "message": str(refused)},
            ),
        )
