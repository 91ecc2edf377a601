"""Webhook events and the outcome of their delivery (CONTRACT 7); the endpoints they go to are
``store.webhook_endpoints`` (its names are re-exported here for the callers of one webhook).

An event is made once per fact and endpoint (``fact_key``): a retried activity or a replayed
workflow gets the events made the first time, with their ids and payloads.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from core.ids import urn
from store import audit
from store.db import read_session, utcnow, write_session
from store.errors import NotFound
from store.tables import WebhookAttempt, WebhookEvent

# re-exported for the callers of one webhook (the organization's oldest endpoint)
from store.webhook_endpoints import (  # noqa: F401
    DESCRIPTION_MAX,
    ENDPOINTS_AT_MOST,
    EVENT_TYPES,
    UrlPolicy,
    WebhookSettings,
    config_row,
    endpoint_ids,
    endpoint_rows,
    get_config,
    get_endpoint,
    new_encryption_secret,
    new_salt,
    new_signature_secret,
    refusal,
    remove_endpoint,
    rotate_signature_secret,
    set_config,
    set_delivery,
    without_query,
)

PENDING, DELIVERED, FAILED, SKIPPED = "pending", "delivered", "failed", "skipped"
ERROR_MAX = 500  # the column's length


def create_events(
    engine: Engine,
    org_id: str,
    fact: str,
    event_type: str,
    request_id: str | None,
    render: Callable[[str, datetime], dict[str, Any]],
    endpoint_id: str | None = None,
) -> list[tuple[WebhookEvent, bool]]:
    """The events reporting ``fact``, one per endpoint of the organization (oldest first), or the
    one endpoint ``endpoint_id`` names; one without an endpoint (to be skipped) when it has none.
    Each is made now (``render(event_id, created_at)`` gives its payload) or is the one made
    before: the flag says which. The first event's ``fact_key`` is ``fact``, each further one's
    ``<fact>@<endpointId>``, so a fact made again never makes a second event for an endpoint."""
    for _ in range(3):  # a concurrent maker of the same fact wins: read what it made
        try:
            return _create_events(engine, org_id, fact, event_type, request_id, render, endpoint_id)
        except IntegrityError:
            continue
    return _create_events(engine, org_id, fact, event_type, request_id, render, endpoint_id)


def _create_events(
    engine: Engine,
    org_id: str,
    fact: str,
    event_type: str,
    request_id: str | None,
    render: Callable[[str, datetime], dict[str, Any]],
    endpoint_id: str | None,
) -> list[tuple[WebhookEvent, bool]]:
    with read_session(engine) as session:  # made before (a retried activity): no write at all
        targets: list[str | None] = [endpoint_id] if endpoint_id else list(endpoint_ids(session, org_id))
        found = events_of_fact(session, fact, [t for t in targets if t])
    if not _missing(found, targets):
        return _in_order(found, targets, [])
    with write_session(engine) as session:
        targets = [endpoint_id] if endpoint_id else list(endpoint_ids(session, org_id))
        found = events_of_fact(session, fact, [t for t in targets if t])
        taken = {e.fact_key for e in found}
        made: list[WebhookEvent] = []
        now = utcnow()  # the copies of a fact for each endpoint were made at one moment
        for target in _missing(found, targets):
            key = fact if fact not in taken else f"{fact}@{target}"
            event_id = urn("event")
            row = WebhookEvent(
                id=event_id,
                organization_id=org_id,
                fact_key=key,
                event_type=event_type,
                request_id=request_id,
                endpoint_id=target,
                payload=render(event_id, now),
                created_at=now,
            )
            session.add(row)
            session.flush()
            taken.add(key)
            made.append(row)
        for event in [*found, *made]:
            session.expunge(event)
    return _in_order(found, targets, made)


def _missing(found: list[WebhookEvent], targets: list[str | None]) -> list[str | None]:
    """The endpoints still without their event (None: the organization has none and no event was made)."""
    have = {e.endpoint_id for e in found}
    if not targets:
        return [] if found else [None]
    return [t for t in targets if t not in have]


def _in_order(
    found: list[WebhookEvent], targets: list[str | None], made: list[WebhookEvent]
) -> list[tuple[WebhookEvent, bool]]:
    """The events in the endpoints' order (oldest endpoint first), then any of an endpoint no
    longer there; each with whether it was made now."""
    rank = {t: i for i, t in enumerate(targets)}
    pairs = [(e, False) for e in found] + [(e, True) for e in made]
    return sorted(pairs, key=lambda p: (rank.get(p[0].endpoint_id, len(rank)), p[0].fact_key))


def events_of_fact(session: Any, fact: str, endpoints: list[str]) -> list[WebhookEvent]:
    """The events made for ``fact`` (for any of ``endpoints``, or without one), first made first."""
    keys = [fact, *(f"{fact}@{e}" for e in endpoints)]
    stmt = select(WebhookEvent).where(col(WebhookEvent.fact_key).in_(keys))
    return list(session.exec(stmt.order_by(col(WebhookEvent.created_at), col(WebhookEvent.id))))


def create_event(
    engine: Engine,
    org_id: str,
    fact_key: str,
    event_type: str,
    request_id: str | None,
    render: Callable[[str, datetime], dict[str, Any]],
    endpoint_id: str | None = None,
) -> tuple[WebhookEvent, bool]:
    """The first of ``create_events``: for an organization with one endpoint, or for one
    endpoint (a test event)."""
    return create_events(engine, org_id, fact_key, event_type, request_id, render, endpoint_id)[0]


def event_by_fact(engine: Engine, fact_key: str) -> WebhookEvent | None:
    """The first event made for a fact (its first endpoint's)."""
    with read_session(engine) as session:
        return session.exec(select(WebhookEvent).where(WebhookEvent.fact_key == fact_key)).first()


def get_event(engine: Engine, event_id: str) -> WebhookEvent:
    with read_session(engine) as session:
        row = session.get(WebhookEvent, event_id)
    if row is None:
        raise NotFound(f"webhook event {event_id} not found")
    return row


def list_events(
    engine: Engine,
    org_id: str,
    limit: int = 50,
    request_id: str | None = None,
    endpoint_id: str | None = None,
) -> list[WebhookEvent]:
    """The organization's newest events (of one request, for one endpoint, when given)."""
    with read_session(engine) as session:
        stmt = select(WebhookEvent).where(WebhookEvent.organization_id == org_id)
        if request_id is not None:
            stmt = stmt.where(WebhookEvent.request_id == request_id)
        if endpoint_id is not None:
            stmt = stmt.where(WebhookEvent.endpoint_id == endpoint_id)
        stmt = stmt.order_by(col(WebhookEvent.created_at).desc()).limit(limit)
        return list(session.exec(stmt))


def failed_between(
    engine: Engine,
    org_id: str,
    since: datetime,
    until: datetime,
    limit: int,
    endpoint_id: str | None = None,
) -> list[str]:
    """The ids of the organization's failed events (for one endpoint when given) made between
    ``since`` and ``until``, oldest first, at most ``limit``."""
    with read_session(engine) as session:
        stmt = select(WebhookEvent.id).where(
            WebhookEvent.organization_id == org_id,
            WebhookEvent.state == FAILED,
            WebhookEvent.created_at >= since,
            WebhookEvent.created_at <= until,
        )
        if endpoint_id is not None:
            stmt = stmt.where(WebhookEvent.endpoint_id == endpoint_id)
        return list(session.exec(stmt.order_by(col(WebhookEvent.created_at)).limit(limit)))


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
                url=without_query(url)[:2048] if url else None,
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
