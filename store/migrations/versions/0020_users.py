"""users (POST /user, issue 36): the organization's reference of a subject, what it imported about
them (identity and extra contacts, encrypted), and the document id a request expects of a
subject's identity check (its keyed hash)

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (nullable, no default) and CREATE INDEX: no table copy on either database
    op.add_column(
        "subject", sa.Column("internal_id", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True)
    )
    op.create_index("uq_subject_org_internal_id", "subject", ["organization_id", "internal_id"], unique=True)
    op.add_column(
        "request_subject",
        sa.Column("doc_id_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    )
    op.create_table(
        "subject_profile",
        sa.Column("subject_id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("identity_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("extra_contacts_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organization.id"]),
        sa.ForeignKeyConstraint(["subject_id"], ["subject.id"]),
        sa.PrimaryKeyConstraint("subject_id"),
    )
    op.create_index(
        op.f("ix_subject_profile_organization_id"), "subject_profile", ["organization_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_subject_profile_organization_id"), table_name="subject_profile")
    op.drop_table("subject_profile")
    op.drop_column("request_subject", "doc_id_hash")  # SQLite 3.35+: ALTER TABLE DROP COLUMN
    op.drop_index("uq_subject_org_internal_id", table_name="subject")
    op.drop_column("subject", "internal_id")
