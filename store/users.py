"""Users (``POST /user``, ``GET /user``; issue 36): an organization's subjects with what it imported
about them, and the identity a check is matched against.

An import is one transaction, like a request's creation (``store.requests``): the organization
serialized, the ``Idempotency-Key`` looked up, the rate counted (imports of the last minute, from
the audit trail), then each item: its subject found or created (by organization and contact, so a
subject first named by a request is the same user), its ``internalId`` set, its identity and extra
contacts encrypted (``core.secretbox.SecretCipher``) into ``subject_profile``; one ``USERS_IMPORTED``
record naming the subjects, never what was imported about them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from core.secretbox import SecretCipher
from store import audit
from store.db import read_session, utcnow, write_session
from store.guards import find_idempotent, save_idempotent
from store.requests import (
    Idempotency,
    NewContact,
    RateLimited,
    Replayed,
    _ensure_subjects,
    _lock_organization,
    _replay,
)
from store.tables import AuditRecord, RequestSubject, Subject, SubjectProfile

CREATED, UPDATED, UNCHANGED, ELSEWHERE = "created", "updated", "unchanged", "elsewhere"
_ABSENT: Any = object()


@dataclass(frozen=True)
class NewUser:
    """One valid item of an import. ``internal_id``, ``extra_contacts`` and ``identity`` None: left
    as stored."""

    contact: str
    kind: str
    contact_hash: str
    internal_id: str | None = None
    extra_contacts: list[str] | None = None
    identity: dict[str, Any] | None = None


@dataclass
class Outcome:
    """What became of one item: CREATED, UPDATED, UNCHANGED, or ELSEWHERE (its internalId names
    another subject: nothing written)."""

    result: str
    subject: Subject | None


@dataclass
class User:
    """A subject with what its organization imported (decrypted; the identity only as held or not)."""

    subject: Subject
    extra_contacts: list[str] = field(default_factory=list)
    has_identity: bool = False


def import_users(
    engine: Engine,
    cipher: SecretCipher,
    org_id: str,
    users: list[NewUser],
    rate_per_minute: int,
    idempotency: Idempotency | None,
    render: Any,
    actor: str,
) -> list[Outcome] | Replayed:
    """Store the users (see the module); ``render(outcomes)`` is the stored idempotent response."""
    try:
        return _import(engine, cipher, org_id, users, rate_per_minute, idempotency, render, actor)
    except IntegrityError:
        if idempotency is None:
            raise
        with read_session(engine) as session:  # a twin committed the same key first
            earlier = find_idempotent(session, org_id, idempotency.key, idempotency.window)
        if earlier is None:
            raise
        return _replay(earlier, idempotency)


def imports_since(session: Session, org_id: str, since: datetime) -> int:
    return int(
        session.exec(
            select(func.count())
            .select_from(AuditRecord)
            .where(
                AuditRecord.organization_id == org_id,
                AuditRecord.created_at >= since,
                AuditRecord.type == audit.USERS_IMPORTED,
            )
        ).one()
    )


def _retry_after(session: Session, org_id: str, now: datetime) -> int:
    """Seconds until the oldest import of the last minute leaves the window."""
    oldest = session.exec(
        select(func.min(AuditRecord.created_at)).where(
            AuditRecord.organization_id == org_id,
            AuditRecord.created_at >= now - timedelta(minutes=1),
            AuditRecord.type == audit.USERS_IMPORTED,
        )
    ).one()
    if oldest is None:
        return 1
    return max(1, int((oldest + timedelta(minutes=1) - now).total_seconds()) + 1)


def _import(
    engine: Engine,
    cipher: SecretCipher,
    org_id: str,
    users: list[NewUser],
    rate_per_minute: int,
    idempotency: Idempotency | None,
    render: Any,
    actor: str,
) -> list[Outcome] | Replayed:
    key = audit.signer(engine)
    with write_session(engine) as session:
        _lock_organization(session, org_id)
        now = utcnow()
        if idempotency is not None:
            earlier = find_idempotent(session, org_id, idempotency.key, idempotency.window)
            if earlier is not None:
                return _replay(earlier, idempotency)
        if imports_since(session, org_id, now - timedelta(minutes=1)) >= rate_per_minute:
            raise RateLimited(retry_after=_retry_after(session, org_id, now))
        outcomes = _write_users(session, cipher, org_id, users, now)
        audit.append(
            session.connection(),
            key,
            audit.Entry(
                audit.USERS_IMPORTED,
                org_id,
                actor=actor,
                data={
                    kind: [o.subject.id for o in outcomes if o.subject is not None and o.result == kind]
                    for kind in (CREATED, UPDATED, UNCHANGED)
                }
                | {
                    "withIdentity": [
                        o.subject.id
                        for o, u in zip(outcomes, users, strict=True)
                        if o.subject is not None and o.result != ELSEWHERE and u.identity is not None
                    ],
                    "refused": sum(1 for o in outcomes if o.result == ELSEWHERE),
                },
            ),
            now,
        )
        if idempotency is not None:
            save_idempotent(
                session,
                org_id,
                idempotency.key,
                idempotency.body_hash,
                201,
                render(outcomes),
                idempotency.window,
            )
    return outcomes


def _write_users(
    session: Session, cipher: SecretCipher, org_id: str, users: list[NewUser], now: datetime
) -> list[Outcome]:
    if not users:
        return []
    existing = {
        s.contact: s
        for s in session.exec(
            select(Subject).where(
                Subject.organization_id == org_id, col(Subject.contact).in_([u.contact for u in users])
            )
        )
    }
    wanted = [u.internal_id for u in users if u.internal_id is not None]
    holders = (
        {
            s.internal_id: s.contact
            for s in session.exec(
                select(Subject).where(Subject.organization_id == org_id, col(Subject.internal_id).in_(wanted))
            )
        }
        if wanted
        else {}
    )
    outcomes: list[Outcome] = []
    ok: list[NewUser] = []
    for u in users:
        holder = holders.get(u.internal_id) if u.internal_id is not None else None
        if holder is not None and holder != u.contact:
            outcomes.append(Outcome(ELSEWHERE, None))
        else:
            outcomes.append(Outcome(UPDATED if u.contact in existing else CREATED, None))
            ok.append(u)
    subjects = (
        _ensure_subjects(session, org_id, [NewContact(u.contact, u.kind, None, u.contact_hash) for u in ok])
        if ok
        else []
    )
    by_contact = dict(zip([u.contact for u in ok], subjects, strict=True))
    profiles = {
        p.subject_id: p
        for p in session.exec(
            select(SubjectProfile).where(col(SubjectProfile.subject_id).in_([s.id for s in subjects]))
        )
    }
    for u, outcome in zip(users, outcomes, strict=True):
        if outcome.result == ELSEWHERE:
            continue
        subject = by_contact[u.contact]
        outcome.subject = subject
        changed = _apply(session, cipher, subject, profiles.get(subject.id), u, now)
        if outcome.result == UPDATED and not changed:
            outcome.result = UNCHANGED
    return outcomes


def _apply(
    session: Session,
    cipher: SecretCipher,
    subject: Subject,
    profile: SubjectProfile | None,
    u: NewUser,
    now: datetime,
) -> bool:
    """Write what the item changes; whether it changed anything."""
    changed = False
    if u.internal_id is not None and subject.internal_id != u.internal_id:
        # the subject was read as a plain row (``_ensure_subjects``): updated by its id
        session.execute(
            update(Subject).where(col(Subject.id) == subject.id).values(internal_id=u.internal_id)
        )
        subject.internal_id = u.internal_id
        changed = True
    if u.extra_contacts is None and u.identity is None:
        session.flush()
        return changed
    if profile is None:
        profile = SubjectProfile(
            subject_id=subject.id, organization_id=subject.organization_id, created_at=now, updated_at=now
        )
    if u.extra_contacts is not None:
        old = (
            json.loads(cipher.decrypt(profile.extra_contacts_ciphertext))
            if profile.extra_contacts_ciphertext
            else []
        )
        if old != u.extra_contacts:
            profile.extra_contacts_ciphertext = cipher.encrypt(json.dumps(u.extra_contacts))
            changed = True
    if u.identity is not None:
        old_identity = (
            json.loads(cipher.decrypt(profile.identity_ciphertext)) if profile.identity_ciphertext else None
        )
        if old_identity != u.identity:
            profile.identity_ciphertext = cipher.encrypt(json.dumps(u.identity, sort_keys=True))
            changed = True
    if changed:
        profile.updated_at = now
        session.add(profile)
    session.flush()
    return changed


# --- reading ------------------------------------------------------------------------------------


def find_user(
    engine: Engine,
    cipher: SecretCipher,
    org_id: str,
    *,
    contact: str | None = None,
    subject_id: str | None = None,
    internal_id: str | None = None,
) -> User | None:
    """The organization's subject with that normalized contact, id or internalId; None for none
    (another organization's subject is none)."""
    with read_session(engine) as session:
        query = select(Subject).where(Subject.organization_id == org_id)
        if contact is not None:
            query = query.where(Subject.contact == contact)
        elif subject_id is not None:
            query = query.where(Subject.id == subject_id)
        else:
            query = query.where(Subject.internal_id == internal_id)
        subject = session.exec(query).first()
        if subject is None:
            return None
        profile = session.get(SubjectProfile, subject.id)
    user = User(subject)
    if profile is not None:
        if profile.extra_contacts_ciphertext:
            user.extra_contacts = list(json.loads(cipher.decrypt(profile.extra_contacts_ciphertext)))
        user.has_identity = profile.identity_ciphertext is not None
    return user


@dataclass(frozen=True)
class Expected:
    """What an identity check of a subject in a request must return: the request's ``docId`` (its
    keyed hash) and the organization's imported identity (decrypted), each when given."""

    doc_id_hash: str | None
    identity: dict[str, Any] | None


def expected_identity(engine: Engine, cipher: SecretCipher, request_id: str, subject_id: str) -> Expected:
    with read_session(engine) as session:
        link = session.exec(
            select(RequestSubject).where(
                RequestSubject.request_id == request_id, RequestSubject.subject_id == subject_id
            )
        ).first()
        profile = session.get(SubjectProfile, subject_id)
    identity = (
        json.loads(cipher.decrypt(profile.identity_ciphertext))
        if profile is not None and profile.identity_ciphertext
        else None
    )
    return Expected(link.doc_id_hash if link is not None else None, identity)


def expects_document(engine: Engine, request_id: str, subject_id: str) -> bool:
    """Whether the request names the document the subject's identity check must return (docId)."""
    with read_session(engine) as session:
        found = session.exec(
            select(RequestSubject.doc_id_hash).where(
                RequestSubject.request_id == request_id, RequestSubject.subject_id == subject_id
            )
        ).first()
    return found is not None


def subjects_by_id(engine: Engine, org_id: str, subject_ids: set[str], limit: int = 500) -> list[Subject]:
    """The organization's subjects among ``subject_ids`` (at most ``limit``: a page's worth)."""
    if not subject_ids:
        return []
    wanted = sorted(subject_ids)[:limit]
    with read_session(engine) as session:
        return list(
            session.exec(
                select(Subject).where(Subject.organization_id == org_id, col(Subject.id).in_(wanted))
            )
        )
