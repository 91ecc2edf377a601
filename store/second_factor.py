"""The second factor's rows (issue 14; issue 30, item 7) and the transactions over them: the TOTP
secret in use and a new one waiting for its first code, the time step last used (no code twice),
and the member's ten one-time recovery codes, kept as keyed hashes. Making secrets and codes and
checking them is ``services.second_factor``; nothing here sees a secret or a code in clear.

Each change is recorded in the same transaction: ``MEMBER_SECOND_FACTOR_ON`` (``replaced`` when
another was on), ``MEMBER_SECOND_FACTOR_OFF`` (with an operator's ``reason`` and the sessions it
ended), ``MEMBER_RECOVERY_CODES_MADE`` and ``MEMBER_RECOVERY_CODE_USED`` (how many remain)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Engine, delete, func, update
from sqlmodel import Session, col, select

from store import audit
from store import member_sessions as sessions
from store.db import read_session, write_session
from store.members import detached, member_for_change, record_change
from store.tables import Member, MemberRecoveryCode, MemberSession
from trust.keys import Ed25519KeyPair


def begin(engine: Engine, member_id: str, pending_ciphertext: bytes) -> bool:
    """Keep a new secret waiting for its first code (a factor on keeps working until then); False
    for no such member."""
    with write_session(engine) as session:
        member = session.get(Member, member_id, with_for_update=True)
        if member is None:
            return False
        member.totp_pending_ciphertext = pending_ciphertext
        session.add(member)
        return True


def confirm(
    engine: Engine,
    member_id: str,
    pending_ciphertext: bytes,
    step: int,
    code_hashes: Sequence[str],
    now: datetime,
    *,
    actor: str,
) -> bool:
    """The waiting secret becomes the one in use, its code of ``step`` used, and ``code_hashes``
    the member's recovery codes (the old ones gone), with ``MEMBER_SECOND_FACTOR_ON``. False when
    the secret waiting is no longer ``pending_ciphertext`` (another set-up began, or none waits)."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        member = session.get(Member, member_id, with_for_update=True)
        if member is None or member.totp_pending_ciphertext != pending_ciphertext:
            return False
        replaced = member.totp_enabled_at is not None
        member.totp_secret_ciphertext, member.totp_pending_ciphertext = pending_ciphertext, None
        member.totp_enabled_at, member.totp_last_step = now, step
        session.add(member)
        _replace_codes(session, member_id, code_hashes, now)
        record_change(session, key, audit.MEMBER_SECOND_FACTOR_ON, member, actor, replaced=replaced)
        return True


def replace_codes(
    engine: Engine, member_id: str, code_hashes: Sequence[str], now: datetime, *, actor: str
) -> bool:
    """A new set of recovery codes in place of the old (``MEMBER_RECOVERY_CODES_MADE``); False
    when the factor is off."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        member = session.get(Member, member_id, with_for_update=True)
        if member is None or member.totp_enabled_at is None:
            return False
        _replace_codes(session, member_id, code_hashes, now)
        record_change(session, key, audit.MEMBER_RECOVERY_CODES_MADE, member, actor, codes=len(code_hashes))
        return True


def _replace_codes(session: Session, member_id: str, code_hashes: Sequence[str], now: datetime) -> None:
    session.execute(delete(MemberRecoveryCode).where(col(MemberRecoveryCode.member_id) == member_id))
    session.add_all(MemberRecoveryCode(code_hash=h, member_id=member_id, created_at=now) for h in code_hashes)


def codes_left(engine: Engine, member_id: str) -> int:
    """How many of the member's recovery codes are unused."""
    with read_session(engine) as session:
        return _left(session, member_id)


def _left(session: Session, member_id: str) -> int:
    stmt = select(func.count()).where(
        col(MemberRecoveryCode.member_id) == member_id, col(MemberRecoveryCode.used_at).is_(None)
    )
    return int(session.exec(stmt).one())


def use_step(engine: Engine, member_id: str, step: int) -> bool:
    """Mark the TOTP code of ``step`` used; False if it or a later one was used already."""
    with write_session(engine) as session:
        return _use_step(session, member_id, step)


def _use_step(session: Session, member_id: str, step: int) -> bool:
    """One conditional UPDATE, so two requests with one code never both get True."""
    used = session.execute(
        update(Member)
        .where(
            col(Member.id) == member_id,
            col(Member.totp_enabled_at).is_not(None),
            (col(Member.totp_last_step).is_(None)) | (col(Member.totp_last_step) < step),
        )
        .values(totp_last_step=step)
    )
    return bool(used.rowcount == 1)  # type: ignore[attr-defined]


def use_code(engine: Engine, member_id: str, code_hash: str, now: datetime, *, actor: str) -> int | None:
    """Use one recovery code once: how many remain (``MEMBER_RECOVERY_CODE_USED``); None for a
    code the member does not have unused."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        return _use_code(session, key, member_id, code_hash, now, actor)


def _use_code(
    session: Session, key: Ed25519KeyPair, member_id: str, code_hash: str, now: datetime, actor: str
) -> int | None:
    """One conditional UPDATE: of two requests with one code, one uses it."""
    used = session.execute(
        update(MemberRecoveryCode)
        .where(
            col(MemberRecoveryCode.code_hash) == code_hash,
            col(MemberRecoveryCode.member_id) == member_id,
            col(MemberRecoveryCode.used_at).is_(None),
        )
        .values(used_at=now)
    )
    member = session.get(Member, member_id)
    if used.rowcount != 1 or member is None or member.totp_enabled_at is None:  # type: ignore[attr-defined]
        return None
    left = _left(session, member_id)
    record_change(session, key, audit.MEMBER_RECOVERY_CODE_USED, member, actor, remaining=left)
    return left


def complete_login(
    engine: Engine,
    pending_hash: str,
    member_id: str,
    token_hash: str,
    now: datetime,
    expires_at: datetime,
    *,
    actor: str,
    step: int | None = None,
    code_hash: str | None = None,
) -> bool:
    """The right TOTP code of ``step``, or the recovery code of ``code_hash``, after a right
    password, in one transaction: the code is used (never again, even by a request racing this
    one), the waiting session ends, a full one starts. False when the code was used already or
    the waiting session ended meanwhile."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        if step is not None:
            used = _use_step(session, member_id, step)
        else:
            used = (
                code_hash is not None
                and _use_code(session, key, member_id, code_hash, now, actor) is not None
            )
        ended = session.execute(
            update(MemberSession)
            .where(
                col(MemberSession.token_hash) == pending_hash,
                col(MemberSession.member_id) == member_id,
                col(MemberSession.awaiting_code).is_(True),
                col(MemberSession.revoked_at).is_(None),
            )
            .values(revoked_at=now)
        )
        if not used or ended.rowcount != 1:  # type: ignore[attr-defined]
            session.rollback()
            return False
        session.add(sessions.session_row(token_hash, member_id, now, expires_at))
        return True


def turn_off(
    engine: Engine,
    org_id: str | None,
    member_id: str,
    now: datetime,
    *,
    actor: str,
    reason: str | None = None,
    end_sessions: bool = False,
) -> tuple[Member, int]:
    """The member's second factor off: its secret, a waiting one and the recovery codes gone;
    with ``end_sessions`` every session of the member ends too. ``MEMBER_SECOND_FACTOR_OFF`` (with
    ``reason`` and the sessions ended, when given) when it was on or sessions ended; a waiting
    set-up alone is dropped without one. The member and how many sessions ended."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        member = member_for_change(session, org_id, member_id)
        was_on = member.totp_enabled_at is not None
        member.totp_secret_ciphertext = member.totp_pending_ciphertext = None
        member.totp_enabled_at = member.totp_last_step = None
        session.add(member)
        session.execute(delete(MemberRecoveryCode).where(col(MemberRecoveryCode.member_id) == member_id))
        ended = sessions.end_sessions_in(session, member_id, now) if end_sessions else 0
        if was_on or ended:
            extra = {"reason": reason, "sessionsEnded": ended} if reason is not None else {}
            record_change(session, key, audit.MEMBER_SECOND_FACTOR_OFF, member, actor, **extra)
        return detached(session, member), ended
