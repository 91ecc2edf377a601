"""the last PDF rendered of each credential, under the digest of what it shows

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 21:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "credential_pdf",
        sa.Column("credential_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("content_digest", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("pdf", sa.LargeBinary(), nullable=False),
        sa.Column("rendered_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["credential_id"],
            ["credential.id"],
        ),
        sa.PrimaryKeyConstraint("credential_id"),
    )


def downgrade() -> None:
    op.drop_table("credential_pdf")
