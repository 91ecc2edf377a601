"""Verifiable Presentations in the database (CONTRACT 5): the mandate a VP is made of, the
``presentation`` row verification later consumes, and the records of issued and refused VPs; the
parsing helpers of mandates and VPs that verification shares; an organization's VP lifetime.

What a presentation refuses, and the signatures, are ``services.presentations``. Signing keys are
cached per process by ``store.keys`` (re-exported here for the callers that read them here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, bindparam, select, update
from sqlmodel import col

from core.kinds import CredentialStatus
from store import audit
from store.db import write_connection
from store.keys import KEY_CACHE_SECONDS, forget_keys, organization_key, service_key  # noqa: F401 (re-exported)
from store.orgs import NotFound
from store.tables import Credential, CredentialRequest, Organization, Presentation
from trust.keys import Ed25519KeyPair

MIN_MINUTES, MAX_MINUTES = 1, 60
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


def set_presentation_minutes(engine: Engine, org_id: str, minutes: int, *, actor: str) -> None:
    """How long the organization's VPs stay valid (CONTRACT 5: 1 to 60 minutes, default 5)."""
    if not MIN_MINUTES <= minutes <= MAX_MINUTES:
        raise ValueError(f"a presentation lifetime is {MIN_MINUTES} to {MAX_MINUTES} minutes")
    key = audit.signer(engine)
    with write_connection(engine) as conn:
        previous = conn.execute(
            select(col(Organization.presentation_minutes)).where(col(Organization.id) == org_id)
        ).scalar_one_or_none()
        done = conn.execute(
            update(Organization).where(col(Organization.id) == org_id).values(presentation_minutes=minutes)
        )
        if done.rowcount != 1:
            raise NotFound(f"organization {org_id} not found")
        data = {"setting": "presentationMinutes", "value": minutes, "previous": previous}
        audit.append(conn, key, audit.Entry(audit.SETTINGS_CHANGED, org_id, actor=actor, data=data))


# --- issuing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mandate:
    credential_id: str
    request_id: str
    organization_id: str
    resource_type: str
    status: str
    revoked: bool
    minutes: int
    w3c: dict[str, Any]


def load_mandate(engine: Engine, mandate_id: str) -> Mandate | None:
    with engine.connect() as conn:
        row = conn.execute(LOAD_MANDATE, {"mandate_id": mandate_id}).first()
    if row is None or row.w3c_credential is None:
        return None
    return Mandate(
        row.id,
        row.request_id,
        row.organization_id,
        row.resource_type,
        row.status,
        row.status == CredentialStatus.REVOKED or row.revoked_at is not None,
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


# --- writing ----------------------------------------------------------------------------------


def save_presentation(
    engine: Engine, key: Ed25519KeyPair, row: dict[str, Any], entry: audit.Entry, at: datetime
) -> None:
    """The ``presentation`` row a verification later consumes, with its ``VP_ISSUED`` record, in
    one transaction."""
    with write_connection(engine) as conn:
        conn.execute(INSERT_PRESENTATION, row)
        audit.append(conn, key, entry, at)


def record_refusal(engine: Engine, key: Ed25519KeyPair, entry: audit.Entry) -> None:
    """A ``VP_ISSUE_DENIED`` record."""
    with write_connection(engine) as conn:
        audit.append(conn, key, entry)
