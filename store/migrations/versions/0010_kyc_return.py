"""the browser an identity check was started from, and the single use of its return

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 21:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("kyc_check") as batch:
        batch.add_column(
            sa.Column("browser_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )
        batch.add_column(sa.Column("returned_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("kyc_check") as batch:
        batch.drop_column("returned_at")
        batch.drop_column("browser_hash")
