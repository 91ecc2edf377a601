"""a webhook is on or off and takes the event types chosen (issue 34)

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-28 03:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_config") as batch:
        batch.add_column(sa.Column("enabled", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch.add_column(sa.Column("event_types", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhook_config") as batch:
        batch.drop_column("event_types")
        batch.drop_column("enabled")
