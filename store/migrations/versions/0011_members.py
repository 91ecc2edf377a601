"""dashboard members, their one-time link tokens and their sessions

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 01:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "member",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("email", sqlmodel.sql.sqltypes.AutoString(length=320), nullable=False),
        sa.Column("role", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("password_hash", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("disabled_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("failed_logins", sa.Integer(), nullable=False),
        sa.Column("locked_until", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["organization_id"], ["organization.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email"),
    )
    op.create_index(op.f("ix_member_organization_id"), "member", ["organization_id"], unique=False)
    op.create_table(
        "member_token",
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("member_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("purpose", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("used_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["member_id"], ["member.id"]),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index(op.f("ix_member_token_member_id"), "member_token", ["member_id"], unique=False)
    op.create_table(
        "member_session",
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("member_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["member_id"], ["member.id"]),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index(op.f("ix_member_session_member_id"), "member_session", ["member_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_member_session_member_id"), table_name="member_session")
    op.drop_table("member_session")
    op.drop_index(op.f("ix_member_token_member_id"), table_name="member_token")
    op.drop_table("member_token")
    op.drop_index(op.f("ix_member_organization_id"), table_name="member")
    op.drop_table("member")
