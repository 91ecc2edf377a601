"""a subject's options in one request (issue 36): the secondary contact that receives the code
(encrypted under the master key, with its kind) and the signer quality

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (nullable, no default): no table copy, instant on both databases
    op.add_column("request_subject", sa.Column("secondary_contact_sealed", sa.LargeBinary(), nullable=True))
    op.add_column("request_subject", sa.Column("secondary_contact_kind", sa.String(length=8), nullable=True))
    op.add_column("request_subject", sa.Column("signer_quality", sa.String(length=100), nullable=True))


def downgrade() -> None:
    op.drop_column("request_subject", "signer_quality")  # SQLite 3.35+: ALTER TABLE DROP COLUMN
    op.drop_column("request_subject", "secondary_contact_kind")
    op.drop_column("request_subject", "secondary_contact_sealed")
