"""the subject's portal (issue 32): an organization's setting, the codes asked for and the sessions

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 02:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "organization",
        sa.Column("portal_enabled", sa.Boolean(), nullable=False, server_default=sa.true()),
    )
    op.create_table(
        "portal_challenge",
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("contact_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("contact_shown", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("code_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("locked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_portal_challenge_contact_hash", "portal_challenge", ["contact_hash"], unique=False)
    op.create_table(
        "portal_session",
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("contact_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("contact_shown", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("ended_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_portal_session_contact_hash", "portal_session", ["contact_hash"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_portal_session_contact_hash", table_name="portal_session")
    op.drop_table("portal_session")
    op.drop_index("ix_portal_challenge_contact_hash", table_name="portal_challenge")
    op.drop_table("portal_challenge")
    op.drop_column("organization", "portal_enabled")  # SQLite 3.35+
