"""webhooks: each organization's webhook settings, events with their delivery outcome, attempts

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 06:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "webhook_config",
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("url", sqlmodel.sql.sqltypes.AutoString(length=2048), nullable=False),
        sa.Column("signature_secret_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("encryption_secret_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("encryption_salt", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("organization_id"),
    )
    op.create_table(
        "webhook_event",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("fact_key", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column("event_type", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("next_attempt_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("delivered_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("fact_key"),
    )
    with op.batch_alter_table("webhook_event", schema=None) as batch_op:
        batch_op.create_index("ix_webhook_event_org_created", ["organization_id", "created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_webhook_event_request_id"), ["request_id"], unique=False)

    op.create_table(
        "webhook_attempt",
        sa.Column("event_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("scheduled_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("finished_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["webhook_event.id"],
        ),
        sa.PrimaryKeyConstraint("event_id", "number"),
    )


def downgrade() -> None:
    op.drop_table("webhook_attempt")
    with op.batch_alter_table("webhook_event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhook_event_request_id"))
        batch_op.drop_index("ix_webhook_event_org_created")

    op.drop_table("webhook_event")
    op.drop_table("webhook_config")
