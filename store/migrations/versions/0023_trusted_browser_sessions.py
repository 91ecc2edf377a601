"""trusted browser sessions (issue 36, ``iframe.cookie``): the lifetime a request allows, and the
sessions themselves, each a keyed hash of a browser's token for one subject of one organization

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (nullable, no default): no table copy, instant on both databases
    op.add_column("credential_request", sa.Column("trusted_session_seconds", sa.Integer(), nullable=True))
    op.create_table(
        "trusted_session",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("subject_id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("surface", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("last_used_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("revoked_by", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.ForeignKeyConstraint(["organization_id"], ["organization.id"]),
        sa.ForeignKeyConstraint(["subject_id"], ["subject.id"]),
        sa.ForeignKeyConstraint(["request_id"], ["credential_request.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_index(
        "ix_trusted_session_org_subject", "trusted_session", ["organization_id", "subject_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_trusted_session_org_subject", table_name="trusted_session")
    op.drop_table("trusted_session")
    op.drop_column("credential_request", "trusted_session_seconds")  # SQLite 3.35+
