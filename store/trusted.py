"""Trusted browser sessions (issue 36, ``iframe.cookie``; docs/adr/0019-trusted-browser-session.md).

A subject who confirmed their code on a request that allows a session gets one: a row holding the
keyed hash of a fresh browser token (``core.otp.JourneySecrets.trusted_session_hash``), for that
subject of that organization, until ``expires_at``. A later request of the same organization to
the same subject that allows sessions too lets the browser holding the token skip the code
(``check``); nothing else does: another subject, another organization, a request without the
option, an expired or a revoked session. Opening and revoking are audit records
(``TRUSTED_SESSION_OPENED``, ``TRUSTED_SESSION_REVOKED``) in the transaction that makes them.
"""

from __future__ import annotations

import hmac
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from store import audit
from store.db import read_session, write_session
from store.tables import CredentialRequest, RequestSubject, Subject, TrustedSession
from trust.keys import Ed25519KeyPair

REPLACED = "replaced"  # the reason of a session revoked by a newer one in the same browser


@dataclass(frozen=True)
class Opened:
    session_id: str
    expires_at: datetime
    seconds: int


def _request_allows(session: Session, request_id: str, subject_id: str) -> CredentialRequest | None:
    """The request, when it allows a trusted session and ``subject_id`` is one of its subjects."""
    req = session.get(CredentialRequest, request_id)
    if req is None or req.trusted_session_seconds is None:
        return None
    if session.get(RequestSubject, (request_id, subject_id)) is None:
        return None
    return req


def open_session(
    engine: Engine,
    request_id: str,
    subject_id: str,
    token_hash: str,
    surface: str,
    now: datetime,
    replaced_hash: str | None = None,
) -> Opened | None:
    """A new session for the subject of the request in the browser whose token hashes to
    ``token_hash``, for the request's allowed lifetime; None when the request allows none. The
    session the same browser held before (``replaced_hash``) ends with it: a browser holds one."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        req = _request_allows(session, request_id, subject_id)
        if req is None or req.trusted_session_seconds is None:
            return None
        seconds = req.trusted_session_seconds
        if replaced_hash is not None:
            _revoke(session, key, _by_hash(session, replaced_hash), f"subject:{subject_id}", now, REPLACED)
        row = TrustedSession(
            id=str(uuid.uuid4()),
            token_hash=token_hash,
            organization_id=req.organization_id,
            subject_id=subject_id,
            request_id=request_id,
            surface=surface,
            created_at=now,
            expires_at=now + timedelta(seconds=seconds),
        )
        session.add(row)
        session.flush()
        audit.append(
            session.connection(),
            key,
            audit.Entry(
                audit.TRUSTED_SESSION_OPENED,
                req.organization_id,
                request_id=request_id,
                actor=f"subject:{subject_id}",
                data={
                    "sessionId": row.id,
                    "subjectId": subject_id,
                    "surface": surface,
                    "seconds": seconds,
                    "expiresAt": row.expires_at.isoformat(),
                },
            ),
            now,
        )
        return Opened(row.id, row.expires_at, seconds)


def _by_hash(session: Session, token_hash: str) -> list[TrustedSession]:
    return list(
        session.exec(select(TrustedSession).where(TrustedSession.token_hash == token_hash).with_for_update())
    )


def _valid(
    row: TrustedSession, req: CredentialRequest, subject_id: str, token_hash: str, now: datetime
) -> bool:
    return (
        hmac.compare_digest(row.token_hash, token_hash)
        and row.subject_id == subject_id
        and row.organization_id == req.organization_id
        and row.revoked_at is None
        and row.expires_at > now
    )


def may_stand_in(engine: Engine, request_id: str, subject_id: str, token_hash: str, now: datetime) -> bool:
    """``check`` without noting the use: read by the page before it asks the workflow, so a cookie
    that opens nothing never reaches the request's history."""
    with read_session(engine) as session:
        req = _request_allows(session, request_id, subject_id)
        if req is None:
            return False
        rows = session.exec(select(TrustedSession).where(TrustedSession.token_hash == token_hash))
        return any(_valid(row, req, subject_id, token_hash, now) for row in rows)


def check(engine: Engine, request_id: str, subject_id: str, token_hash: str, now: datetime) -> str | None:
    """The id of the session that lets this browser skip the code for the subject of the request,
    or None: the request must allow sessions, and the session be this subject's (so this
    organization's and this contact's), not expired and not revoked. Its use is noted."""
    with write_session(engine) as session:
        req = _request_allows(session, request_id, subject_id)
        if req is None:
            return None
        for row in _by_hash(session, token_hash):
            if _valid(row, req, subject_id, token_hash, now):
                row.last_used_at = now
                session.add(row)
                return row.id
        return None


def _revoke(
    session: Session,
    key: Ed25519KeyPair,
    rows: list[TrustedSession],
    actor: str,
    now: datetime,
    reason: str,
) -> list[str]:
    """Revoke the sessions among ``rows`` still open, each with its record; their ids."""
    done: list[str] = []
    for row in rows:
        if row.revoked_at is not None:
            continue
        row.revoked_at, row.revoked_by = now, actor
        session.add(row)
        session.flush()
        audit.append(
            session.connection(),
            key,
            audit.Entry(
                audit.TRUSTED_SESSION_REVOKED,
                row.organization_id,
                actor=actor,
                data={
                    "sessionId": row.id,
                    "subjectId": row.subject_id,
                    "reason": reason,
                    "expiresAt": row.expires_at.isoformat(),
                },
            ),
            now,
        )
        done.append(row.id)
    return done


def revoke_browser(engine: Engine, token_hash: str, subject_id: str, now: datetime) -> bool:
    """The subject's "forget this browser": the session of this browser ends, when it is theirs."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        rows = [r for r in _by_hash(session, token_hash) if r.subject_id == subject_id]
        return bool(_revoke(session, key, rows, f"subject:{subject_id}", now, "forgotten by the subject"))


def revoke_subject(engine: Engine, org_id: str, subject_id: str, actor: str, now: datetime) -> list[str]:
    """Every open session of the organization's subject ends (the integrator's revocation): their
    ids. Sessions already expired are left as they are (they open nothing)."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        subject = session.get(Subject, subject_id)
        if subject is None or subject.organization_id != org_id:
            return []
        rows = list(
            session.exec(
                select(TrustedSession)
                .where(
                    TrustedSession.organization_id == org_id,
                    TrustedSession.subject_id == subject_id,
                    col(TrustedSession.revoked_at).is_(None),
                    col(TrustedSession.expires_at) > now,
                )
                .order_by(col(TrustedSession.created_at))
                .with_for_update()
            )
        )
        return _revoke(session, key, rows, actor, now, "revoked by the organization")


def sessions_of(engine: Engine, org_id: str, subject_id: str) -> list[TrustedSession]:
    """The organization's subject's sessions, newest first (for tests and operators)."""
    with read_session(engine) as session:
        return list(
            session.exec(
                select(TrustedSession)
                .where(TrustedSession.organization_id == org_id, TrustedSession.subject_id == subject_id)
                .order_by(col(TrustedSession.created_at).desc())
            )
        )
