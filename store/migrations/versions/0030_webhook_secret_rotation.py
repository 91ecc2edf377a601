"""a webhook's signature secret is rotated with an overlap: the previous one, sealed, and until when
deliveries are signed with it too (issue 34)

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-28 03:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_config") as batch:
        batch.add_column(sa.Column("previous_signature_secret_ciphertext", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("previous_until", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhook_config") as batch:
        batch.drop_column("previous_until")
        batch.drop_column("previous_signature_secret_ciphertext")
