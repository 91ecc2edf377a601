"""The subject's portal (issue 32, item 2; migration 0026): the one-time code a browser asked for
a contact, and the session it opened. Only keyed hashes are kept (ADR 0016): of the browser's
token (its HttpOnly cookie), of the contact (``JourneySecrets.contact_hash``) and of the code;
``contact_shown`` is the masked contact the page repeats (``core.otp.mask_contact``). Re-exported
by ``store.tables``. Every schema change comes with an Alembic revision in migrations/versions."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel


class PortalChallenge(SQLModel, table=True):
    """A code asked for in one browser (its token's keyed hash), for one contact. ``code_hash`` is
    empty until the code is sent, and stays empty for a contact no organization with the portal
    on knows: every code is then wrong, counted and locked alike."""

    __tablename__ = "portal_challenge"
    token_hash: str = Field(primary_key=True, max_length=64)
    contact_hash: str = Field(index=True, max_length=64)
    contact_shown: str = Field(max_length=100)
    code_hash: str = Field(default="", max_length=64)
    created_at: datetime
    expires_at: datetime
    failures: int = 0
    locked_at: datetime | None = None


class PortalSession(SQLModel, table=True):
    """A browser signed in to the portal for one contact: ended when idle too long, at its maximum
    age, or at sign-out."""

    __tablename__ = "portal_session"
    token_hash: str = Field(primary_key=True, max_length=64)
    contact_hash: str = Field(index=True, max_length=64)
    contact_shown: str = Field(max_length=100)
    created_at: datetime
    last_seen_at: datetime
    ended_at: datetime | None = None
