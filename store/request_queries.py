"""Reading credential requests: one request, a filtered page, and rows the reconciler must start.

Every query returns ``RequestBundle``s, loaded with batched statements per page whatever its size:
the requests, then their subjects, credentials and decisions, and the requests sent again as others.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, and_, bindparam, exists, or_
from sqlmodel import Session, col, func, select

from store.db import SQLITE_UNICODE_LOWER, read_session
from store.requests import RequestBundle
from store.tables import (
    Credential,
    CredentialRequest,
    Decision,
    KycCheck,
    OtpChallenge,
    RequestSubject,
    Subject,
)

# _load_bundles' statements, built once (building one costs SQLAlchemy more than SQLite's answer to
# it): the requests' subjects, credentials, decisions and the requests sent again as others
_SUBJECTS = (
    select(RequestSubject, Subject)
    .join(Subject, col(Subject.id) == RequestSubject.subject_id)
    .where(col(RequestSubject.request_id).in_(bindparam("ids", expanding=True)))
    .order_by(col(RequestSubject.position))
)
_CREDENTIALS = (
    select(Credential)
    .where(col(Credential.request_id).in_(bindparam("ids", expanding=True)))
    .order_by(col(Credential.position))
)
_DECISIONS = (
    select(Decision, Subject)
    .join(Subject, col(Subject.id) == Decision.subject_id)
    .where(col(Decision.credential_id).in_(bindparam("ids", expanding=True)))
    .order_by(col(Decision.decided_at))
)
_RESENT = select(CredentialRequest.id, CredentialRequest.resent_from).where(
    col(CredentialRequest.resent_from).in_(bindparam("ids", expanding=True))
)


def _load_bundles(session: Session, reqs: list[CredentialRequest]) -> list[RequestBundle]:
    if not reqs:
        return []
    ids = {"ids": [r.id for r in reqs]}
    subjects: dict[str, list[tuple[RequestSubject, Subject]]] = defaultdict(list)
    for link, subject in session.exec(_SUBJECTS, params=ids):
        subjects[link.request_id].append((link, subject))
    creds: dict[str, list[Credential]] = defaultdict(list)
    for cred in session.exec(_CREDENTIALS, params=ids):
        creds[cred.request_id].append(cred)
    cred_ids = [c.id for cs in creds.values() for c in cs]
    decisions: dict[str, list[tuple[Decision, Subject]]] = defaultdict(list)
    if cred_ids:
        for d, s in session.exec(_DECISIONS, params={"ids": cred_ids}):
            decisions[d.credential_id].append((d, s))
    resent_as = {old: new for new, old in session.exec(_RESENT, params=ids)}
    return [RequestBundle(r, subjects[r.id], creds[r.id], decisions, resent_as.get(r.id)) for r in reqs]


def get_request(engine: Engine, org_id: str, request_id: str) -> RequestBundle | None:
    """The request if it belongs to the organization (None otherwise: never reveal others')."""
    with read_session(engine) as session:
        req = session.get(CredentialRequest, request_id)
        if req is None or req.organization_id != org_id:
            return None
        return _load_bundles(session, [req])[0]


@dataclass(frozen=True)
class SubjectProgress:
    """Where a subject of a request stands: the code sent to them (sends, wrong tries, lock, a
    delivery failure; never the code) and their identity checks, oldest first."""

    code: OtpChallenge | None
    checks: list[KycCheck]


def progress_of(engine: Engine, request_id: str) -> dict[str, SubjectProgress]:
    """Each subject's progress on the request, by subject id (subjects not reached yet are absent).
    The caller has checked the request is the organization's."""
    with read_session(engine) as session:
        codes = {
            c.subject_id: c
            for c in session.exec(select(OtpChallenge).where(OtpChallenge.request_id == request_id))
        }
        checks: dict[str, list[KycCheck]] = defaultdict(list)
        for check in session.exec(
            select(KycCheck).where(KycCheck.request_id == request_id).order_by(col(KycCheck.created_at))
        ):
            checks[check.subject_id].append(check)
    return {
        subject_id: SubjectProgress(codes.get(subject_id), checks.get(subject_id, []))
        for subject_id in {*codes, *checks}
    }


def organization_of(engine: Engine, request_id: str) -> str | None:
    with read_session(engine) as session:
        req = session.get(CredentialRequest, request_id)
        return req.organization_id if req else None


@dataclass(frozen=True)
class RequestFilter:
    page_index: int = 0
    page_size: int = 10
    search: str | None = None
    contact: str | None = None
    did_subject_id: str | None = None
    subject_internal_id: str | None = None
    internal_id: str | None = None
    credential_internal_id: str | None = None
    security_levels: tuple[str, ...] = ()
    date_from: datetime | None = None
    date_to: datetime | None = None
    statuses: tuple[str, ...] = ()


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _contains_ignoring_case(engine: Engine, column: Any, term: str) -> Any:
    """``column`` contains ``term`` literally, ignoring case in every script (Água = ÁGUA).

    SQLite's LIKE and lower() fold ASCII only, so there both sides go through Python's lower()
    (registered on every connection by store.db); PostgreSQL's ILIKE folds Unicode.
    """
    if engine.dialect.name == "sqlite":
        return getattr(func, SQLITE_UNICODE_LOWER)(column).like(_like(term.lower()), escape="\\")
    return col(column).ilike(_like(term), escape="\\")


def _request_columns(f: RequestFilter) -> list[Any]:
    """The filter's conditions on the request's own columns."""
    conds: list[Any] = []
    if f.security_levels:
        conds.append(col(CredentialRequest.security_level).in_(f.security_levels))
    if f.statuses:
        conds.append(col(CredentialRequest.status).in_(f.statuses))
    if f.date_from is not None:
        conds.append(CredentialRequest.created_at >= f.date_from)
    if f.date_to is not None:
        conds.append(CredentialRequest.created_at <= f.date_to)
    return conds


def list_requests(engine: Engine, org_id: str, f: RequestFilter) -> tuple[list[RequestBundle], int]:
    """A page of the organization's requests, newest first, and the total count."""
    conds: list[Any] = [CredentialRequest.organization_id == org_id]
    by_subject = select(RequestSubject.request_id).join(Subject, col(Subject.id) == RequestSubject.subject_id)
    if f.contact is not None:
        conds.append(col(CredentialRequest.id).in_(by_subject.where(Subject.contact == f.contact)))
    if f.did_subject_id is not None:
        conds.append(col(CredentialRequest.id).in_(by_subject.where(Subject.id == f.did_subject_id)))
    if f.subject_internal_id is not None:
        # the request's own internalId for the subject, else its user's (POST /user)
        conds.append(
            col(CredentialRequest.id).in_(
                by_subject.where(
                    or_(
                        col(RequestSubject.internal_id) == f.subject_internal_id,
                        and_(
                            col(RequestSubject.internal_id).is_(None),
                            col(Subject.internal_id) == f.subject_internal_id,
                        ),
                    )
                )
            )
        )
    if f.internal_id is not None:
        conds.append(CredentialRequest.internal_id == f.internal_id)
    if f.credential_internal_id is not None:
        conds.append(
            exists().where(
                col(Credential.request_id) == CredentialRequest.id,
                col(Credential.internal_id) == f.credential_internal_id,
            )
        )
    conds += _request_columns(f)
    if f.search:
        conds.append(
            or_(
                _contains_ignoring_case(engine, CredentialRequest.name, f.search),
                exists().where(
                    col(Credential.request_id) == CredentialRequest.id,
                    _contains_ignoring_case(engine, Credential.name, f.search),
                ),
            )
        )
    with read_session(engine) as session:
        total = session.exec(select(func.count()).select_from(CredentialRequest).where(*conds)).one()
        page = list(
            session.exec(
                select(CredentialRequest)
                .where(*conds)
                .order_by(col(CredentialRequest.created_at).desc(), col(CredentialRequest.id).desc())
                .offset(f.page_index * f.page_size)
                .limit(f.page_size)
            )
        )
        return _load_bundles(session, page), int(total)


def unstarted_requests(engine: Engine, created_before: datetime, limit: int = 100) -> list[RequestBundle]:
    with read_session(engine) as session:
        reqs = list(
            session.exec(
                select(CredentialRequest)
                .where(
                    col(CredentialRequest.workflow_started_at).is_(None),
                    CredentialRequest.created_at < created_before,
                )
                .order_by(col(CredentialRequest.created_at))
                .limit(limit)
            )
        )
        return _load_bundles(session, reqs)


SUBJECT_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def subject_id_from_did(did: str) -> str | None:
    """The subject uuid of ``did:web:<host>:subjects:<uuid>``, whatever the host."""
    prefix, sep, rest = did.rpartition(":subjects:")
    ok = sep and prefix.startswith("did:web:") and SUBJECT_UUID_RE.match(rest)
    return rest if ok else None
