"""Organizations and API keys.

An API key is shown once and stored as a SHA-256 hash. The signature secret must be recoverable
(requests are HMAC-signed with it), so it is stored encrypted under the master key. Rotating a key
replaces its signature secret and keeps the previous one valid for the rotation grace period.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, bindparam, or_, update
from sqlmodel import Session, col, select

from core.ids import new_object_id
from core.origins import BadOrigin, check_origin
from core.secretbox import SecretCipher, hash_api_key
from core.text import quote_input
from store import audit
from store.db import read_session, utcnow, write_connection, write_session
from store.errors import NotFound
from store.tables import ApiKey, Organization
from trust.keys import Ed25519KeyPair

API_KEY_PREFIX = "mdt_"
ORGANIZATION_NAME_MAX = 200  # the column's length


@dataclass(frozen=True)
class IssuedKey:
    """What the holder needs, shown once: the API key and its signature secret."""

    key_id: str
    organization_id: str
    api_key: str
    signature_secret: str
    expires_at: datetime | None
    name: str = ""
    description: str = ""


@dataclass(frozen=True)
class ActiveKey:
    """An API key resolved for authentication, with the secrets currently accepted."""

    key_id: str
    organization_id: str
    secrets: tuple[str, ...]
    api_version: str | None
    request_rate_per_minute: int
    last_used_at: datetime | None = None  # as read with the key (``record_key_use``)


def _new_api_key() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def _new_signature_secret() -> str:
    return secrets.token_urlsafe(32)


def create_organization(
    engine: Engine, cipher: SecretCipher, name: str, request_rate_per_minute: int = 60
) -> tuple[Organization, IssuedKey]:
    name = name.strip()
    if not name:
        raise ValueError("organization name is required")
    if len(name) > ORGANIZATION_NAME_MAX:
        raise ValueError(f"organization name must be at most {ORGANIZATION_NAME_MAX} characters")
    if request_rate_per_minute < 1:
        raise ValueError("the request rate must be at least 1 per minute")
    with write_session(engine) as session:
        org = Organization(
            id=new_object_id(),
            name=name,
            created_at=utcnow(),
            request_rate_per_minute=request_rate_per_minute,
        )
        session.add(org)
        session.flush()
        issued = _add_key(session, cipher, org.id, None)  # unnamed: the dashboard says so
    return org, issued


def _add_key(
    session: Session,
    cipher: SecretCipher,
    org_id: str,
    expires_at: datetime | None,
    name: str = "",
    description: str = "",
) -> IssuedKey:
    api_key, secret = _new_api_key(), _new_signature_secret()
    row = ApiKey(
        id=new_object_id(),
        organization_id=org_id,
        key_hash=hash_api_key(api_key),
        key_prefix=api_key[:12],
        secret_ciphertext=cipher.encrypt(secret),
        expires_at=expires_at,
        created_at=utcnow(),
        name=name,
        description=description,
    )
    session.add(row)
    return IssuedKey(row.id, org_id, api_key, secret, expires_at, name, description)


def get_organization(engine: Engine, org_id: str) -> Organization:
    with read_session(engine) as session:
        org = session.get(Organization, org_id)
    if org is None:
        raise NotFound(f"organization {org_id} not found")
    return org


def list_organizations(engine: Engine) -> list[Organization]:
    with read_session(engine) as session:
        return list(session.exec(select(Organization).order_by(col(Organization.created_at))))


def _setting_changed(
    session: Session, key: Ed25519KeyPair, org_id: str, actor: str, name: str, value: Any, previous: Any
) -> None:
    """The ``ORGANIZATION_SETTINGS_CHANGED`` record of one setting (its value before and after), in
    the change's transaction."""
    session.flush()
    data = {"setting": name, "value": value, "previous": previous}
    entry = audit.Entry(audit.SETTINGS_CHANGED, org_id, actor=actor, data=data)
    audit.append(session.connection(), key, entry)


def _set(engine: Engine, org_id: str, actor: str, column: str, name: str, value: Any) -> None:
    """Set one of the organization's settings (``column``) with its ``ORGANIZATION_SETTINGS_CHANGED``
    record (``name``, the value), in one transaction."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        org = session.get(Organization, org_id)
        if org is None:
            raise NotFound(f"organization {org_id} not found")
        previous = getattr(org, column)
        previous = list(previous) if isinstance(previous, list) else previous
        setattr(org, column, value)
        session.add(org)
        _setting_changed(session, key, org_id, actor, name, value, previous)


def set_request_rate(engine: Engine, org_id: str, per_minute: int, *, actor: str) -> None:
    if per_minute < 1:
        raise ValueError("the request rate must be at least 1 per minute")
    _set(engine, org_id, actor, "request_rate_per_minute", "requestRatePerMinute", per_minute)


MAX_FRAME_ORIGINS = 10


def check_frame_origin(value: str, allow_loopback_http: bool) -> str:
    """An origin that may embed the approval page: ``https://host[:port]`` exactly (no path, no
    credentials, no wildcard or CSP syntax), or, outside production, ``http://`` on a loopback
    host for local development. Returned in the canonical form browsers serialize origins in
    (``core.origins``; the pages check it again where they build ``frame-ancestors``)."""
    try:
        return check_origin(value, allow_loopback_http)
    except BadOrigin as exc:
        raise ValueError(
            f"{quote_input(value)} is not an HTTPS origin (https://host or "
            f"https://host:port, nothing else): {exc}"
        ) from exc


def set_frame_origins(
    engine: Engine, org_id: str, origins: list[str], allow_loopback_http: bool, *, actor: str
) -> list[str]:
    """Replace the origins allowed to embed the organization's approval page in an iframe."""
    checked = list(dict.fromkeys(check_frame_origin(o, allow_loopback_http) for o in origins))
    if len(checked) > MAX_FRAME_ORIGINS:
        raise ValueError(f"at most {MAX_FRAME_ORIGINS} origins may embed the approval page")
    _set(engine, org_id, actor, "frame_origins", "frameOrigins", checked)
    return checked


def set_api_version(engine: Engine, org_id: str, version: str, *, actor: str) -> None:
    """Pin the organization to ``version`` (one the caller checked is offered), recorded; its
    integrations read and send that version's shapes from their next call (CONTRACT 10)."""
    _set(engine, org_id, actor, "api_version", "apiVersion", version)


def set_require_second_factor(engine: Engine, org_id: str, required: bool, *, actor: str) -> None:
    """Whether every member must have the second factor on before any other page opens."""
    _set(engine, org_id, actor, "require_second_factor", "requireSecondFactor", required)


def set_portal_enabled(engine: Engine, org_id: str, enabled: bool, *, actor: str) -> None:
    """Whether the subject's portal lists and revokes the organization's mandates (issue 32)."""
    _set(engine, org_id, actor, "portal_enabled", "portalEnabled", enabled)


def pin_api_version(engine: Engine, org_id: str, version: str) -> None:
    """Pin the organization's version at its first call; a pinned version never changes here."""
    with write_session(engine) as session:
        org = session.get(Organization, org_id)
        if org is not None and org.api_version is None:
            org.api_version = version


def _key_event(
    session: Session, key: Ed25519KeyPair, kind: str, row: ApiKey, actor: str, **change: Any
) -> None:
    """The record of a change to an API key (its id, name and expiry, and the description it was
    given when that is the change; never a secret or the key), with ``change``: the fields it
    changed and their ``previous`` values."""
    session.flush()
    data: dict[str, Any] = {
        "keyId": row.id,
        "name": row.name,
        "expiresAt": row.expires_at.isoformat() if row.expires_at else None,
    }
    if kind in (audit.API_KEY_CREATED, audit.API_KEY_EDITED):
        data["description"] = row.description
    data.update(change)
    audit.append(session.connection(), key, audit.Entry(kind, row.organization_id, actor=actor, data=data))


def create_key(
    engine: Engine,
    cipher: SecretCipher,
    org_id: str,
    expires_at: datetime | None = None,
    *,
    actor: str,
    name: str = "",
    description: str = "",
) -> IssuedKey:
    """Another API key of the organization (its first comes with it, at creation, unrecorded), with
    the name and description the caller checked (``services.orgs.key_label``)."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        if session.get(Organization, org_id) is None:
            raise NotFound(f"organization {org_id} not found")
        issued = _add_key(session, cipher, org_id, expires_at, name, description)
        row = session.get(ApiKey, issued.key_id)
        assert row is not None
        _key_event(session, key, audit.API_KEY_CREATED, row, actor)
        return issued


def _key_by_id(session, key_id: str, org_id: str | None = None) -> ApiKey:  # type: ignore[no-untyped-def]
    """The key, locked for the change; NotFound when it is unknown or (``org_id`` given) another
    organization's, in the same words."""
    row = session.get(ApiKey, key_id, with_for_update=True)
    if row is None or (org_id is not None and row.organization_id != org_id):
        raise NotFound(f"API key {key_id} not found")
    return row


def rotate_key(
    engine: Engine, cipher: SecretCipher, key_id: str, *, actor: str, org_id: str | None = None
) -> IssuedKey:
    """New signature secret, same API key; the previous secret stays valid for the grace period.

    The API key itself is only stored hashed, so the returned ``api_key`` is empty: the holder
    keeps the one they have.
    """
    key = audit.signer(engine)
    with write_session(engine) as session:
        row = _key_by_id(session, key_id, org_id)
        if row.revoked_at is not None:
            raise ValueError(f"API key {key_id} is revoked")
        secret = _new_signature_secret()
        before = audit.moment(row.rotated_at)
        row.previous_secret_ciphertext = row.secret_ciphertext
        row.secret_ciphertext = cipher.encrypt(secret)
        row.rotated_at = utcnow()
        session.add(row)
        after = audit.moment(row.rotated_at)
        _key_event(
            session, key, audit.API_KEY_ROTATED, row, actor, rotatedAt=after, previous={"rotatedAt": before}
        )
        return IssuedKey(row.id, row.organization_id, "", secret, row.expires_at, row.name, row.description)


def revoke_key(engine: Engine, key_id: str, *, actor: str, org_id: str | None = None) -> datetime:
    """Revoke the key at once (final); revoking it again changes and records nothing."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        row = _key_by_id(session, key_id, org_id)
        if row.revoked_at is None:
            row.revoked_at = utcnow()
            session.add(row)
            after = audit.moment(row.revoked_at)
            _key_event(
                session, key, audit.API_KEY_REVOKED, row, actor, revokedAt=after, previous={"revokedAt": None}
            )
        return row.revoked_at


def describe_key(
    engine: Engine, key_id: str, name: str, description: str, *, actor: str, org_id: str | None = None
) -> bool:
    """Give the key the (checked) name and description, recorded as ``API_KEY_EDITED`` with the
    ``previous`` ones; False, with nothing written, when it has them already."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        row = _key_by_id(session, key_id, org_id)
        if (row.name, row.description) == (name, description):
            return False
        previous = {"name": row.name, "description": row.description}
        row.name, row.description = name, description
        session.add(row)
        _key_event(session, key, audit.API_KEY_EDITED, row, actor, previous=previous)
        return True


_api_keys = ApiKey.__table__  # type: ignore[attr-defined]
_MOVE_LAST_USED = (
    update(_api_keys)
    .where(
        _api_keys.c.id == bindparam("key"),
        or_(_api_keys.c.last_used_at.is_(None), _api_keys.c.last_used_at < bindparam("at")),
    )
    .values(last_used_at=bindparam("at"))
)


def record_key_use(engine: Engine, uses: Mapping[str, datetime]) -> None:
    """Move each key's ``last_used_at`` forward to its time in ``uses`` (key id -> time), in one
    transaction; a key with that time or a later one already (another API process wrote it) keeps
    its own, so the value never goes back."""
    if not uses:
        return
    with write_connection(engine) as conn:
        conn.execute(_MOVE_LAST_USED, [{"key": k, "at": at} for k, at in uses.items()])


def list_keys(engine: Engine, org_id: str) -> list[ApiKey]:
    with read_session(engine) as session:
        stmt = select(ApiKey).where(ApiKey.organization_id == org_id)
        return list(session.exec(stmt.order_by(col(ApiKey.created_at))))


def resolve_api_key(engine: Engine, cipher: SecretCipher, api_key: str, grace: timedelta) -> ActiveKey | None:
    """The key and its accepted secrets, or None if unknown, expired or revoked."""
    now = utcnow()
    with read_session(engine) as session:
        row = session.exec(select(ApiKey).where(ApiKey.key_hash == hash_api_key(api_key))).first()
        if row is None or row.revoked_at is not None:
            return None
        if row.expires_at is not None and row.expires_at <= now:
            return None
        org = session.get(Organization, row.organization_id)
        if org is None:
            return None
    accepted = [cipher.decrypt(row.secret_ciphertext)]
    if (
        row.previous_secret_ciphertext is not None
        and row.rotated_at is not None
        and now - row.rotated_at < grace
    ):
        accepted.append(cipher.decrypt(row.previous_secret_ciphertext))
    return ActiveKey(
        row.id, org.id, tuple(accepted), org.api_version, org.request_rate_per_minute, row.last_used_at
    )
