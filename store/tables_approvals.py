"""Approvals (the SDK's "resources") and workflows (its "groups") of an organization, and which
approval version each request credential was made from (migration 0019). Re-exported by
``store.tables``. Every schema change comes with an Alembic revision in migrations/versions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, LargeBinary, UniqueConstraint
from sqlmodel import Field, SQLModel


class Approval(SQLModel, table=True):
    """What an organization asks its subjects to approve, by name: FORM, DOCUMENT, JSON or POLICY.
    Each edit adds a version (``ApprovalVersion``); ``version`` is the current one's number, which
    new requests take. An archived approval (``active`` false) is never requested again."""

    __tablename__ = "approval"
    id: str = Field(primary_key=True, max_length=24)
    organization_id: str = Field(foreign_key="organization.id", index=True, max_length=24)
    name: str = Field(max_length=200)
    type: str = Field(max_length=16)
    description: str | None = Field(default=None, max_length=2000)
    internal_id: str | None = Field(default=None, index=True, max_length=255)
    active: bool = True
    version: int
    created_at: datetime
    updated_at: datetime


class ApprovalVersion(SQLModel, table=True):
    """One numbered version of an approval, never changed: its name, description and content
    (FORM fields, JSON object, POLICY action, DOCUMENT placements and its PDF's digest) and, for a
    DOCUMENT, the PDF itself."""

    __tablename__ = "approval_version"
    __table_args__ = (UniqueConstraint("approval_id", "number", name="uq_approval_version_number"),)
    id: str = Field(primary_key=True, max_length=24)
    approval_id: str = Field(foreign_key="approval.id", index=True, max_length=24)
    number: int
    name: str = Field(max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    content: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    pdf: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    created_at: datetime
    created_by: str = Field(max_length=100)


class ApprovalWorkflow(SQLModel, table=True):
    """An organization's ordered set of approvals requested together (the SDK's group)."""

    __tablename__ = "approval_workflow"
    id: str = Field(primary_key=True, max_length=24)
    organization_id: str = Field(foreign_key="organization.id", index=True, max_length=24)
    name: str = Field(max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    active: bool = True
    created_at: datetime
    updated_at: datetime


class ApprovalWorkflowItem(SQLModel, table=True):
    """An approval of a workflow at its position."""

    __tablename__ = "approval_workflow_item"
    workflow_id: str = Field(foreign_key="approval_workflow.id", primary_key=True, max_length=24)
    position: int = Field(primary_key=True)
    approval_id: str = Field(foreign_key="approval.id", index=True, max_length=24)


class CredentialApproval(SQLModel, table=True):
    """The approval version a request credential was made from (``POST /request``'s
    ``resourcesIds``/``groupIds``); a FORM's filled-in ``values`` once the subject gave them."""

    __tablename__ = "credential_approval"
    credential_id: str = Field(foreign_key="credential.id", primary_key=True, max_length=24)
    approval_id: str = Field(foreign_key="approval.id", index=True, max_length=24)
    version_id: str = Field(foreign_key="approval_version.id", max_length=24)
    version: int
    type: str = Field(max_length=16)
    workflow_id: str | None = Field(default=None, max_length=24)
    values: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
