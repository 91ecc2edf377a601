"""Approvals and their versions, workflows of approvals, and what ``POST /request`` takes of them
(``services.approvals`` checks what comes in; this module stores and reads it).

Every read and write is scoped to one organization: another organization's approval is not found,
like a missing one. A version is never changed: an edit adds the next number and makes it current.
Each change writes ``APPROVAL_CHANGED`` or ``WORKFLOW_CHANGED`` in its transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, exists
from sqlmodel import Session, col, func, select

from core.ids import new_object_id
from store import audit
from store.db import read_session, utcnow, write_session
from store.tables import (
    Approval,
    ApprovalVersion,
    ApprovalWorkflow,
    ApprovalWorkflowItem,
    Organization,
)


class NotFound(LookupError):
    pass


class Refused(ValueError):
    """A change the rules refuse (an archived approval changed, a workflow of unknown approvals)."""


@dataclass(frozen=True)
class NewVersion:
    """An approval's name, description, internal id and a version's content (and PDF)."""

    name: str
    type: str
    content: dict[str, Any]
    description: str | None = None
    internal_id: str | None = None
    pdf: bytes | None = None


@dataclass(frozen=True)
class ApprovalView:
    approval: Approval
    current: ApprovalVersion
    workflow_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WorkflowView:
    workflow: ApprovalWorkflow
    approvals: list[Approval]


@dataclass(frozen=True)
class Filter:
    page_index: int = 0
    page_size: int = 10
    search: str | None = None
    active: bool | None = None
    types: tuple[str, ...] = ()
    internal_id: str | None = None


# --- approvals: changes ---------------------------------------------------------------------------


def create_approval(engine: Engine, org_id: str, new: NewVersion, *, actor: str) -> ApprovalView:
    """A new active approval with ``new`` as its version 1."""
    key = audit.signer(engine)
    now = utcnow()
    with write_session(engine) as session:
        if session.get(Organization, org_id) is None:
            raise NotFound(f"organization {org_id} not found")
        approval = Approval(
            id=new_object_id(),
            organization_id=org_id,
            name=new.name,
            type=new.type,
            description=new.description,
            internal_id=new.internal_id,
            active=True,
            version=1,
            created_at=now,
            updated_at=now,
        )
        session.add(approval)
        session.flush()
        version = _add_version(session, approval, new, 1, actor)
        _record(session, key, approval, "created", actor)
        return ApprovalView(approval, version)


def add_version(
    engine: Engine, org_id: str, approval_id: str, new: NewVersion, *, actor: str
) -> ApprovalView:
    """The approval's next version, made current (with its name, description and internal id)."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        approval = _locked(session, org_id, approval_id)
        if not approval.active:
            raise Refused(f"approval {approval_id} is archived: it takes no new version")
        if new.type != approval.type:
            raise Refused(f"approval {approval_id} is a {approval.type}: a new version keeps its type")
        number = approval.version + 1
        previous = {"version": approval.version, "name": approval.name}
        approval.name, approval.description, approval.internal_id = new.name, new.description, new.internal_id
        approval.version, approval.updated_at = number, utcnow()
        session.add(approval)
        version = _add_version(session, approval, new, number, actor)
        _record(session, key, approval, "version", actor, previous)
        return ApprovalView(approval, version, _workflow_ids(session, [approval.id]).get(approval.id, []))


def archive_approval(engine: Engine, org_id: str, approval_id: str, *, actor: str) -> Approval:
    """The approval made inactive for good: no request takes it any more (a workflow listing it
    is refused by ``POST /request`` until archived too). Archiving twice changes nothing."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        approval = _locked(session, org_id, approval_id)
        if approval.active:
            approval.active, approval.updated_at = False, utcnow()
            session.add(approval)
            _record(session, key, approval, "archived", actor)
        return approval


def _locked(session: Session, org_id: str, approval_id: str) -> Approval:
    approval = session.exec(
        select(Approval)
        .where(Approval.organization_id == org_id, Approval.id == approval_id)
        .with_for_update()
    ).first()
    if approval is None:
        raise NotFound(f"approval {approval_id} not found")
    return approval


def _add_version(
    session: Session, approval: Approval, new: NewVersion, number: int, actor: str
) -> ApprovalVersion:
    version = ApprovalVersion(
        id=new_object_id(),
        approval_id=approval.id,
        number=number,
        name=new.name,
        description=new.description,
        content=new.content,
        pdf=new.pdf,
        created_at=utcnow(),
        created_by=actor[:100],
    )
    session.add(version)
    session.flush()
    return version


def _record(
    session: Session,
    key: Any,
    approval: Approval,
    change: str,
    actor: str,
    previous: dict[str, Any] | None = None,
) -> None:
    """``APPROVAL_CHANGED``: the approval's id, type, current version and name, and for a new version
    the ``previous`` version and name."""
    data: dict[str, Any] = {
        "approvalId": approval.id,
        "change": change,
        "type": approval.type,
        "version": approval.version,
        "name": approval.name,
    }
    if previous is not None:
        data["previous"] = previous
    entry = audit.Entry(audit.APPROVAL_CHANGED, approval.organization_id, actor=actor, data=data)
    session.flush()
    audit.append(session.connection(), key, entry)


# --- approvals: reading ---------------------------------------------------------------------------


def _approval_where(org_id: str, query: Filter) -> list[Any]:
    where: list[Any] = [col(Approval.organization_id) == org_id]
    if query.search:
        where.append(col(Approval.name).icontains(query.search, autoescape=True))
    if query.active is not None:
        where.append(col(Approval.active) == query.active)
    if query.types:
        where.append(col(Approval.type).in_(query.types))
    if query.internal_id is not None:
        where.append(col(Approval.internal_id) == query.internal_id)
    return where


def list_approvals(engine: Engine, org_id: str, query: Filter) -> tuple[list[ApprovalView], int]:
    """A page of the organization's approvals matching ``query``, oldest first, and how many match."""
    where = _approval_where(org_id, query)
    with read_session(engine) as session:
        total = session.exec(select(func.count()).select_from(Approval).where(*where)).one()
        approvals = list(
            session.exec(
                select(Approval)
                .where(*where)
                .order_by(col(Approval.created_at), col(Approval.id))
                .offset(query.page_index * query.page_size)
                .limit(query.page_size)
            )
        )
        return _views(session, approvals), total


def get_approval(engine: Engine, org_id: str, approval_id: str) -> ApprovalView | None:
    with read_session(engine) as session:
        approval = session.exec(
            select(Approval).where(Approval.organization_id == org_id, Approval.id == approval_id)
        ).first()
        return None if approval is None else _views(session, [approval])[0]


def version_of(
    engine: Engine, org_id: str, approval_id: str, number: int | None = None
) -> ApprovalVersion | None:
    """Version ``number`` (the current one when None) of one of the organization's approvals."""
    with read_session(engine) as session:
        approval = session.exec(
            select(Approval).where(Approval.organization_id == org_id, Approval.id == approval_id)
        ).first()
        if approval is None:
            return None
        return session.exec(
            select(ApprovalVersion).where(
                ApprovalVersion.approval_id == approval_id,
                ApprovalVersion.number == (approval.version if number is None else number),
            )
        ).first()


def _views(session: Session, approvals: list[Approval]) -> list[ApprovalView]:
    if not approvals:
        return []
    ids = [a.id for a in approvals]
    current = {
        v.approval_id: v
        for v in session.exec(
            select(ApprovalVersion)
            .join(Approval, col(Approval.id) == col(ApprovalVersion.approval_id))
            .where(col(Approval.id).in_(ids), col(ApprovalVersion.number) == col(Approval.version))
        )
    }
    workflows = _workflow_ids(session, ids)
    return [ApprovalView(a, current[a.id], workflows.get(a.id, [])) for a in approvals]


def _workflow_ids(session: Session, approval_ids: list[str]) -> dict[str, list[str]]:
    rows = session.exec(
        select(ApprovalWorkflowItem.approval_id, ApprovalWorkflowItem.workflow_id)
        .where(col(ApprovalWorkflowItem.approval_id).in_(approval_ids))
        .order_by(col(ApprovalWorkflowItem.workflow_id))
    )
    out: dict[str, list[str]] = {}
    for approval_id, workflow_id in rows:
        out.setdefault(approval_id, []).append(workflow_id)
    return out


# --- workflows ------------------------------------------------------------------------------------


def create_workflow(
    engine: Engine, org_id: str, name: str, description: str | None, approval_ids: list[str], *, actor: str
) -> WorkflowView:
    """A new active workflow of the organization's active approvals, in the order given."""
    key = audit.signer(engine)
    now = utcnow()
    with write_session(engine) as session:
        found = {
            a.id: a
            for a in session.exec(
                select(Approval).where(Approval.organization_id == org_id, col(Approval.id).in_(approval_ids))
            )
        }
        missing = [i for i in approval_ids if i not in found]
        if missing:
            raise NotFound(f"approval {missing[0]} not found")
        archived = [i for i in approval_ids if not found[i].active]
        if archived:
            raise Refused(f"approval {archived[0]} is archived")
        workflow = ApprovalWorkflow(
            id=new_object_id(),
            organization_id=org_id,
            name=name,
            description=description,
            active=True,
            created_at=now,
            updated_at=now,
        )
        session.add(workflow)
        session.flush()
        for position, approval_id in enumerate(approval_ids):
            session.add(
                ApprovalWorkflowItem(workflow_id=workflow.id, position=position, approval_id=approval_id)
            )
        _record_workflow(session, key, workflow, "created", actor)
        return WorkflowView(workflow, [found[i] for i in approval_ids])


def archive_workflow(engine: Engine, org_id: str, workflow_id: str, *, actor: str) -> ApprovalWorkflow:
    key = audit.signer(engine)
    with write_session(engine) as session:
        workflow = session.exec(
            select(ApprovalWorkflow)
            .where(ApprovalWorkflow.organization_id == org_id, ApprovalWorkflow.id == workflow_id)
            .with_for_update()
        ).first()
        if workflow is None:
            raise NotFound(f"workflow {workflow_id} not found")
        if workflow.active:
            workflow.active, workflow.updated_at = False, utcnow()
            session.add(workflow)
            _record_workflow(session, key, workflow, "archived", actor)
        return workflow


def _record_workflow(session: Session, key: Any, workflow: ApprovalWorkflow, change: str, actor: str) -> None:
    data = {"workflowId": workflow.id, "change": change}
    entry = audit.Entry(audit.WORKFLOW_CHANGED, workflow.organization_id, actor=actor, data=data)
    session.flush()
    audit.append(session.connection(), key, entry)


def _contains(where: Any) -> Any:
    """Workflows with an approval matching ``where``."""
    return exists(
        select(ApprovalWorkflowItem.workflow_id)
        .join(Approval, col(Approval.id) == col(ApprovalWorkflowItem.approval_id))
        .where(col(ApprovalWorkflowItem.workflow_id) == col(ApprovalWorkflow.id), where)
    )


def list_workflows(engine: Engine, org_id: str, query: Filter) -> tuple[list[WorkflowView], int]:
    """A page of the organization's workflows, oldest first: ``search`` in the workflow's name or
    an approval's, ``types`` and ``internalId`` of an approval it lists."""
    where: list[Any] = [col(ApprovalWorkflow.organization_id) == org_id]
    if query.search:
        where.append(
            col(ApprovalWorkflow.name).icontains(query.search, autoescape=True)
            | _contains(col(Approval.name).icontains(query.search, autoescape=True))
        )
    if query.active is not None:
        where.append(col(ApprovalWorkflow.active) == query.active)
    if query.types:
        where.append(_contains(col(Approval.type).in_(query.types)))
    if query.internal_id is not None:
        where.append(_contains(col(Approval.internal_id) == query.internal_id))
    with read_session(engine) as session:
        total = session.exec(select(func.count()).select_from(ApprovalWorkflow).where(*where)).one()
        workflows = list(
            session.exec(
                select(ApprovalWorkflow)
                .where(*where)
                .order_by(col(ApprovalWorkflow.created_at), col(ApprovalWorkflow.id))
                .offset(query.page_index * query.page_size)
                .limit(query.page_size)
            )
        )
        return _workflow_views(session, workflows), total


def _workflow_views(session: Session, workflows: list[ApprovalWorkflow]) -> list[WorkflowView]:
    if not workflows:
        return []
    rows = session.exec(
        select(ApprovalWorkflowItem, Approval)
        .join(Approval, col(Approval.id) == col(ApprovalWorkflowItem.approval_id))
        .where(col(ApprovalWorkflowItem.workflow_id).in_([w.id for w in workflows]))
        .order_by(col(ApprovalWorkflowItem.workflow_id), col(ApprovalWorkflowItem.position))
    )
    items: dict[str, list[Approval]] = {}
    for item, approval in rows:
        items.setdefault(item.workflow_id, []).append(approval)
    return [WorkflowView(w, items.get(w.id, [])) for w in workflows]


def get_workflow(engine: Engine, org_id: str, workflow_id: str) -> WorkflowView | None:
    with read_session(engine) as session:
        workflow = session.exec(
            select(ApprovalWorkflow).where(
                ApprovalWorkflow.organization_id == org_id, ApprovalWorkflow.id == workflow_id
            )
        ).first()
        return None if workflow is None else _workflow_views(session, [workflow])[0]


# --- what POST /request takes ---------------------------------------------------------------------


@dataclass(frozen=True)
class Taken:
    """An approval's current version as a request takes it (from a workflow when ``workflow_id``)."""

    approval: Approval
    version: ApprovalVersion
    workflow_id: str | None = None
    where: str = ""  # how the request named it: ``resourcesIds.<i>`` or ``groupIds.<i>``


def take_for_request(
    engine: Engine, org_id: str, approval_ids: list[str], workflow_ids: list[str]
) -> tuple[list[Taken], list[str]]:
    """The approvals ``approval_ids`` names, then each workflow's in its order, with their current
    versions; or one message per unknown (or another organization's) id and archived one."""
    problems: list[str] = []
    wanted: list[tuple[str, str | None, str]] = [
        (a, None, f"resourcesIds.{i}") for i, a in enumerate(approval_ids)
    ]
    with read_session(engine) as session:
        for i, workflow_id in enumerate(workflow_ids):
            view = None
            workflow = session.exec(
                select(ApprovalWorkflow).where(
                    ApprovalWorkflow.organization_id == org_id, ApprovalWorkflow.id == workflow_id
                )
            ).first()
            if workflow is not None:
                view = _workflow_views(session, [workflow])[0]
            if view is None:
                problems.append(f"groupIds.{i}: workflow {workflow_id} not found")
            elif not view.workflow.active:
                problems.append(f"groupIds.{i}: workflow {workflow_id} is archived")
            else:
                wanted += [(a.id, workflow_id, f"groupIds.{i}") for a in view.approvals]
        ids = list(dict.fromkeys(a for a, _, _ in wanted))
        approvals = {
            a.id: a
            for a in session.exec(
                select(Approval).where(Approval.organization_id == org_id, col(Approval.id).in_(ids))
            )
        }
        views = {v.approval.id: v for v in _views(session, list(approvals.values()))}
    taken: list[Taken] = []
    for approval_id, from_workflow, where in wanted:
        found = views.get(approval_id)
        if found is None:
            problems.append(f"{where}: approval {approval_id} not found")
        elif not found.approval.active:
            problems.append(f"{where}: approval {approval_id} is archived")
        else:
            taken.append(Taken(found.approval, found.current, from_workflow, where))
    return taken, problems
