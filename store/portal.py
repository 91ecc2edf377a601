"""The subject's portal (issue 32, item 2): codes asked for, sessions, and the mandates of one
contact in every organization that has the portal on. Everything is found by keyed hashes
(``store.tables_portal``); a person's subjects by ``Subject.contact_hash``."""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete
from sqlmodel import Session, col, select

from store import audit
from store.db import read_session, write_session
from store.tables import (
    ActionVersion,
    AuditRecord,
    Credential,
    CredentialRequest,
    Organization,
    PortalChallenge,
    PortalSession,
    RequestSubject,
    Subject,
)

MAX_FAILURES = 5  # CONTRACT 8: the fifth wrong code locks it
MAX_AGE = timedelta(hours=1)  # a session's longest life (``services.portal.MAX_AGE``)
PASSED, WRONG, EXPIRED, LOCKED, LOCKED_NOW, NO_CODE = (
    "passed",
    "wrong",
    "expired",
    "locked",
    "locked_now",
    "no_code",
)


@dataclass(frozen=True)
class Checked:
    outcome: str  # one of the constants above
    attempts_left: int
    challenge: PortalChallenge | None = None


def open_challenge(
    engine: Engine,
    token_hash: str,
    contact_hash: str,
    contact_shown: str,
    now: datetime,
    expires_at: datetime,
) -> None:
    """The browser's code for ``contact_hash`` (replacing any it asked for before), without a code
    yet: ``set_code`` adds it when one is sent."""
    with write_session(engine) as session:
        session.execute(delete(PortalChallenge).where(col(PortalChallenge.token_hash) == token_hash))
        session.add(
            PortalChallenge(
                token_hash=token_hash,
                contact_hash=contact_hash,
                contact_shown=contact_shown,
                created_at=now,
                expires_at=expires_at,
            )
        )


def set_code(engine: Engine, token_hash: str, contact_hash: str, code_hash: str) -> bool:
    """Keep ``code_hash`` as the browser's code, unless the challenge was replaced or locked."""
    with write_session(engine) as session:
        row = session.get(PortalChallenge, token_hash)
        if row is None or row.contact_hash != contact_hash or row.locked_at is not None:
            return False
        row.code_hash = code_hash
        session.add(row)
        return True


def get_challenge(engine: Engine, token_hash: str) -> PortalChallenge | None:
    with read_session(engine) as session:
        return session.get(PortalChallenge, token_hash)


def check_code(engine: Engine, token_hash: str, code_hash: str, now: datetime) -> Checked:
    """Compare a code's hash with the browser's, in constant time, counting wrong tries; the fifth
    locks it. A challenge without a code (no code sent, or an unknown contact) takes every code as
    wrong, so both read the same."""
    with write_session(engine) as session:
        row = session.exec(
            select(PortalChallenge).where(PortalChallenge.token_hash == token_hash).with_for_update()
        ).first()
        if row is None:
            return Checked(NO_CODE, 0)
        if row.locked_at is not None:
            return Checked(LOCKED, 0, row)
        if now >= row.expires_at:
            return Checked(EXPIRED, MAX_FAILURES - row.failures, row)
        expected = row.code_hash or "-" * len(code_hash)
        if hmac.compare_digest(expected.encode(), code_hash.encode()) and row.code_hash:
            return Checked(PASSED, MAX_FAILURES - row.failures, row)
        row.failures += 1
        if row.failures >= MAX_FAILURES:
            row.locked_at = now
        session.add(row)
        left = MAX_FAILURES - row.failures
        return Checked(LOCKED_NOW if left <= 0 else WRONG, max(left, 0), row)


def open_session(
    engine: Engine, challenge_hash: str, token_hash: str, contact_hash: str, contact_shown: str, now: datetime
) -> None:
    """A session for the contact whose code the browser entered: the challenge is spent."""
    with write_session(engine) as session:
        session.execute(delete(PortalChallenge).where(col(PortalChallenge.token_hash) == challenge_hash))
        session.add(
            PortalSession(
                token_hash=token_hash,
                contact_hash=contact_hash,
                contact_shown=contact_shown,
                created_at=now,
                last_seen_at=now,
            )
        )


def live_session(
    engine: Engine, token_hash: str, now: datetime, idle_since: datetime, born_since: datetime
) -> PortalSession | None:
    """The session of the token when it is live (its last use becomes now), else None."""
    with write_session(engine) as session:
        row = session.get(PortalSession, token_hash)
        if row is None or row.ended_at is not None:
            return None
        if row.last_seen_at < idle_since or row.created_at < born_since:
            return None
        row.last_seen_at = now
        session.add(row)
        return row


def end_session(engine: Engine, token_hash: str, now: datetime) -> None:
    with write_session(engine) as session:
        row = session.get(PortalSession, token_hash)
        if row is not None and row.ended_at is None:
            row.ended_at = now
            session.add(row)


# --- the contact's subjects and mandates --------------------------------------------------------


def known_in_portal(engine: Engine, contact_hash: str) -> Subject | None:
    """A subject of the contact in an organization with the portal on (the newest), or None."""
    with read_session(engine) as session:
        return session.exec(
            select(Subject)
            .join(Organization, col(Organization.id) == Subject.organization_id)
            .where(Subject.contact_hash == contact_hash, col(Organization.portal_enabled).is_(True))
            .order_by(col(Subject.created_at).desc())
        ).first()


@dataclass(frozen=True)
class PortalMandate:
    """An issued credential of a request the contact was a subject of."""

    credential: Credential
    request: CredentialRequest
    organization: Organization
    subject: Subject  # the contact's subject in that organization
    action_name: str | None
    action_version: int | None  # the version's number (1, 2, ...)


def _mandates(contact_hash: str, credential_id: str | None = None) -> Any:
    query = (
        select(Credential, CredentialRequest, Organization, Subject)
        .join(CredentialRequest, col(CredentialRequest.id) == Credential.request_id)
        .join(Organization, col(Organization.id) == CredentialRequest.organization_id)
        .join(RequestSubject, col(RequestSubject.request_id) == CredentialRequest.id)
        .join(Subject, col(Subject.id) == RequestSubject.subject_id)
        .where(
            Subject.contact_hash == contact_hash,
            col(Organization.portal_enabled).is_(True),
            col(Credential.mandate_id).is_not(None),
        )
        .order_by(col(Credential.issued_at).desc(), col(Credential.id))
    )
    return query.where(Credential.id == credential_id) if credential_id is not None else query


def _found(session: Session, rows: Sequence[Any]) -> list[PortalMandate]:
    """The rows with the names of their actions' versions (one query for all)."""
    versions = {str((row[0].action or {}).get("version") or "") for row in rows} - {""}
    found: dict[str, tuple[str | None, int]] = {}
    if versions:
        for version in session.exec(select(ActionVersion).where(col(ActionVersion.id).in_(versions))):
            name = (version.content or {}).get("name")
            found[version.id] = (str(name) if name else None, version.number)
    out = []
    for cred, request, org, subject in rows:
        name, number = found.get(str((cred.action or {}).get("version") or ""), (None, None))
        out.append(PortalMandate(cred, request, org, subject, name, number))
    return out


def mandates_of(engine: Engine, contact_hash: str, limit: int = 200) -> list[PortalMandate]:
    """The contact's issued credentials, newest first, in organizations with the portal on."""
    with read_session(engine) as session:
        rows = session.exec(_mandates(contact_hash).limit(limit)).all()
        return _found(session, rows)


def mandate_of(engine: Engine, contact_hash: str, credential_id: str) -> PortalMandate | None:
    """One of ``mandates_of`` by its credential id, or None (another person's, an organization with
    the portal off, no such credential)."""
    with read_session(engine) as session:
        rows = session.exec(_mandates(contact_hash, credential_id)).all()
        found = _found(session, rows[:1])
        return found[0] if found else None


def purge(engine: Engine, now: datetime, grace: timedelta = timedelta(hours=1)) -> int:
    """Drop the challenges expired more than ``grace`` ago and the sessions that ended or are past
    their maximum age (``max_age``) by as much; how many (the worker's purge pass)."""
    with write_session(engine) as session:
        gone = session.execute(delete(PortalChallenge).where(col(PortalChallenge.expires_at) < now - grace))
        n = int(gone.rowcount)  # type: ignore[attr-defined]
        done = (col(PortalSession.ended_at) < now - grace) | (
            col(PortalSession.created_at) < now - MAX_AGE - grace
        )
        n += int(session.execute(delete(PortalSession).where(done)).rowcount)  # type: ignore[attr-defined]
    return n


def revoking_subject(engine: Engine, org_id: str, mandate_id: str) -> str | None:
    """The subject whose ``MANDATE_REVOKED`` record names them as its actor (``subject:<id>``):
    who revoked the mandate in the portal; None when a subject did not."""
    with read_session(engine) as session:
        actor = session.exec(
            select(AuditRecord.actor).where(
                AuditRecord.organization_id == org_id,
                AuditRecord.credential_id == mandate_id,
                AuditRecord.type == audit.MANDATE_REVOKED,
            )
        ).first()
    kind, _, subject_id = (actor or "").partition(":")
    return subject_id if kind == "subject" and subject_id else None
