"""each webhook attempt keeps the URL it was sent to (without its query) and how long it took

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 18:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_attempt") as batch:
        batch.add_column(sa.Column("url", sqlmodel.sql.sqltypes.AutoString(length=2048), nullable=True))
        batch.add_column(sa.Column("duration_ms", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhook_attempt") as batch:
        batch.drop_column("duration_ms")
        batch.drop_column("url")
