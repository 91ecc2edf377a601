"""The dashboard's tables: its members (an organization's, or operators), their one-time
tokens, recovery codes and sessions, and the counts that throttle failed logins. Re-exported by
``store.tables``, where every table is imported from. Every schema change comes with an Alembic
revision in migrations/versions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, Index, LargeBinary, UniqueConstraint, text
from sqlmodel import Field, SQLModel


class Member(SQLModel, table=True):
    """A person who uses the dashboard for one organization (issue 14; migration 0011), or platform
    operators, of no organization (role ``platform``, the operators' area; migration 0014). An address
    is a member of an organization once, and has a password in one place at most (migration 0016):
    invitations to an address that signs in elsewhere wait like any other, and cannot be taken up
    (docs/adr/0003-one-address-one-dashboard.md). The password is an Argon2id hash
    (``services.passwords``), absent until the member sets one from their link."""

    __tablename__ = "member"
    __table_args__ = (
        UniqueConstraint("organization_id", "email", name="uq_member_org_email"),
        Index(
            "uq_member_email_with_password",
            "email",
            unique=True,
            sqlite_where=text("password_hash IS NOT NULL"),
            postgresql_where=text("password_hash IS NOT NULL"),
        ),
    )
    id: str = Field(primary_key=True, max_length=24)
    organization_id: str | None = Field(
        default=None, foreign_key="organization.id", index=True, max_length=24
    )
    email: str = Field(index=True, max_length=320)
    # owner | developer | support (core.kinds.MemberRole), or platform (core.kinds.PLATFORM_ROLE)
    role: str = Field(max_length=16)
    password_hash: str | None = Field(default=None, max_length=255)
    created_at: datetime
    disabled_at: datetime | None = None
    # the TOTP second factor (RFC 6238): its secret sealed under the master key while it is on, when
    # it was turned on, and the last time step used (no code twice); a new secret waiting for its
    # first code (turning the factor on, or replacing it) is kept apart until then (migration 0017)
    totp_secret_ciphertext: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    totp_enabled_at: datetime | None = None
    totp_last_step: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    totp_pending_ciphertext: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))


class MemberToken(SQLModel, table=True):
    """A one-time link token of a member (set the first password, reset it), kept as its SHA-256."""

    __tablename__ = "member_token"
    token_hash: str = Field(primary_key=True, max_length=64)
    member_id: str = Field(foreign_key="member.id", index=True, max_length=24)
    purpose: str = Field(max_length=16)  # set_password | reset_password
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None


class MemberRecoveryCode(SQLModel, table=True):
    """One of a member's ten one-time recovery codes (issue 30, item 7; migration 0017), kept as
    HMAC-SHA256 of the member's id and the code under a sub-key of the master key
    (``services.second_factor``); ``used_at`` once it stood in for a code at a login or a change."""

    __tablename__ = "member_recovery_code"
    code_hash: str = Field(primary_key=True, max_length=64)
    member_id: str = Field(foreign_key="member.id", index=True, max_length=24)
    created_at: datetime
    used_at: datetime | None = None


class MemberSession(SQLModel, table=True):
    """A dashboard session, server-side: the cookie holds a random token, the row its SHA-256.
    Ends when idle too long, at its absolute expiry, or when revoked (logout, password change)."""

    __tablename__ = "member_session"
    token_hash: str = Field(primary_key=True, max_length=64)
    member_id: str = Field(foreign_key="member.id", index=True, max_length=24)
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None
    # True between a right password and the second factor's code: such a session opens no page
    awaiting_code: bool = Field(default=False)


class LoginThrottle(SQLModel, table=True):
    """Failed dashboard logins counted per key (issue 30; migration 0015): an address with a client
    address (``login:<address key>:<client>``), and a client address alone (``client:<client>``).
    A login counts before its password is checked and gives its count back when it was right, so
    a burst never checks more passwords than allowed (``store.throttle``). ``address`` is the keyed
    hash of the e-mail address a row is about (never the address), so a new password forgets it."""

    __tablename__ = "login_throttle"
    key: str = Field(primary_key=True, max_length=160)
    address: str | None = Field(default=None, index=True, max_length=64)
    failures: int = Field(default=0)
    last_failure_at: datetime = Field(index=True)
    locked_until: datetime | None = None
