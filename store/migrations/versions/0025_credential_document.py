"""a DOCUMENT credential's own PDF, given inline in POST /request (issue 36)

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28 00:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "credential_document",
        sa.Column("credential_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("digest_sri", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("pdf", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["credential_id"],
            ["credential.id"],
        ),
        sa.PrimaryKeyConstraint("credential_id"),
    )


def downgrade() -> None:
    op.drop_table("credential_document")
