"""Dashboard sessions (issue 14): server-side rows keyed by the SHA-256 of the cookie's token,
which end when idle, at their absolute expiry, when revoked (logout, a new password, a disabled
member), and those that wait for the second factor's code. Starting one and checking it are
``services.logins`` and ``services.members``; the changes that end a member's sessions with an
audit record are ``store.members``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Engine, func, update
from sqlmodel import Session, col, select

from store.db import read_session, write_session
from store.tables import Member, MemberSession


def live_sessions(engine: Engine, member_id: str, now: datetime, idle_since: datetime) -> list[MemberSession]:
    """The member's sessions that are open (logged in, not idle, not expired), newest use first."""
    with read_session(engine) as session:
        return list(
            session.exec(
                _live(select(MemberSession), now, idle_since)
                .where(MemberSession.member_id == member_id)
                .order_by(col(MemberSession.last_seen_at).desc())
            )
        )


def live_session_counts(engine: Engine, org_id: str, now: datetime, idle_since: datetime) -> dict[str, int]:
    """How many open sessions each member of the organization has (members with none left out)."""
    with read_session(engine) as session:
        stmt = (
            _live(select(MemberSession.member_id, func.count()), now, idle_since)
            .join(Member, col(Member.id) == col(MemberSession.member_id))
            .where(Member.organization_id == org_id)
            .group_by(col(MemberSession.member_id))
        )
        return {member_id: int(n) for member_id, n in session.exec(stmt)}


def last_logins(engine: Engine, org_id: str) -> dict[str, datetime]:
    """When each member of the organization last logged in (a session opened, past the code when
    the second factor is on); members who never did are left out."""
    with read_session(engine) as session:
        stmt = (
            select(MemberSession.member_id, func.max(MemberSession.created_at))
            .join(Member, col(Member.id) == col(MemberSession.member_id))
            .where(Member.organization_id == org_id, col(MemberSession.awaiting_code).is_(False))
            .group_by(col(MemberSession.member_id))
        )
        return {member_id: at for member_id, at in session.exec(stmt)}


def _live(stmt: Any, now: datetime, idle_since: datetime) -> Any:
    return stmt.where(
        col(MemberSession.revoked_at).is_(None),
        col(MemberSession.awaiting_code).is_(False),
        col(MemberSession.expires_at) > now,
        col(MemberSession.last_seen_at) >= idle_since,
    )


def start_session(
    engine: Engine,
    member_id: str,
    token_hash: str,
    now: datetime,
    expires_at: datetime,
    *,
    awaiting_code: bool = False,
) -> None:
    """A right password: the session stored (waiting for the second factor's code when
    ``awaiting_code``)."""
    with write_session(engine) as session:
        session.add(session_row(token_hash, member_id, now, expires_at, awaiting_code))


def pending_session(engine: Engine, token_hash: str, now: datetime) -> Member | None:
    """The member of a live session that waits for the second factor's code."""
    with read_session(engine) as session:
        found = session.get(MemberSession, token_hash)
        if (
            found is None
            or not found.awaiting_code
            or found.revoked_at is not None
            or found.expires_at <= now
        ):
            return None
        member = session.get(Member, found.member_id)
        if member is None or member.disabled_at is not None or member.totp_enabled_at is None:
            return None
        return member


def session_row(
    token_hash: str, member_id: str, now: datetime, expires_at: datetime, awaiting_code: bool = False
) -> MemberSession:
    return MemberSession(
        token_hash=token_hash,
        member_id=member_id,
        created_at=now,
        last_seen_at=now,
        expires_at=expires_at,
        awaiting_code=awaiting_code,
    )


def live_session(engine: Engine, token_hash: str, now: datetime, idle_since: datetime) -> Member | None:
    """The member of a session that is neither revoked, past its absolute expiry, nor idle since
    before ``idle_since``; its last use becomes ``now``."""
    with write_session(engine) as session:
        found = session.get(MemberSession, token_hash)
        if (
            found is None
            or found.awaiting_code
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
    """End every session of the member."""
    with write_session(engine) as session:
        end_sessions_in(session, member_id, now)


def end_sessions_in(session: Session, member_id: str, now: datetime, keep: str | None = None) -> int:
    stmt = update(MemberSession).where(
        col(MemberSession.member_id) == member_id,
        col(MemberSession.revoked_at).is_(None),
        col(MemberSession.expires_at) > now,
    )
    if keep is not None:
        stmt = stmt.where(col(MemberSession.token_hash) != keep)
    return int(session.execute(stmt.values(revoked_at=now)).rowcount)  # type: ignore[attr-defined]
