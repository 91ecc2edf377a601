"""mandates: issuance, status lists, presentations, verifications

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 22:13:02.844545

Issued credentials keep their document form, status list entry and revocation on the credential
row; a status list entry is unique. Presentations are kept for single use (``used_at``), and each
verification with its receipt.
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "status_list",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("purpose", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("length", sa.Integer(), nullable=False),
        sa.Column("allocated", sa.Integer(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "verification",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("presentation_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("mandate_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("decision", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("reason", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("evaluations", sa.JSON(), nullable=False),
        sa.Column("execution_params", sa.JSON(), nullable=True),
        sa.Column("receipt", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("verification", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_verification_mandate_id"), ["mandate_id"], unique=False)
        batch_op.create_index("ix_verification_org_created", ["organization_id", "created_at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_verification_presentation_id"), ["presentation_id"], unique=False
        )

    op.create_table(
        "presentation",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("credential_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("challenge", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("domain", sqlmodel.sql.sqltypes.AutoString(length=2048), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("receipt", sa.JSON(), nullable=False),
        sa.Column("used_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("used_by", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=True),
        sa.ForeignKeyConstraint(
            ["credential_id"],
            ["credential.id"],
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("presentation", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_presentation_credential_id"), ["credential_id"], unique=False)

    with op.batch_alter_table("credential", schema=None) as batch_op:
        batch_op.add_column(sa.Column("document_credential", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("issued_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(
            sa.Column("status_list_id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=True)
        )
        batch_op.add_column(sa.Column("status_list_index", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(
            sa.Column("revocation_reason", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True)
        )
        batch_op.add_column(sa.Column("revocation_receipt", sa.JSON(), nullable=True))
        batch_op.create_unique_constraint(
            "uq_credential_status_entry", ["status_list_id", "status_list_index"]
        )

    with op.batch_alter_table("organization", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("presentation_minutes", sa.Integer(), nullable=False, server_default="5")
        )


def downgrade() -> None:
    with op.batch_alter_table("organization", schema=None) as batch_op:
        batch_op.drop_column("presentation_minutes")

    with op.batch_alter_table("credential", schema=None) as batch_op:
        batch_op.drop_constraint("uq_credential_status_entry", type_="unique")
        batch_op.drop_column("revocation_receipt")
        batch_op.drop_column("revocation_reason")
        batch_op.drop_column("revoked_at")
        batch_op.drop_column("status_list_index")
        batch_op.drop_column("status_list_id")
        batch_op.drop_column("issued_at")
        batch_op.drop_column("document_credential")

    with op.batch_alter_table("presentation", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_presentation_credential_id"))

    op.drop_table("presentation")
    with op.batch_alter_table("verification", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_verification_presentation_id"))
        batch_op.drop_index("ix_verification_org_created")
        batch_op.drop_index(batch_op.f("ix_verification_mandate_id"))

    op.drop_table("verification")
    op.drop_table("status_list")
