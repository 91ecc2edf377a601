"""failed dashboard logins counted per address and client address, and per client address
(issue 30): the member row's own count and lock go, since they locked the member out for everyone

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "login_throttle",
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
        sa.Column("address", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failure_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("locked_until", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_index(op.f("ix_login_throttle_address"), "login_throttle", ["address"], unique=False)
    op.create_index(
        op.f("ix_login_throttle_last_failure_at"), "login_throttle", ["last_failure_at"], unique=False
    )
    with op.batch_alter_table("member") as batch:
        batch.drop_column("failed_logins")
        batch.drop_column("locked_until")


def downgrade() -> None:
    with op.batch_alter_table("member") as batch:
        batch.add_column(sa.Column("failed_logins", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("locked_until", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
    op.drop_index(op.f("ix_login_throttle_last_failure_at"), table_name="login_throttle")
    op.drop_index(op.f("ix_login_throttle_address"), table_name="login_throttle")
    op.drop_table("login_throttle")
