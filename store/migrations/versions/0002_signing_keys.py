"""signing keys: Ed25519 keys of the service (issuer) and of organizations

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 03:08:52.223389

The partial unique index (one active key per owner) is a plain ``CREATE UNIQUE INDEX … WHERE``
on both SQLite (3.8+) and PostgreSQL.
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVE = sa.text("status = 'active'")


def upgrade() -> None:
    op.create_table(
        "signing_key",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("public_multikey", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("private_key_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("retired_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("public_multikey"),
    )
    with op.batch_alter_table("signing_key", schema=None) as batch_op:
        batch_op.create_index("ix_signing_key_owner_created", ["owner", "created_at"], unique=False)
        batch_op.create_index(
            "uq_signing_key_one_active", ["owner"], unique=True, sqlite_where=ACTIVE, postgresql_where=ACTIVE
        )


def downgrade() -> None:
    with op.batch_alter_table("signing_key", schema=None) as batch_op:
        batch_op.drop_index("uq_signing_key_one_active")
        batch_op.drop_index("ix_signing_key_owner_created")
    op.drop_table("signing_key")
