"""The trusted browser sessions (issue 36, ``iframe.cookie``; migration 0023): a browser in which a
subject confirmed their code on a request that allowed it, trusted for that subject (one
organization's contact) until ``expires_at``. Only a keyed hash of the browser's random token is
kept (``core.otp.JourneySecrets.trusted_session_hash``); the token lives in the browser's HttpOnly
cookie alone. Re-exported by ``store.tables``. Every schema change comes with an Alembic revision
in migrations/versions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index
from sqlmodel import Field, SQLModel


class TrustedSession(SQLModel, table=True):
    """One trusted browser session: which browser (the token's keyed hash), for whom (organization
    and subject, that is one contact), from which request, for how long, and whether it was
    revoked (by the subject's "forget this browser", by the integrator, or replaced in the same
    browser), and by whom."""

    __tablename__ = "trusted_session"
    __table_args__ = (Index("ix_trusted_session_org_subject", "organization_id", "subject_id"),)
    id: str = Field(primary_key=True, max_length=36)
    token_hash: str = Field(unique=True, max_length=64)
    organization_id: str = Field(foreign_key="organization.id", max_length=24)
    subject_id: str = Field(foreign_key="subject.id", max_length=36)
    request_id: str = Field(foreign_key="credential_request.id", max_length=24)  # where it was opened
    surface: str = Field(max_length=8)  # hosted | iframe: the cookie it lives in
    created_at: datetime
    expires_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = Field(default=None, max_length=255)  # an actor (``str(Actor)``)
