"""Dashboard members, their one-time link tokens and their sessions (issue 14): rows and the
transactions over them. Hashing passwords, making tokens and deciding a login are
``services.members``; nothing here sees a password, a token or a TOTP secret in clear.

Each change an owner (or the member) makes to a member is recorded in the audit trail in the same
transaction: ``MEMBER_INVITED``, ``MEMBER_ROLE_CHANGED``, ``MEMBER_DISABLED``, ``MEMBER_ENABLED`` and
``MEMBER_SESSIONS_ENDED``, each with the member's id, e-mail and role (never a password, token or
secret); the second factor's are ``store.second_factor``. An organization always keeps an enabled
owner: a change that would leave none is refused (``LastOwner``)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from core.ids import new_object_id
from core.kinds import PLATFORM_ROLE
from store import audit, throttle
from store import member_sessions as sessions
from store.db import read_session, write_session
from store.tables import Member, MemberToken, Organization
from trust.keys import Ed25519KeyPair

log = logging.getLogger("mandatum.store.members")


class NotFound(LookupError):
    pass


class EmailTaken(ValueError):
    pass


class AddressTaken(ValueError):
    """The address has a password elsewhere already (another organization's, or operators's)."""


class LastOwner(ValueError):
    """The change would leave the organization without an enabled owner."""


def record_change(
    session: Session, key: Ed25519KeyPair, kind: str, member: Member, actor: str, **extra: Any
) -> None:
    """The audit record of a change to ``member`` in the change's transaction (a log line for
    operators, who belong to no organization's trail)."""
    session.flush()
    if member.organization_id is None:
        # operators belong to no organization's trail: their account changes are logged
        log.info("operator %s: %s by %s", member.id, kind, actor)
        return
    data = {"memberId": member.id, "email": member.email, "role": member.role, **extra}
    audit.append(session.connection(), key, audit.Entry(kind, member.organization_id, actor=actor, data=data))


def detached(session: Session, member: Member) -> Member:
    """``member`` as the transaction leaves it, usable after it ends."""
    session.flush()
    session.refresh(member)
    session.expunge(member)
    return member


def add_member(
    engine: Engine,
    org_id: str,
    email: str,
    role: str,
    now: datetime,
    *,
    actor: str,
    reason: str | None = None,
) -> Member:
    """A new member of the organization, without a password yet (``MEMBER_INVITED``, with the
    operator's ``reason`` when one is given), whether or not the address signs in elsewhere;
    ``EmailTaken`` for a member of this organization."""
    key = audit.signer(engine)
    try:
        with write_session(engine) as session:
            if session.get(Organization, org_id) is None:
                raise NotFound(f"organization {org_id} not found")
            mine = select(Member.id).where(Member.email == email, Member.organization_id == org_id)
            if session.exec(mine).first() is not None:
                raise EmailTaken(f"{email} is already a member")
            member = Member(
                id=new_object_id(), organization_id=org_id, email=email, role=role, created_at=now
            )
            session.add(member)
            record_change(
                session, key, audit.MEMBER_INVITED, member, actor, **({"reason": reason} if reason else {})
            )
            return detached(session, member)
    except IntegrityError as exc:  # the same address invited at the same moment (PostgreSQL): one wins
        raise EmailTaken(f"{email} is already a member") from exc


def add_operator(engine: Engine, email: str, now: datetime) -> Member:
    """A new operator (role ``platform``, no organization), without a password yet."""
    with write_session(engine) as session:
        if session.exec(select(Member.id).where(Member.email == email)).first() is not None:
            raise EmailTaken(f"{email} is already a member")
        member = Member(
            id=new_object_id(), organization_id=None, email=email, role=PLATFORM_ROLE, created_at=now
        )
        session.add(member)
        return detached(session, member)


def operator_members(engine: Engine) -> list[Member]:
    """Every operator, oldest first."""
    with read_session(engine) as session:
        return list(
            session.exec(select(Member).where(Member.role == PLATFORM_ROLE).order_by(col(Member.created_at)))
        )


def member_for_change(session: Session, org_id: str | None, member_id: str) -> Member:
    """The organization's member (operators for ``org_id`` None), locked for the change;
    NotFound for anyone else's, alike."""
    member = session.get(Member, member_id, with_for_update=True)
    if member is None or member.organization_id != org_id:
        raise NotFound(f"member {member_id} not found")
    return member


def _other_owners(session: Session, member: Member) -> int:
    """The organization's enabled owners besides ``member``; on PostgreSQL the owners' rows are
    locked, so two owners demoting each other at once cannot both succeed."""
    stmt = select(Member.id).where(
        Member.organization_id == member.organization_id,
        Member.role == "owner",
        col(Member.disabled_at).is_(None),
        Member.id != member.id,
    )
    return len(list(session.exec(stmt.with_for_update())))


def change_role(engine: Engine, org_id: str, member_id: str, role: str, *, actor: str) -> Member:
    """The member's new role (``MEMBER_ROLE_CHANGED`` with the ``previous`` one); the same role changes
    and records nothing. ``LastOwner`` when it would leave no enabled owner."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        member = member_for_change(session, org_id, member_id)
        if member.role == role:
            return detached(session, member)
        if member.role == "owner" and member.disabled_at is None and _other_owners(session, member) == 0:
            raise LastOwner("the organization needs an owner: make another member owner first")
        previous, member.role = member.role, role
        session.add(member)
        record_change(  # previousRole: as records before ``previous`` say it
            session,
            key,
            audit.MEMBER_ROLE_CHANGED,
            member,
            actor,
            previousRole=previous,
            previous={"role": previous},
        )
        return detached(session, member)


def set_disabled(
    engine: Engine, org_id: str | None, member_id: str, disabled: bool, now: datetime, *, actor: str
) -> Member:
    """Disable a member (every session and unused link ends with it; ``MEMBER_DISABLED``) or enable
    them again (``MEMBER_ENABLED``), each with ``disabledAt`` and the ``previous`` one; no change, no
    record. ``LastOwner`` for the last owner."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        member = member_for_change(session, org_id, member_id)
        if (member.disabled_at is not None) == disabled:
            return detached(session, member)
        before = audit.moment(member.disabled_at)
        if disabled:
            if member.role == "owner" and _other_owners(session, member) == 0:
                raise LastOwner("the organization needs an owner: make another member owner first")
            member.disabled_at = now
            sessions.end_sessions_in(session, member.id, now)
            session.execute(
                update(MemberToken)
                .where(col(MemberToken.member_id) == member.id, col(MemberToken.used_at).is_(None))
                .values(used_at=now)
            )
        else:
            member.disabled_at = None
        session.add(member)
        kind = audit.MEMBER_DISABLED if disabled else audit.MEMBER_ENABLED
        after = audit.moment(member.disabled_at)
        record_change(session, key, kind, member, actor, disabledAt=after, previous={"disabledAt": before})
        return detached(session, member)


def end_member_sessions(
    engine: Engine, org_id: str | None, member_id: str, now: datetime, *, actor: str, keep: str | None = None
) -> int:
    """End the member's sessions (but ``keep``, a session's token hash: the one asking), recorded
    as ``MEMBER_SESSIONS_ENDED`` with how many ended; the number."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        member = member_for_change(session, org_id, member_id)
        ended = sessions.end_sessions_in(session, member.id, now, keep=keep)
        record_change(session, key, audit.MEMBER_SESSIONS_ENDED, member, actor, sessions=ended)
        return ended


def member_by_email(engine: Engine, email: str) -> Member | None:
    """The member an address signs in as: the one with a password, else its oldest invitation."""
    with read_session(engine) as session:
        stmt = select(Member).where(Member.email == email)
        return session.exec(
            stmt.order_by(col(Member.password_hash).is_(None), col(Member.created_at))
        ).first()


def signs_in_elsewhere(engine: Engine, member: Member) -> bool:
    """Whether another member with ``member``'s address has a password (it logs in there)."""
    with read_session(engine) as session:
        return _elsewhere(session, member) is not None


def _elsewhere(session: Session, member: Member) -> str | None:
    stmt = select(Member.id).where(
        Member.email == member.email, Member.id != member.id, col(Member.password_hash).is_not(None)
    )
    return session.exec(stmt).first()


def operator_by_email(engine: Engine, email: str) -> Member | None:
    with read_session(engine) as session:
        return session.exec(select(Member).where(Member.email == email, Member.role == PLATFORM_ROLE)).first()


def member_signing_in(engine: Engine, email: str) -> Member | None:
    """The member with a password that logs in with ``email``, if any (enabled or not)."""
    with read_session(engine) as session:
        stmt = select(Member).where(Member.email == email, col(Member.password_hash).is_not(None))
        return session.exec(stmt).first()


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


def token_holder(engine: Engine, token_hash: str, purposes: tuple[str, ...], now: datetime) -> Member | None:
    """The enabled member of a live one-time token of one of ``purposes`` (not using it), else None."""
    with read_session(engine) as session:
        token = session.get(MemberToken, token_hash)
        live = token is not None and token.used_at is None and token.expires_at > now
        if token is None or not live or token.purpose not in purposes:
            return None
        member = session.get(Member, token.member_id)
        return member if member is not None and member.disabled_at is None else None


def take_token_and_set_password(
    engine: Engine,
    token_hash: str,
    purposes: tuple[str, ...],
    password_hash: str,
    now: datetime,
    *,
    forget: str | None = None,
) -> Member | None:
    """Use a live one-time token once and set its member's password; every other live token and
    session of the member ends with it (a reset logs out everywhere), and so do the failed logins
    counted for the address key ``forget`` (``store.throttle``). None for a token that is unknown,
    used, expired, of another purpose, or of a disabled member; ``AddressTaken`` (and the token
    kept) when the address has a password elsewhere."""
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
        member = session.get(Member, token.member_id, with_for_update=True)
        if member is None or member.disabled_at is not None:
            return None
        if _elsewhere(session, member) is not None:
            raise AddressTaken(f"{member.email} has a password elsewhere")
        member.password_hash = password_hash
        session.add(member)
        try:  # another invitation of the address taken up at the same moment
            session.flush()
        except IntegrityError as exc:
            raise AddressTaken(f"{member.email} has a password elsewhere") from exc
        if forget is not None:
            throttle.forget_address(session.connection(), forget)
        session.execute(
            update(MemberToken)
            .where(col(MemberToken.member_id) == member.id, col(MemberToken.used_at).is_(None))
            .values(used_at=now)
        )
        sessions.end_sessions_in(session, member.id, now)
        session.flush()
        session.refresh(member)
        session.expunge(member)
        return member
