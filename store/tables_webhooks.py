"""The webhook's tables (``store.tables`` re-exports them): an organization's endpoints, each event
and each delivery attempt."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, LargeBinary, Text
from sqlalchemy import false as sa_false
from sqlalchemy import true as sa_true
from sqlmodel import Field, SQLModel


class WebhookEndpoint(SQLModel, table=True):
    """One of an organization's webhook endpoints (issue 34, migration 0032): a URL with its own
    secrets (CONTRACT 7's signature secret, encryption secret and salt, sealed under the master
    key), on or off, and the event types it takes. CONTRACT 7's "one URL per organization" is an
    organization with one endpoint; each further endpoint gets its own copy of every event."""

    __tablename__ = "webhook_endpoint"
    id: str = Field(primary_key=True, max_length=24)
    organization_id: str = Field(foreign_key="organization.id", index=True, max_length=24)
    url: str = Field(max_length=2048)
    description: str | None = Field(default=None, max_length=200)
    signature_secret_ciphertext: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    encryption_secret_ciphertext: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    encryption_salt: str = Field(max_length=255)
    created_at: datetime
    updated_at: datetime
    # a rotation's overlap (migration 0030): the previous signature secret, sealed, which
    # deliveries are signed with too (``X-Signature``) until ``previous_until``
    previous_signature_secret_ciphertext: bytes | None = Field(
        default=None, sa_column=Column(LargeBinary, nullable=True)
    )
    previous_until: datetime | None = None
    # what it receives (migration 0031): off, it takes nothing (its events are skipped);
    # ``event_types`` None takes every type, else those listed (a test event always)
    enabled: bool = Field(default=True, sa_column_kwargs={"server_default": sa_true()})
    event_types: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class WebhookEvent(SQLModel, table=True):
    """One event for one endpoint and the outcome of its delivery. ``fact_key`` names the fact the
    event reports (``credential:<decisionId>``) for its first endpoint, ``<fact>@<endpointId>`` for
    each further one, so however often its creation is retried there is one event per endpoint.
    ``endpoint_id`` is None when the organization had no endpoint. ``state``: pending (being
    delivered or retried), delivered, failed, skipped (no endpoint, or it does not take it)."""

    __tablename__ = "webhook_event"
    __table_args__ = (Index("ix_webhook_event_org_created", "organization_id", "created_at"),)
    id: str = Field(primary_key=True, max_length=64)  # urn:via:event:<uuid>
    organization_id: str = Field(foreign_key="organization.id", max_length=24)
    fact_key: str = Field(unique=True, max_length=128)
    event_type: str = Field(max_length=32)
    request_id: str | None = Field(default=None, index=True, max_length=24)
    endpoint_id: str | None = Field(default=None, index=True, max_length=24)  # migration 0032
    payload: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime
    state: str = Field(default="pending", max_length=16)
    attempts: int = 0
    last_status: int | None = None
    last_error: str | None = Field(default=None, max_length=500)
    next_attempt_at: datetime | None = None
    delivered_at: datetime | None = None
    # a delivered event sent once more (a resend): it stays delivered while the resend runs
    # (migration 0029)
    resending: bool = Field(default=False, sa_column_kwargs={"server_default": sa_false()})


class WebhookAttempt(SQLModel, table=True):
    """One delivery attempt of an event, numbered from 1 across every run (``mandatum webhook
    retry`` continues the count). ``scheduled_at`` is Temporal's time for the attempt; ``url`` the
    address it was sent to, without its query (where a receiver's token may sit); ``duration_ms``
    how long the POST took (attempts made before both were kept have neither)."""

    __tablename__ = "webhook_attempt"
    event_id: str = Field(foreign_key="webhook_event.id", primary_key=True, max_length=64)
    number: int = Field(primary_key=True)
    scheduled_at: datetime
    finished_at: datetime
    status_code: int | None = None
    error: str | None = Field(default=None, max_length=500)
    url: str | None = Field(default=None, max_length=2048)
    duration_ms: int | None = None
    # the receiver's answer, for the organization's event page (migration 0029): its headers (at
    # most 50, each value cut to 500 characters) and the first 2 KiB of its body as text
    response_headers: list[list[str]] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    response_body: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
