"""What the subject's pages and messages show: one subject of one request, with its organization,
the credentials in human terms and the subject's own decisions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, and_, bindparam, update
from sqlalchemy import select as sa_select
from sqlmodel import col, select

from core.kinds import CredentialStatus
from policy.params import Param, parse_params
from store import limit_usage
from store.db import aware_utc, read_session, write_connection
from store.request_records import decision_of
from store.tables import (
    Action,
    ActionVersion,
    Credential,
    CredentialRequest,
    Decision,
    Organization,
    OtpChallenge,
    RequestSubject,
    Subject,
)


@dataclass(frozen=True)
class CredentialShown:
    """A credential as the subject reads it: for a mandate the action, the userParams being
    approved and its use limits (``store.limit_usage.bounds``: each with its max for this request
    and its description, then the request's maxExecutions), for a document its visible fields and
    where this subject's marks go on its PDF (``marks``: each placement's type and page, from 1)."""

    id: str
    name: str
    description: str | None
    resource_type: str
    action_name: str | None = None
    action_description: str | None = None
    params: list[ParamShown] = field(default_factory=list)
    fields: list[tuple[str, str]] = field(default_factory=list)
    limits: list[dict[str, Any]] = field(default_factory=list)
    marks: list[tuple[str, int]] = field(default_factory=list)
    form: list[dict[str, Any]] = field(default_factory=list)  # a FORM's fields the subject fills in
    pdf: bool = False  # made of a DOCUMENT approval: its PDF is on the page (/r/<token>/document/<id>)


@dataclass(frozen=True)
class ParamShown:
    """A userParam the subject approves: its value as read, and the declared param that says how
    to name it (its label in the page's language, never its raw name), its unit and description."""

    value: str
    param: Param

    def label(self, language: str) -> str:
        return self.param.label_in(language)

    def description(self, language: str) -> str | None:
        return self.param.description_in(language)

    @property
    def unit(self) -> str | None:
        return self.param.unit


@dataclass(frozen=True)
class Journey:
    request: CredentialRequest
    organization: Organization
    subject: Subject
    link: RequestSubject
    credentials: list[CredentialShown]
    decided: dict[str, bool]  # credential id -> accepted, this subject's decisions
    challenge: OtpChallenge | None
    # the secondary contact that receives the subject's code (issue 36), opened by the service
    # that shows it (``services.journey.load``); kept encrypted on ``link``
    secondary_contact: str | None = None

    @property
    def channel(self) -> str:
        return "email" if self.subject.contact_kind == "email" else "sms"

    @property
    def code_channel(self) -> str:
        """Where the subject's codes go, the channel their decision is recorded with: their
        secondary contact's when they have one (issue 36), else their contact's."""
        kind = self.link.secondary_contact_kind or self.subject.contact_kind
        return "email" if kind == "email" else "sms"

    @property
    def open_credentials(self) -> list[CredentialShown]:
        return [c for c in self.credentials if c.id not in self.decided]


def shown_value(value: Any) -> str:
    """A param value as a person reads it."""
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, list):
        return ", ".join(shown_value(v) for v in value) or "—"  # an em dash for "none"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value) if value not in (None, "") else "—"


def _shown(
    cred: Credential,
    actions: dict[str, Action],
    described: dict[str, dict[str, str]],
    contact: str,
    declared: dict[str, dict[str, Param]] | None = None,
) -> CredentialShown:
    if cred.resource_type == "DOCUMENT":
        items = cred.data or []
        form = [
            i["fields"][0] for i in items if str(i.get("type", "")).startswith("FORM:") and i.get("fields")
        ]
        fields = [
            (str(item.get("label", "")), shown_value(item.get("value", "")))
            for item in items
            if not item.get("hidden") and not (form and str(item.get("type", "")).startswith("FORM:"))
        ]
        marks = [
            (str(p["type"]), int(p["pageIndex"]) + 1)
            for p in cred.placements or []
            if p.get("contact") == contact
        ]
        # a PDF of its own (inline) or of a DOCUMENT approval: services.approvals.pdf_item
        pdf = any(i.get("type") == "PDF" and "digestSRI" in (i.get("fields") or [{}])[0] for i in items)
        return CredentialShown(
            cred.id,
            cred.name,
            cred.description,
            cred.resource_type,
            fields=fields,
            marks=marks,
            form=form,
            pdf=pdf,
        )
    action = cred.action or {}
    found = actions.get(str(action.get("id")))
    params_of = (declared or {}).get(str(action.get("version")), {})
    params = [
        ParamShown(shown_value(value), params_of.get(name) or Param(name, "string"))
        for name, value in (action.get("userParams") or {}).items()
    ]
    return CredentialShown(
        cred.id,
        cred.name,
        cred.description,
        cred.resource_type,
        action_name=found.name if found else None,
        action_description=found.description if found else None,
        params=params,
        limits=limit_usage.bounds(cred, described.get(str(action.get("version")))),
    )


# load_journey's statements, built once: a subject's page and decision read them on every call,
# and building a statement costs SQLAlchemy more than SQLite's answer to it
_HEAD = (
    sa_select(CredentialRequest, RequestSubject, Organization, Subject, OtpChallenge)
    .join(
        RequestSubject,
        and_(
            col(RequestSubject.request_id) == CredentialRequest.id,
            col(RequestSubject.subject_id) == bindparam("subject"),
        ),
    )
    .join(Organization, col(Organization.id) == CredentialRequest.organization_id)
    .join(Subject, col(Subject.id) == RequestSubject.subject_id)
    .outerjoin(
        OtpChallenge,
        and_(
            col(OtpChallenge.request_id) == CredentialRequest.id,
            col(OtpChallenge.subject_id) == RequestSubject.subject_id,
        ),
    )
    .where(col(CredentialRequest.id) == bindparam("request"))
)
_CREDENTIALS = (
    select(Credential).where(Credential.request_id == bindparam("request")).order_by(col(Credential.position))
)
_ACTIONS = select(Action).where(
    Action.organization_id == bindparam("organization"), col(Action.id).in_(bindparam("ids", expanding=True))
)
_DECISIONS = select(Decision).where(
    Decision.subject_id == bindparam("subject"),
    col(Decision.credential_id).in_(bindparam("ids", expanding=True)),
)
_VERSIONS = select(ActionVersion).where(
    ActionVersion.organization_id == bindparam("organization"),
    col(ActionVersion.id).in_(bindparam("ids", expanding=True)),
)


def load_journey(engine: Engine, request_id: str, subject_id: str) -> Journey | None:
    """The subject's journey through the request, None when the subject is not one of its own."""
    with read_session(engine) as session:
        # the request, this subject's link to it, the organization, the subject and their code
        # challenge (none before the first code), in one statement
        found = session.execute(_HEAD, {"request": request_id, "subject": subject_id}).first()
        if found is None:
            return None
        req, link, org, subject, challenge = found
        creds = list(session.exec(_CREDENTIALS, params={"request": request_id}))
        mine = {"organization": req.organization_id}
        action_ids = sorted({str(c.action["id"]) for c in creds if c.action and c.action.get("id")})
        actions = (
            {a.id: a for a in session.exec(_ACTIONS, params={**mine, "ids": action_ids})}
            if action_ids
            else {}
        )
        decided = (
            {
                d.credential_id: d.accepted
                for d in session.exec(
                    _DECISIONS, params={"subject": subject_id, "ids": [c.id for c in creds]}
                )
            }
            if creds
            else {}
        )
        versions = sorted({str(c.action.get("version")) for c in creds if c.action})
        contents = (
            {v.id: v.content for v in session.exec(_VERSIONS, params={**mine, "ids": versions})}
            if versions
            else {}
        )
        described = {v: limit_usage.descriptions(content) for v, content in contents.items()}
        declared = {
            v: {
                p.name: p
                for p in parse_params(content.get("userParams"), where="userParams", allow_defaults=True)[0]
            }
            for v, content in contents.items()
        }
        shown = [_shown(c, actions, described, subject.contact, declared) for c in creds]
        return Journey(req, org, subject, link, shown, decided, challenge)


@dataclass(frozen=True)
class StoredDecision:
    """A subject's decision on a credential as stored, with what its update answered with."""

    decision_id: str
    decided_at: datetime
    accepted: bool
    mandate_id: str | None  # the credential's mandate, once issued
    request_status: str


def stored_decision(
    engine: Engine, request_id: str, subject_id: str, credential_id: str
) -> StoredDecision | None:
    """The subject's decision on this credential of this request, None when they have none."""
    with read_session(engine) as session:
        cred = session.get(Credential, credential_id)
        req = session.get(CredentialRequest, request_id)
        if cred is None or req is None or cred.request_id != request_id:
            return None
        found = decision_of(session, credential_id, subject_id)
        if found is None:
            return None
        at = aware_utc(found.decided_at)
        return StoredDecision(found.id, at, found.accepted, cred.mandate_id, req.status)


def mark_sent(engine: Engine, request_id: str) -> None:
    """A code went out: the request's DRAFT credentials become PENDING (CONTRACT 9)."""
    table = Credential.__table__  # type: ignore[attr-defined]
    with write_connection(engine) as conn:
        conn.execute(
            update(table)
            .where(table.c.request_id == request_id, table.c.status == CredentialStatus.DRAFT)
            .values(status=CredentialStatus.PENDING)
        )
