"""use limits and budgets of a mandate (issue 31): a credential's maxExecutions, its action's
limits with their max resolved, and what its allowed verifications used

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 20:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (nullable, no default): no table copy, instant on both databases
    op.add_column("credential", sa.Column("max_executions", sa.Integer(), nullable=True))
    op.add_column("credential", sa.Column("limits", sa.JSON(), nullable=True))
    op.add_column("credential", sa.Column("usage", sa.JSON(), nullable=True))
    # the worker finds mandates revoked by their last use whose event is still to be made
    op.create_index(op.f("ix_credential_revoked_at"), "credential", ["revoked_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_credential_revoked_at"), table_name="credential")
    op.drop_column("credential", "usage")  # SQLite 3.35+: ALTER TABLE DROP COLUMN
    op.drop_column("credential", "limits")
    op.drop_column("credential", "max_executions")
