"""subject journey: the current one-time code of each subject in a request (only its keyed hash),
and the origins allowed to embed an organization's approval page

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 06:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "otp_challenge",
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("subject_id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("code_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("channel", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("sends", sa.Integer(), nullable=False),
        sa.Column("sent_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("locked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("verified_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("delivery_error", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["credential_request.id"],
        ),
        sa.ForeignKeyConstraint(
            ["subject_id"],
            ["subject.id"],
        ),
        sa.PrimaryKeyConstraint("request_id", "subject_id"),
    )
    with op.batch_alter_table("organization", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("frame_origins", sa.JSON(), server_default=sa.text("'[]'"), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("organization", schema=None) as batch_op:
        batch_op.drop_column("frame_origins")
    op.drop_table("otp_challenge")
