"""each webhook attempt keeps the receiver's answer (headers, the first 2 KiB of the body); an
event being resent stays delivered (issue 34)

Revision ID: 0029
Revises: 0027
Create Date: 2026-11-28 02:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_attempt") as batch:
        batch.add_column(sa.Column("response_headers", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("response_body", sa.Text(), nullable=True))
    with op.batch_alter_table("webhook_event") as batch:
        batch.add_column(sa.Column("resending", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("webhook_event") as batch:
        batch.drop_column("resending")
    with op.batch_alter_table("webhook_attempt") as batch:
        batch.drop_column("response_body")
        batch.drop_column("response_headers")
