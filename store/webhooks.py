"""Webhook settings per organization, events and the outcome of their delivery (CONTRACT 7).

The two secrets must be recoverable (they key the HMAC and the encryption), so they are stored
encrypted under the master key, like API signature secrets (``store.orgs``). An event is created
once per fact (``fact_key``): a retried activity or a replayed workflow gets the event made the
first time, with its id and payload.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from core.ids import urn
from core.secretbox import SecretCipher
from store import audit
from store.db import read_session, utcnow, write_session
from store.errors import NotFound
from store.tables import Organization, WebhookAttempt, WebhookConfig, WebhookEvent


class UrlPolicy(Protocol):
    """What a webhook URL is checked against before it is stored (``adapters.egress.EgressPolicy``,
    passed in by ``services.webhooks``: the store does not reach the network itself)."""

    def check_url(self, url: str) -> str: ...


PENDING, DELIVERED, FAILED, SKIPPED = "pending", "delivered", "failed", "skipped"
ERROR_MAX = 500  # the column's length


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


EVENT_TYPES = ("credential", "identity", "otp.failed", "mandate.revoked", "request.resent")


def refusal(settings: WebhookSettings, event_type: str) -> str | None:
    """Why the webhook does not take an event of ``event_type`` (skipped), or None: it does."""
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


def set_config(
    engine: Engine,
    cipher: SecretCipher,
    org_id: str,
    settings: WebhookSettings,
    policy: UrlPolicy,
    *,
    actor: str,
) -> None:
    """Store the webhook; ValueError for a URL ``policy`` refuses (``adapters.egress``: shape, scheme,
    and the addresses it leads to) or secrets of the wrong form. The ``WEBHOOK_CONFIGURED`` record
    names the URL without its query and which secrets changed, never a secret."""
    _check(settings, policy)
    key = audit.signer(engine)
    with write_session(engine) as session:
        if session.get(Organization, org_id) is None:
            raise NotFound(f"organization {org_id} not found")
        row = session.get(WebhookConfig, org_id) or WebhookConfig(
            organization_id=org_id,
            url="",
            signature_secret_ciphertext=b"",
            encryption_secret_ciphertext=b"",
            encryption_salt="",
            updated_at=utcnow(),
        )
        before = None if not row.url else _settings_of(cipher, row)
        row.url, row.encryption_salt, row.updated_at = settings.url, settings.salt, utcnow()
        row.signature_secret_ciphertext = cipher.encrypt(settings.signature_secret)
        row.encryption_secret_ciphertext = cipher.encrypt(settings.encryption_secret)
        session.add(row)
        session.flush()
        changed = [
            name
            for name, now, was in (
                ("signatureSecret", settings.signature_secret, before and before.signature_secret),
                ("encryptionSecret", settings.encryption_secret, before and before.encryption_secret),
                ("salt", settings.salt, before and before.salt),
            )
            if now != was
        ]
        data = {"url": _without_query(settings.url), "secretsChanged": changed}
        entry = audit.Entry(audit.WEBHOOK_CONFIGURED, org_id, actor=actor, data=data)
        audit.append(session.connection(), key, entry)


def _without_query(url: str) -> str:
    """The URL as the trail shows it: a query or fragment may carry a receiver's token."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def get_config(engine: Engine, cipher: SecretCipher, org_id: str) -> WebhookSettings | None:
    with read_session(engine) as session:
        row = session.get(WebhookConfig, org_id)
    return None if row is None else _settings_of(cipher, row)


def _settings_of(cipher: SecretCipher, row: WebhookConfig) -> WebhookSettings:
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
    )


def set_delivery(
    engine: Engine, org_id: str, enabled: bool, event_types: list[str] | None, *, actor: str
) -> None:
    """Turn the webhook on or off and choose the event types it takes (None: every one), with a
    ``WEBHOOK_CONFIGURED`` record of both, before and after. NotFound without a webhook."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        row = session.get(WebhookConfig, org_id, with_for_update=True)
        if row is None or not row.url:
            raise NotFound(f"organization {org_id} has no webhook")
        before = {"enabled": row.enabled, "eventTypes": row.event_types}
        row.enabled, row.event_types, row.updated_at = enabled, event_types, utcnow()
        session.add(row)
        session.flush()
        data = {
            "url": _without_query(row.url),
            "enabled": enabled,
            "eventTypes": event_types,
            "previous": before,
        }
        audit.append(
            session.connection(), key, audit.Entry(audit.WEBHOOK_CONFIGURED, org_id, actor=actor, data=data)
        )


def rotate_signature_secret(
    engine: Engine, cipher: SecretCipher, org_id: str, new_secret: str, overlap: timedelta, *, actor: str
) -> datetime:
    """The webhook's new signature secret; the current one keeps signing deliveries
    (``X-Signature``) until the overlap ends, when its end is returned. A rotation during an overlap
    replaces the secret being phased in: the oldest one stays until its own end. NotFound when the
    organization has no webhook; ``WEBHOOK_CONFIGURED`` names the change and the end, never a secret."""
    if not new_secret:
        raise ValueError("the signature secret must not be empty")
    key = audit.signer(engine)
    now = utcnow()
    with write_session(engine) as session:
        row = session.get(WebhookConfig, org_id, with_for_update=True)
        if row is None or not row.url:
            raise NotFound(f"organization {org_id} has no webhook")
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
        data = {
            "url": _without_query(row.url),
            "secretsChanged": ["signatureSecret"],
            "overlapUntil": until.isoformat(),
        }
        audit.append(
            session.connection(), key, audit.Entry(audit.WEBHOOK_CONFIGURED, org_id, actor=actor, data=data)
        )
    return until


def config_row(engine: Engine, org_id: str) -> WebhookConfig | None:
    """The stored settings as they are (secrets encrypted): for showing, never for sending."""
    with read_session(engine) as session:
        return session.get(WebhookConfig, org_id)


def create_event(
    engine: Engine,
    org_id: str,
    fact_key: str,
    event_type: str,
    request_id: str | None,
    render: Callable[[str, datetime], dict[str, Any]],
) -> tuple[WebhookEvent, bool]:
    """The event reporting ``fact_key``: made now (``render(event_id, created_at)`` gives its
    payload) or the one made before; the flag says which."""
    found = event_by_fact(engine, fact_key)
    if found is not None:
        return found, False
    event_id, now = urn("event"), utcnow()
    row = WebhookEvent(
        id=event_id,
        organization_id=org_id,
        fact_key=fact_key,
        event_type=event_type,
        request_id=request_id,
        payload=render(event_id, now),
        created_at=now,
    )
    try:
        with write_session(engine) as session:
            session.add(row)
    except IntegrityError:  # a concurrent attempt made it first (PostgreSQL)
        found = event_by_fact(engine, fact_key)
        if found is None:
            raise
        return found, False
    return row, True


def event_by_fact(engine: Engine, fact_key: str) -> WebhookEvent | None:
    with read_session(engine) as session:
        return session.exec(select(WebhookEvent).where(WebhookEvent.fact_key == fact_key)).first()


def get_event(engine: Engine, event_id: str) -> WebhookEvent:
    with read_session(engine) as session:
        row = session.get(WebhookEvent, event_id)
    if row is None:
        raise NotFound(f"webhook event {event_id} not found")
    return row


def list_events(
    engine: Engine, org_id: str, limit: int = 50, request_id: str | None = None
) -> list[WebhookEvent]:
    """The organization's newest events (of one request when ``request_id`` is given)."""
    with read_session(engine) as session:
        stmt = select(WebhookEvent).where(WebhookEvent.organization_id == org_id)
        if request_id is not None:
            stmt = stmt.where(WebhookEvent.request_id == request_id)
        stmt = stmt.order_by(col(WebhookEvent.created_at).desc()).limit(limit)
        return list(session.exec(stmt))


def failed_between(engine: Engine, org_id: str, since: datetime, until: datetime, limit: int) -> list[str]:
    """The ids of the organization's failed events made between ``since`` and ``until``, oldest
    first, at most ``limit``."""
    with read_session(engine) as session:
        return list(
            session.exec(
                select(WebhookEvent.id)
                .where(
                    WebhookEvent.organization_id == org_id,
                    WebhookEvent.state == FAILED,
                    WebhookEvent.created_at >= since,
                    WebhookEvent.created_at <= until,
                )
                .order_by(col(WebhookEvent.created_at))
                .limit(limit)
            )
        )


def event_of(engine: Engine, org_id: str, event_id: str) -> WebhookEvent | None:
    """The organization's event (None for another organization's)."""
    with read_session(engine) as session:
        event = session.get(WebhookEvent, event_id)
        return event if event is not None and event.organization_id == org_id else None


def redeliver(
    engine: Engine, org_id: str, event_id: str, kind: str, actor: str, reason: str | None = None
) -> WebhookEvent:
    """Make the organization's event ``pending`` again to deliver it once more, with
    ``WEBHOOK_REDELIVERY`` naming ``actor`` (and the ``reason`` they gave, if any): ``kind``
    ``retry`` takes a failed event, ``resend`` a delivered one (``NotFound`` for another
    organization's; ``WrongState`` for any other state, so two people asking at once start one
    delivery)."""
    wanted = {"retry": FAILED, "resend": DELIVERED}[kind]
    key = audit.signer(engine)
    with write_session(engine) as session:
        event = session.get(WebhookEvent, event_id, with_for_update=True)
        if event is None or event.organization_id != org_id:
            raise NotFound(f"webhook event {event_id} not found")
        if event.state != wanted or event.resending:
            raise WrongState("being resent" if event.resending else event.state)
        if kind == "resend":  # it stays delivered; the resend's attempts are shown as they come
            event.resending, event.next_attempt_at = True, None
        else:
            event.state, event.next_attempt_at = PENDING, None
        session.add(event)
        data = {
            "eventId": event.id,
            "eventType": event.event_type,
            "kind": kind,
            **({"reason": reason} if reason else {}),
        }
        entry = audit.Entry(
            audit.WEBHOOK_REDELIVERY, org_id, request_id=event.request_id, actor=actor, data=data
        )
        audit.append(session.connection(), key, entry)
        session.flush()
        session.expunge(event)
        return event


def undo_redelivery(engine: Engine, event_id: str, attempts: int, state: str) -> None:
    """Put back the state ``redeliver`` changed when no delivery started (Temporal did not take
    it): only while the event is still pending with no attempt since, so a delivery that did
    start is never overwritten. Its ``WEBHOOK_REDELIVERY`` record stays: it was asked for."""
    with write_session(engine) as session:
        event = session.get(WebhookEvent, event_id, with_for_update=True)
        if event is not None and event.state == PENDING and event.attempts == attempts:
            event.state = state
            session.add(event)
        elif event is not None and event.resending and event.attempts == attempts:
            event.resending = False
            session.add(event)


class WrongState(Exception):
    """The event is not in the state the change needs (its state is the message)."""


def attempts_of(engine: Engine, event_id: str) -> list[WebhookAttempt]:
    with read_session(engine) as session:
        stmt = select(WebhookAttempt).where(WebhookAttempt.event_id == event_id)
        return list(session.exec(stmt.order_by(col(WebhookAttempt.number))))


def record_attempt(
    engine: Engine,
    event_id: str,
    scheduled_at: datetime,
    status_code: int | None,
    error: str | None,
    delivered: bool,
    next_attempt_at: datetime | None,
    url: str | None = None,
    duration_ms: int | None = None,
    answer: tuple[list[list[str]] | None, str | None] = (None, None),
) -> None:
    """One attempt's outcome: a numbered attempt row (with the URL, its query dropped, how long
    the POST took and the receiver's ``answer``: headers, the start of its body) and the event's
    summary of its delivery. An event delivered before stays delivered whatever a resend does."""
    now = utcnow()
    error = error[:ERROR_MAX] if error else None
    with write_session(engine) as session:
        event = session.get(WebhookEvent, event_id, with_for_update=True)
        if event is None:
            raise NotFound(f"webhook event {event_id} not found")
        event.attempts += 1
        session.add(
            WebhookAttempt(
                event_id=event_id,
                number=event.attempts,
                scheduled_at=scheduled_at,
                finished_at=now,
                status_code=status_code,
                error=error,
                url=_without_query(url)[:2048] if url else None,
                duration_ms=duration_ms,
                response_headers=answer[0],
                response_body=answer[1],
            )
        )
        event.last_status, event.last_error = status_code, error
        if delivered or not event.resending:
            event.state = DELIVERED if delivered else PENDING
            event.delivered_at = now if delivered else None
        event.resending = event.resending and not delivered
        event.next_attempt_at = None if delivered else next_attempt_at
        session.add(event)


def _set_state(engine: Engine, event_id: str, state: str, reason: str) -> None:
    with write_session(engine) as session:
        event = session.get(WebhookEvent, event_id, with_for_update=True)
        if event is None:
            raise NotFound(f"webhook event {event_id} not found")
        if event.state == DELIVERED:  # a delivery is final; a resend that ends ends as such
            if event.resending:
                event.resending, event.next_attempt_at = False, None
                session.add(event)
            return
        event.state, event.next_attempt_at = state, None
        last = f"; last attempt: {event.last_error}" if event.last_error and state == FAILED else ""
        event.last_error = (reason + last)[:ERROR_MAX]
        session.add(event)


def mark_skipped(engine: Engine, event_id: str, reason: str = "no webhook URL configured") -> None:
    _set_state(engine, event_id, SKIPPED, reason)


def mark_failed(engine: Engine, event_id: str, reason: str) -> None:
    _set_state(engine, event_id, FAILED, reason)
