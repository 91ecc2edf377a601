"""approvals (the SDK's resources) with their versions, workflows (its groups), and which approval
version a request credential was made from

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_Str = sqlmodel.sql.sqltypes.AutoString
_When = sqlmodel.sql.sqltypes.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "approval",
        sa.Column("id", _Str(length=24), nullable=False),
        sa.Column("organization_id", _Str(length=24), nullable=False),
        sa.Column("name", _Str(length=200), nullable=False),
        sa.Column("type", _Str(length=16), nullable=False),
        sa.Column("description", _Str(length=2000), nullable=True),
        sa.Column("internal_id", _Str(length=255), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", _When(), nullable=False),
        sa.Column("updated_at", _When(), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organization.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_approval_organization_id"), "approval", ["organization_id"], unique=False)
    op.create_index(op.f("ix_approval_internal_id"), "approval", ["internal_id"], unique=False)
    op.create_table(
        "approval_version",
        sa.Column("id", _Str(length=24), nullable=False),
        sa.Column("approval_id", _Str(length=24), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("name", _Str(length=200), nullable=False),
        sa.Column("description", _Str(length=2000), nullable=True),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("pdf", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", _When(), nullable=False),
        sa.Column("created_by", _Str(length=100), nullable=False),
        sa.ForeignKeyConstraint(["approval_id"], ["approval.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("approval_id", "number", name="uq_approval_version_number"),
    )
    op.create_index(
        op.f("ix_approval_version_approval_id"), "approval_version", ["approval_id"], unique=False
    )
    op.create_table(
        "approval_workflow",
        sa.Column("id", _Str(length=24), nullable=False),
        sa.Column("organization_id", _Str(length=24), nullable=False),
        sa.Column("name", _Str(length=200), nullable=False),
        sa.Column("description", _Str(length=2000), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", _When(), nullable=False),
        sa.Column("updated_at", _When(), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organization.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        op.f("ix_approval_workflow_organization_id"), "approval_workflow", ["organization_id"], unique=False
    )
    op.create_table(
        "approval_workflow_item",
        sa.Column("workflow_id", _Str(length=24), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("approval_id", _Str(length=24), nullable=False),
        sa.ForeignKeyConstraint(["workflow_id"], ["approval_workflow.id"]),
        sa.ForeignKeyConstraint(["approval_id"], ["approval.id"]),
        sa.PrimaryKeyConstraint("workflow_id", "position"),
    )
    op.create_index(
        op.f("ix_approval_workflow_item_approval_id"), "approval_workflow_item", ["approval_id"], unique=False
    )
    op.create_table(
        "credential_approval",
        sa.Column("credential_id", _Str(length=24), nullable=False),
        sa.Column("approval_id", _Str(length=24), nullable=False),
        sa.Column("version_id", _Str(length=24), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("type", _Str(length=16), nullable=False),
        sa.Column("workflow_id", _Str(length=24), nullable=True),
        sa.Column("values", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["credential_id"], ["credential.id"]),
        sa.ForeignKeyConstraint(["approval_id"], ["approval.id"]),
        sa.ForeignKeyConstraint(["version_id"], ["approval_version.id"]),
        sa.PrimaryKeyConstraint("credential_id"),
    )
    op.create_index(
        op.f("ix_credential_approval_approval_id"), "credential_approval", ["approval_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_credential_approval_approval_id"), table_name="credential_approval")
    op.drop_table("credential_approval")
    op.drop_index(op.f("ix_approval_workflow_item_approval_id"), table_name="approval_workflow_item")
    op.drop_table("approval_workflow_item")
    op.drop_index(op.f("ix_approval_workflow_organization_id"), table_name="approval_workflow")
    op.drop_table("approval_workflow")
    op.drop_index(op.f("ix_approval_version_approval_id"), table_name="approval_version")
    op.drop_table("approval_version")
    op.drop_index(op.f("ix_approval_internal_id"), table_name="approval")
    op.drop_index(op.f("ix_approval_organization_id"), table_name="approval")
    op.drop_table("approval")
