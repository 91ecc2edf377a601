"""a request sent again links to the one it was sent from (issue 32): one new request per request

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-28 02:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("credential_request") as batch:
        batch.add_column(sa.Column("resent_from", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=True))
        batch.create_index("uq_request_resent_from", ["resent_from"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("credential_request") as batch:
        batch.drop_index("uq_request_resent_from")
        batch.drop_column("resent_from")
