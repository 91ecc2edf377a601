"""the integrator's P-256 public key a request's iframe messages are encrypted to (issue 36,
``iframe.pubKey`` of POST /request)

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (nullable, no default): no table copy, instant on both databases
    op.add_column(
        "credential_request",
        sa.Column("iframe_pub_key", sqlmodel.sql.sqltypes.AutoString(length=256), nullable=True),
    )


def downgrade() -> None:
    op.drop_column("credential_request", "iframe_pub_key")  # SQLite 3.35+: ALTER TABLE DROP COLUMN
