"""members: an optional TOTP second factor, and sessions waiting for its code; API keys: a name, a
description and when each was last used

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24 20:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("member") as batch:
        batch.add_column(sa.Column("totp_secret_ciphertext", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("totp_enabled_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("totp_last_step", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("member_session") as batch:
        batch.add_column(sa.Column("awaiting_code", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("api_key") as batch:
        batch.add_column(
            sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=80), nullable=False, server_default="")
        )
        batch.add_column(
            sa.Column(
                "description", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False, server_default=""
            )
        )
        batch.add_column(sa.Column("last_used_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_key") as batch:
        batch.drop_column("last_used_at")
        batch.drop_column("description")
        batch.drop_column("name")
    with op.batch_alter_table("member_session") as batch:
        batch.drop_column("awaiting_code")
    with op.batch_alter_table("member") as batch:
        batch.drop_column("totp_last_step")
        batch.drop_column("totp_enabled_at")
        batch.drop_column("totp_secret_ciphertext")
