"""an organization has several webhook endpoints, each with its URL, secrets and filters; each event
belongs to one endpoint (issue 34)

The organization's one webhook becomes its first endpoint, with a new id, and its events so far
belong to it. Downgrading keeps each organization's oldest endpoint as its webhook.

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-28 05:10:00.000000
"""

import secrets
import time
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# how the rows are copied: JSON stays JSON on PostgreSQL only when the column says so
TYPED = {"event_types": sa.JSON()}
SETTINGS = (
    "url",
    "signature_secret_ciphertext",
    "encryption_secret_ciphertext",
    "encryption_salt",
    "updated_at",
    "previous_signature_secret_ciphertext",
    "previous_until",
    "enabled",
    "event_types",
)


def _secret_columns() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("url", sqlmodel.sql.sqltypes.AutoString(length=2048), nullable=False),
        sa.Column("signature_secret_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("encryption_secret_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("encryption_salt", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("previous_signature_secret_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("previous_until", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("event_types", sa.JSON(), nullable=True),
    ]


def _object_id() -> str:
    """An id shaped as the application's (``core.ids.new_object_id``): seconds, then random."""
    return f"{int(time.time()):08x}{secrets.token_hex(8)}"


def upgrade() -> None:
    op.create_table(
        "webhook_endpoint",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("description", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        *_secret_columns(),
        sa.ForeignKeyConstraint(["organization_id"], ["organization.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("webhook_endpoint") as batch:
        batch.create_index(batch.f("ix_webhook_endpoint_organization_id"), ["organization_id"], unique=False)
    with op.batch_alter_table("webhook_event") as batch:
        batch.add_column(sa.Column("endpoint_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=True))
        batch.create_index(batch.f("ix_webhook_event_endpoint_id"), ["endpoint_id"], unique=False)
    bind = op.get_bind()
    old = sa.table(
        "webhook_config", sa.column("organization_id"), *(sa.column(c, TYPED.get(c)) for c in SETTINGS)
    )
    new = sa.table("webhook_endpoint", sa.column("id"), sa.column("organization_id"), sa.column("created_at"),
                   *(sa.column(c, TYPED.get(c)) for c in SETTINGS))  # fmt: skip
    event = sa.table("webhook_event", sa.column("organization_id"), sa.column("endpoint_id"))
    for row in bind.execute(sa.select(old)).mappings().all():
        endpoint_id = _object_id()
        values = {c: row[c] for c in SETTINGS}
        bind.execute(
            new.insert().values(
                id=endpoint_id, organization_id=row["organization_id"], created_at=row["updated_at"], **values
            )
        )
        bind.execute(
            event.update()
            .where(event.c.organization_id == row["organization_id"])
            .values(endpoint_id=endpoint_id)
        )
    op.drop_table("webhook_config")


def downgrade() -> None:
    op.create_table(
        "webhook_config",
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        *_secret_columns(),
        sa.ForeignKeyConstraint(["organization_id"], ["organization.id"]),
        sa.PrimaryKeyConstraint("organization_id"),
    )
    bind = op.get_bind()
    old = sa.table(
        "webhook_config", sa.column("organization_id"), *(sa.column(c, TYPED.get(c)) for c in SETTINGS)
    )
    new = sa.table("webhook_endpoint", sa.column("id"), sa.column("organization_id"), sa.column("created_at"),
                   *(sa.column(c, TYPED.get(c)) for c in SETTINGS))  # fmt: skip
    kept: set[str] = set()
    for row in bind.execute(sa.select(new).order_by(new.c.created_at, new.c.id)).mappings().all():
        if row["organization_id"] in kept:
            continue
        kept.add(row["organization_id"])
        bind.execute(
            old.insert().values(organization_id=row["organization_id"], **{c: row[c] for c in SETTINGS})
        )
    with op.batch_alter_table("webhook_event") as batch:
        batch.drop_index(batch.f("ix_webhook_event_endpoint_id"))
        batch.drop_column("endpoint_id")
    with op.batch_alter_table("webhook_endpoint") as batch:
        batch.drop_index(batch.f("ix_webhook_endpoint_organization_id"))
    op.drop_table("webhook_endpoint")
