"""One-time codes of subjects (CONTRACT 8): the keyed hash of the current code, its expiry, the
wrong tries and the lock. Nothing here sees a code, only ``core.otp.JourneySecrets.code_hash``."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine
from sqlmodel import select

from store import audit
from store.db import read_session, write_session
from store.tables import CredentialRequest, OtpChallenge, Subject

CODE_LIFETIME = timedelta(minutes=10)
MAX_FAILURES = 5

PASSED, WRONG, EXPIRED, LOCKED, LOCKED_NOW, NO_CODE = (
    "passed",
    "wrong",
    "expired",
    "locked",
    "locked_now",
    "no_code",
)


@dataclass(frozen=True)
class CheckOutcome:
    outcome: str  # one of the constants above
    attempts_left: int


def store_code(
    engine: Engine,
    request_id: str,
    subject_id: str,
    send_number: int,
    code_hash: str,
    channel: str,
    now: datetime,
    *,
    resent_by: str | None = None,
    reason: str | None = None,
    secondary_by: str | None = None,
) -> datetime:
    """Keep ``code_hash`` as the subject's current code (the ``send_number``-th sent), clearing wrong
    tries and a lock; its expiry. A retried send of the same number replaces the code it stored.

    A resend (``resent_by``: its actor) is recorded as ``OTP_RESENT`` in the same transaction, once
    per send number (a retried activity finds its number stored and records nothing again), with
    the ``reason`` the actor gave, if any.

    A code for a subject's secondary contact (``secondary_by``: the subject, who opened their link)
    says so: its first send is recorded as ``OTP_SENT``, a resend's ``OTP_RESENT`` names it too,
    each with the channel (email | sms), never the contact or the code (issue 36)."""
    expires_at = now + CODE_LIFETIME
    recorded = resent_by is not None or secondary_by is not None
    key = audit.signer(engine) if recorded else None
    with write_session(engine) as session:
        row = session.get(OtpChallenge, (request_id, subject_id))
        first_time = row is None or row.sends < send_number
        if row is None:
            row = OtpChallenge(
                request_id=request_id,
                subject_id=subject_id,
                code_hash=code_hash,
                channel=channel,
                sends=send_number,
                sent_at=now,
                expires_at=expires_at,
            )
        else:
            row.code_hash, row.channel, row.sends = code_hash, channel, max(row.sends, send_number)
            row.sent_at, row.expires_at = now, expires_at
            row.failures, row.locked_at, row.verified_at, row.delivery_error = 0, None, None, None
        session.add(row)
        actor = resent_by or secondary_by
        if key is not None and actor is not None and first_time:
            request = session.get(CredentialRequest, request_id)
            assert request is not None
            session.flush()
            data = {
                "subject": subject_id,
                "channel": channel,
                "sendNumber": send_number,
                **({"reason": reason} if reason else {}),
                **({"recipient": "secondaryContact"} if secondary_by is not None else {}),
            }
            kind = audit.OTP_RESENT if resent_by is not None else audit.OTP_SENT
            entry = audit.Entry(kind, request.organization_id, request_id=request_id, actor=actor, data=data)
            audit.append(session.connection(), key, entry)
    return expires_at


def record_delivery_error(engine: Engine, request_id: str, subject_id: str, code: str) -> None:
    """The code could not be delivered (``code``: UNDELIVERABLE, INVALID_PHONE_NUMBER): it can
    never be entered, so it is cleared."""
    with write_session(engine) as session:
        row = session.get(OtpChallenge, (request_id, subject_id))
        if row is not None:
            row.delivery_error, row.code_hash = code, ""
            session.add(row)


def check_code(
    engine: Engine, request_id: str, subject_id: str, code_hash: str, now: datetime, actor: str | None = None
) -> CheckOutcome:
    """Compare a submitted code's hash with the current one, in constant time, counting wrong
    tries. The fifth wrong try locks the code and appends the audit record ``OTP_LOCKED`` in the
    same transaction. Entering the accepted code again answers ``passed`` (a page reload)."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        row = session.exec(
            select(OtpChallenge)
            .where(
                OtpChallenge.request_id == request_id,
                OtpChallenge.subject_id == subject_id,
            )
            .with_for_update()
        ).first()
        if row is None or not row.code_hash:
            return CheckOutcome(NO_CODE, 0)
        matches = hmac.compare_digest(row.code_hash.encode(), code_hash.encode())
        if row.verified_at is not None:
            return CheckOutcome(PASSED if matches else WRONG, 0)
        if row.locked_at is not None:
            return CheckOutcome(LOCKED, 0)
        if now >= row.expires_at:
            return CheckOutcome(EXPIRED, MAX_FAILURES - row.failures)
        if matches:
            row.verified_at = now
            session.add(row)
            return CheckOutcome(PASSED, MAX_FAILURES - row.failures)
        row.failures += 1
        if row.failures < MAX_FAILURES:
            session.add(row)
            return CheckOutcome(WRONG, MAX_FAILURES - row.failures)
        row.locked_at = now
        session.add(row)
        req = session.get(CredentialRequest, request_id)
        subject = session.get(Subject, subject_id)
        assert req is not None and subject is not None
        session.flush()
        audit.append(
            session.connection(),
            key,
            audit.Entry(
                audit.OTP_LOCKED,
                req.organization_id,
                request_id=request_id,
                actor=actor or f"subject:{subject_id}",
                data={
                    "subjectId": subject_id,
                    "contact": subject.contact,
                    "channel": row.channel,
                    "failures": row.failures,
                    "sends": row.sends,
                    "lockedAt": now.isoformat(),
                },
            ),
            now,
        )
        return CheckOutcome(LOCKED_NOW, 0)


def get_challenge(engine: Engine, request_id: str, subject_id: str) -> OtpChallenge | None:
    with read_session(engine) as session:
        return session.get(OtpChallenge, (request_id, subject_id))
