"""An organization's webhook endpoints (CONTRACT 7, issue 34): each a URL with its own secrets, on
or off, taking the event types chosen. CONTRACT 7's one webhook is an organization with one
endpoint; ``endpoint_id=None`` below means that one (the oldest), so a caller that knows of one
webhook keeps working.

The two secrets must be recoverable (they key the HMAC and the encryption), so they are stored
encrypted under the master key, like API signature secrets (``store.orgs``). Every change is a
``WEBHOOK_CONFIGURED`` record naming the endpoint, its URL without the query, what changed and,
where it applies, the value before; never a secret.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from core.ids import new_object_id
from core.secretbox import SecretCipher
from core.text import text_problem
from store import audit
from store.db import read_session, utcnow, write_session
from store.errors import NotFound
from store.tables import Organization, WebhookEndpoint

ENDPOINTS_AT_MOST = 10  # per organization: each one gets a copy of every event
DESCRIPTION_MAX = 200
EVENT_TYPES = ("credential", "identity", "otp.failed", "mandate.revoked", "request.resent")


class UrlPolicy(Protocol):
    """What a webhook URL is checked against before it is stored (``adapters.egress.EgressPolicy``,
    passed in by ``services.webhooks``: the store does not reach the network itself)."""

    def check_url(self, url: str) -> str: ...


@dataclass(frozen=True)
class WebhookSettings:
    url: str
    signature_secret: str
    encryption_secret: str  # base64
    salt: str
    # during a rotation's overlap: the previous signature secret, which X-Signature is made with
    # until it ends (docs/webhooks.md, "Rotating the signature secret")
    previous_signature_secret: str | None = None
    enabled: bool = True
    event_types: tuple[str, ...] | None = None  # None: every type
    endpoint_id: str | None = field(default=None, compare=False)  # set when read from the store


def refusal(settings: WebhookSettings, event_type: str) -> str | None:
    """Why the endpoint does not take an event of ``event_type`` (skipped), or None: it does."""
    if not settings.enabled:
        return "the webhook is turned off"
    if settings.event_types is not None and event_type != "test" and event_type not in settings.event_types:
        return f"the webhook does not take {event_type} events"
    return None


def new_signature_secret() -> str:
    return secrets.token_urlsafe(32)


def new_encryption_secret() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


def new_salt() -> str:
    return secrets.token_hex(16)


def _check(settings: WebhookSettings, policy: UrlPolicy) -> None:
    policy.check_url(settings.url)  # UrlNotAllowed is a ValueError
    if not settings.signature_secret:
        raise ValueError("the signature secret must not be empty")
    try:
        if not base64.b64decode(settings.encryption_secret, validate=True):
            raise ValueError("the encryption secret must not be empty")
    except binascii.Error as exc:
        raise ValueError("the encryption secret must be base64") from exc
    if not settings.salt or len(settings.salt) > 255:
        raise ValueError("the salt must be 1 to 255 characters")


def without_query(url: str) -> str:
    """The URL as the trail and the pages show it: a query or fragment may carry a receiver's token."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _oldest(session: Session, org_id: str, lock: bool = False) -> WebhookEndpoint | None:
    stmt = (
        select(WebhookEndpoint)
        .where(WebhookEndpoint.organization_id == org_id)
        .order_by(col(WebhookEndpoint.created_at), col(WebhookEndpoint.id))
        .limit(1)
    )
    return session.exec(stmt.with_for_update() if lock else stmt).first()


def _endpoint(session: Session, org_id: str, endpoint_id: str | None, lock: bool = False) -> WebhookEndpoint:
    """The organization's endpoint (its oldest for None); NotFound for none or another's."""
    if endpoint_id is None:
        row = _oldest(session, org_id, lock)
    else:
        row = session.get(WebhookEndpoint, endpoint_id, with_for_update=lock)
        row = row if row is not None and row.organization_id == org_id else None
    if row is None:
        raise NotFound(f"organization {org_id} has no webhook" + (f" {endpoint_id}" if endpoint_id else ""))
    return row


def _record(session: Session, key: Any, row: WebhookEndpoint, actor: str, **data: Any) -> None:
    body = {"endpointId": row.id, "url": without_query(row.url), **data}
    entry = audit.Entry(audit.WEBHOOK_CONFIGURED, row.organization_id, actor=actor, data=body)
    audit.append(session.connection(), key, entry)


def set_config(
    engine: Engine,
    cipher: SecretCipher,
    org_id: str,
    settings: WebhookSettings,
    policy: UrlPolicy,
    *,
    actor: str,
    endpoint_id: str | None = None,
    new: bool = False,
    description: str | None = None,
) -> str:
    """Store an endpoint's URL and secrets, its id returned: ``new`` adds one (at most
    ``ENDPOINTS_AT_MOST``), else ``endpoint_id`` is changed (None: the oldest, made when there is
    none). ValueError for a URL ``policy`` refuses (``adapters.egress``: shape, scheme, and the
    addresses it leads to), secrets of the wrong form, a description too long or one endpoint too
    many; NotFound for another organization's endpoint."""
    _check(settings, policy)
    if description is not None and len(description) > DESCRIPTION_MAX:
        raise ValueError(f"the description is at most {DESCRIPTION_MAX} characters")
    if description is not None and (problem := text_problem(description)) is not None:
        raise ValueError(f"the description {problem}")
    key = audit.signer(engine)
    with write_session(engine) as session:
        if session.get(Organization, org_id, with_for_update=True) is None:
            raise NotFound(f"organization {org_id} not found")
        if new:
            row = None
        elif endpoint_id is None:
            row = _oldest(session, org_id, lock=True)
        else:
            row = _endpoint(session, org_id, endpoint_id, lock=True)
        before = None if row is None else _settings_of(cipher, row)
        if row is None:
            row = _new_row(session, org_id)
        row.url, row.encryption_salt, row.updated_at = settings.url, settings.salt, utcnow()
        row.signature_secret_ciphertext = cipher.encrypt(settings.signature_secret)
        row.encryption_secret_ciphertext = cipher.encrypt(settings.encryption_secret)
        if description is not None:
            row.description = description or None
        session.add(row)
        session.flush()
        what = {"added": True} if before is None else {"previous": {"url": without_query(before.url)}}
        _record(session, key, row, actor, secretsChanged=_secrets_changed(settings, before), **what)
        return row.id


def _new_row(session: Session, org_id: str) -> WebhookEndpoint:
    if len(endpoint_ids(session, org_id)) >= ENDPOINTS_AT_MOST:
        raise ValueError(f"an organization has at most {ENDPOINTS_AT_MOST} webhook endpoints")
    now = utcnow()
    return WebhookEndpoint(
        id=new_object_id(),
        organization_id=org_id,
        url="",
        signature_secret_ciphertext=b"",
        encryption_secret_ciphertext=b"",
        encryption_salt="",
        created_at=now,
        updated_at=now,
    )


def _secrets_changed(settings: WebhookSettings, before: WebhookSettings | None) -> list[str]:
    return [
        name
        for name, now, was in (
            ("signatureSecret", settings.signature_secret, before and before.signature_secret),
            ("encryptionSecret", settings.encryption_secret, before and before.encryption_secret),
            ("salt", settings.salt, before and before.salt),
        )
        if now != was
    ]


def remove_endpoint(engine: Engine, org_id: str, endpoint_id: str, *, actor: str) -> None:
    """Remove the organization's endpoint: its events stay (shown with it), the deliveries still
    to come are skipped. NotFound for another organization's."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        row = _endpoint(session, org_id, endpoint_id, lock=True)
        _record(session, key, row, actor, removed=True)
        session.delete(row)


def get_config(
    engine: Engine, cipher: SecretCipher, org_id: str, endpoint_id: str | None = None
) -> WebhookSettings | None:
    """The endpoint's settings, secrets opened (None: the oldest); None when there is none."""
    with read_session(engine) as session:
        try:
            row = _endpoint(session, org_id, endpoint_id)
        except NotFound:
            return None
    return _settings_of(cipher, row)


def get_endpoint(engine: Engine, cipher: SecretCipher, endpoint_id: str) -> WebhookSettings | None:
    """The endpoint an event is for, whatever its organization; None once removed."""
    with read_session(engine) as session:
        row = session.get(WebhookEndpoint, endpoint_id)
    return None if row is None else _settings_of(cipher, row)


def _settings_of(cipher: SecretCipher, row: WebhookEndpoint) -> WebhookSettings:
    previous = None
    if row.previous_signature_secret_ciphertext and row.previous_until and row.previous_until > utcnow():
        previous = cipher.decrypt(row.previous_signature_secret_ciphertext)
    return WebhookSettings(
        row.url,
        cipher.decrypt(row.signature_secret_ciphertext),
        cipher.decrypt(row.encryption_secret_ciphertext),
        row.encryption_salt,
        previous,
        row.enabled,
        tuple(row.event_types) if row.event_types is not None else None,
        row.id,
    )


def set_delivery(
    engine: Engine,
    org_id: str,
    enabled: bool,
    event_types: list[str] | None,
    *,
    actor: str,
    endpoint_id: str | None = None,
) -> None:
    """Turn the endpoint on or off and choose the event types it takes (None: every one), with a
    ``WEBHOOK_CONFIGURED`` record of both, before and after. NotFound without it."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        row = _endpoint(session, org_id, endpoint_id, lock=True)
        before = {"enabled": row.enabled, "eventTypes": row.event_types}
        row.enabled, row.event_types, row.updated_at = enabled, event_types, utcnow()
        session.add(row)
        session.flush()
        _record(session, key, row, actor, enabled=enabled, eventTypes=event_types, previous=before)


def rotate_signature_secret(
    engine: Engine,
    cipher: SecretCipher,
    org_id: str,
    new_secret: str,
    overlap: timedelta,
    *,
    actor: str,
    endpoint_id: str | None = None,
) -> datetime:
    """The endpoint's new signature secret; the current one keeps signing deliveries
    (``X-Signature``) until the overlap ends, when its end is returned. A rotation during an overlap
    replaces the secret being phased in: the oldest one stays until its own end. NotFound without
    the endpoint."""
    if not new_secret:
        raise ValueError("the signature secret must not be empty")
    key = audit.signer(engine)
    now = utcnow()
    with write_session(engine) as session:
        row = _endpoint(session, org_id, endpoint_id, lock=True)
        in_overlap = row.previous_until is not None and row.previous_until > now
        if not in_overlap:
            row.previous_signature_secret_ciphertext = row.signature_secret_ciphertext
            row.previous_until = now + overlap
        row.signature_secret_ciphertext = cipher.encrypt(new_secret)
        row.updated_at = now
        until = row.previous_until
        assert until is not None
        session.add(row)
        session.flush()
        _record(session, key, row, actor, secretsChanged=["signatureSecret"], overlapUntil=until.isoformat())
    return until


def config_row(engine: Engine, org_id: str, endpoint_id: str | None = None) -> WebhookEndpoint | None:
    """The endpoint as stored (secrets sealed; None: the oldest): for showing, never for sending."""
    with read_session(engine) as session:
        try:
            return _endpoint(session, org_id, endpoint_id)
        except NotFound:
            return None


def endpoint_rows(engine: Engine, org_id: str) -> list[WebhookEndpoint]:
    """The organization's endpoints as stored, oldest first."""
    with read_session(engine) as session:
        stmt = (
            select(WebhookEndpoint)
            .where(WebhookEndpoint.organization_id == org_id)
            .order_by(col(WebhookEndpoint.created_at), col(WebhookEndpoint.id))
        )
        return list(session.exec(stmt))


def endpoint_ids(session: Session, org_id: str) -> list[str]:
    """The ids of the organization's endpoints, oldest first (the order events are made in)."""
    stmt = (
        select(WebhookEndpoint.id)
        .where(WebhookEndpoint.organization_id == org_id)
        .order_by(col(WebhookEndpoint.created_at), col(WebhookEndpoint.id))
    )
    return list(session.exec(stmt))
