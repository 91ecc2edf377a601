"""platform identity checks (KYC) of subjects, one row per check started from the approval page,
and the identity result each request required of its subjects

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 06:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "kyc_check",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("subject_id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("provider", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("message", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("completed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["credential_request.id"],
        ),
        sa.ForeignKeyConstraint(
            ["subject_id"],
            ["subject.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("kyc_check", schema=None) as batch_op:
        batch_op.create_index("ix_kyc_check_request_subject", ["request_id", "subject_id"], unique=False)
    with op.batch_alter_table("request_subject", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("identity_result", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("request_subject", schema=None) as batch_op:
        batch_op.drop_column("identity_result")
    with op.batch_alter_table("kyc_check", schema=None) as batch_op:
        batch_op.drop_index("ix_kyc_check_request_subject")
    op.drop_table("kyc_check")
