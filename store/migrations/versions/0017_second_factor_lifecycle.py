"""the second factor's lifecycle (issue 30, item 7): one-time recovery codes, a new secret kept
apart from the one in use until its first code (so a factor can be replaced), and an
organization's requirement that every member has the factor on

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# a secret not confirmed yet sat in totp_secret_ciphertext with totp_enabled_at NULL
PENDING = sa.text("totp_enabled_at IS NULL AND totp_secret_ciphertext IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "member_recovery_code",
        sa.Column("code_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("member_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("used_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["member_id"], ["member.id"]),
        sa.PrimaryKeyConstraint("code_hash"),
    )
    op.create_index(
        op.f("ix_member_recovery_code_member_id"), "member_recovery_code", ["member_id"], unique=False
    )
    # plain ADD COLUMN, never a batch copy: member and organization are referenced by other tables'
    # rows, and SQLite (foreign keys on) refuses to drop such a table to recreate it
    op.add_column("member", sa.Column("totp_pending_ciphertext", sa.LargeBinary(), nullable=True))
    member = sa.table(
        "member",
        sa.column("totp_secret_ciphertext", sa.LargeBinary()),
        sa.column("totp_pending_ciphertext", sa.LargeBinary()),
        sa.column("totp_enabled_at"),
    )
    op.execute(
        member.update()
        .where(PENDING)
        .values(totp_pending_ciphertext=member.c.totp_secret_ciphertext, totp_secret_ciphertext=None)
    )
    op.add_column(
        "organization",
        sa.Column("require_second_factor", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_column("organization", "require_second_factor")  # SQLite 3.35+: ALTER TABLE DROP COLUMN
    member = sa.table(
        "member",
        sa.column("totp_secret_ciphertext", sa.LargeBinary()),
        sa.column("totp_pending_ciphertext", sa.LargeBinary()),
        sa.column("totp_enabled_at"),
    )
    op.execute(
        member.update()
        .where(member.c.totp_enabled_at.is_(None))
        .values(totp_secret_ciphertext=member.c.totp_pending_ciphertext)
    )
    op.drop_column("member", "totp_pending_ciphertext")
    op.drop_index(op.f("ix_member_recovery_code_member_id"), table_name="member_recovery_code")
    op.drop_table("member_recovery_code")
