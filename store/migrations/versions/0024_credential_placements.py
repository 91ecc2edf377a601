"""a DOCUMENT credential's placements (issue 36): where each signer's signature, initials,
identity field or decision date is drawn on the pages of its PDF

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-27 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (nullable, no default): no table copy, instant on both databases
    op.add_column("credential", sa.Column("placements", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("credential", "placements")  # SQLite 3.35+: ALTER TABLE DROP COLUMN
