"""Dashboard members, their one-time link tokens and their sessions (issue 14): rows and the
transactions over them. Hashing passwords, making tokens and deciding a login are
``services.members``; nothing here sees a password or a token in clear."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine, update
from sqlmodel import col, select

from core.ids import new_object_id
from store.db import read_session, write_session
from store.tables import Member, MemberSession, MemberToken, Organization


class NotFound(LookupError):
    pass


class EmailTaken(ValueError):
    pass


def add_member(engine: Engine, org_id: str, email: str, role: str, now: datetime) -> Member:
    """A new member of the organization, without a password yet."""
    with write_session(engine) as session:
        if session.get(Organization, org_id) is None:
            raise NotFound(f"organization {org_id} not found")
        if session.exec(select(Member.id).where(Member.email == email)).first() is not None:
            raise EmailTaken(f"{email} is already a member")
        member = Member(id=new_object_id(), organization_id=org_id, email=email, role=role, created_at=now)
        session.add(member)
        session.flush()
        session.refresh(member)
        session.expunge(member)
        return member


def member_by_email(engine: Engine, email: str) -> Member | None:
    with read_session(engine) as session:
        return session.exec(select(Member).where(Member.email == email)).first()


def get_member(engine: Engine, member_id: str) -> Member | None:
    with read_session(engine) as session:
        return session.get(Member, member_id)


def members_of(engine: Engine, org_id: str) -> list[Member]:
    with read_session(engine) as session:
        return list(
            session.exec(
                select(Member).where(Member.organization_id == org_id).order_by(col(Member.created_at))
            )
        )


def add_token(
    engine: Engine, member_id: str, token_hash: str, purpose: str, now: datetime, expires_at: datetime
) -> None:
    with write_session(engine) as session:
        session.add(
            MemberToken(
                token_hash=token_hash,
                member_id=member_id,
                purpose=purpose,
                created_at=now,
                expires_at=expires_at,
            )
        )


def recent_token(engine: Engine, member_id: str, purpose: str, since: datetime) -> bool:
    """Whether a link of ``purpose`` was made for the member after ``since``."""
    with read_session(engine) as session:
        found = session.exec(
            select(MemberToken.token_hash).where(
                MemberToken.member_id == member_id,
                MemberToken.purpose == purpose,
                col(MemberToken.created_at) > since,
            )
        ).first()
        return found is not None


def take_token_and_set_password(
    engine: Engine, token_hash: str, purposes: tuple[str, ...], password_hash: str, now: datetime
) -> Member | None:
    """Use a live one-time token once and set its member's password; every other live token and
    session of the member ends with it (a reset logs out everywhere). None for a token that is
    unknown, used, expired, of another purpose, or of a disabled member."""
    with write_session(engine) as session:
        used = session.execute(
            update(MemberToken)
            .where(
                col(MemberToken.token_hash) == token_hash,
                col(MemberToken.used_at).is_(None),
                col(MemberToken.expires_at) > now,
                col(MemberToken.purpose).in_(purposes),
            )
            .values(used_at=now)
        )
        if used.rowcount != 1:  # type: ignore[attr-defined]
            return None
        token = session.get(MemberToken, token_hash)
        assert token is not None
        member = session.get(Member, token.member_id)
        if member is None or member.disabled_at is not None:
            return None
        member.password_hash, member.failed_logins, member.locked_until = password_hash, 0, None
        session.add(member)
        session.execute(
            update(MemberToken)
            .where(col(MemberToken.member_id) == member.id, col(MemberToken.used_at).is_(None))
            .values(used_at=now)
        )
        _end_sessions(session, member.id, now)
        session.flush()
        session.refresh(member)
        session.expunge(member)
        return member


def record_login_failure(engine: Engine, member_id: str, locked_until: datetime | None) -> int:
    """Count a failed login (and lock until ``locked_until`` when given); the count so far."""
    with write_session(engine) as session:
        member = session.get(Member, member_id)
        assert member is not None
        member.failed_logins += 1
        if locked_until is not None:
            member.locked_until = locked_until
        session.add(member)
        return member.failed_logins


def start_session(
    engine: Engine, member_id: str, token_hash: str, now: datetime, expires_at: datetime
) -> None:
    """A successful login: the failure count is reset and the session stored."""
    with write_session(engine) as session:
        member = session.get(Member, member_id)
        assert member is not None
        member.failed_logins, member.locked_until = 0, None
        session.add(member)
        session.add(
            MemberSession(
                token_hash=token_hash,
                member_id=member_id,
                created_at=now,
                last_seen_at=now,
                expires_at=expires_at,
            )
        )


def live_session(engine: Engine, token_hash: str, now: datetime, idle_since: datetime) -> Member | None:
    """The member of a session that is neither revoked, past its absolute expiry, nor idle since
    before ``idle_since``; its last use becomes ``now``."""
    with write_session(engine) as session:
        found = session.get(MemberSession, token_hash)
        if (
            found is None
            or found.revoked_at is not None
            or found.expires_at <= now
            or found.last_seen_at < idle_since
        ):
            return None
        member = session.get(Member, found.member_id)
        if member is None or member.disabled_at is not None:
            return None
        found.last_seen_at = now
        session.add(found)
        session.flush()
        session.expunge(member)
        return member


def end_session(engine: Engine, token_hash: str, now: datetime) -> None:
    with write_session(engine) as session:
        session.execute(
            update(MemberSession)
            .where(col(MemberSession.token_hash) == token_hash, col(MemberSession.revoked_at).is_(None))
            .values(revoked_at=now)
        )


def end_sessions(engine: Engine, member_id: str, now: datetime) -> None:
    with write_session(engine) as session:
        _end_sessions(session, member_id, now)


def _end_sessions(session, member_id: str, now: datetime) -> None:  # type: ignore[no-untyped-def]
    session.execute(
        update(MemberSession)
        .where(col(MemberSession.member_id) == member_id, col(MemberSession.revoked_at).is_(None))
        .values(revoked_at=now)
    )
