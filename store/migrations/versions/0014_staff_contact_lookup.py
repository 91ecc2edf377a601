"""platform staff: members of no organization (the operators' area); subjects: a keyed hash of the
contact, so staff find a person's requests across organizations without a new clear copy of it

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("member") as batch:
        batch.alter_column(
            "organization_id", existing_type=sqlmodel.sql.sqltypes.AutoString(length=24), nullable=True
        )
    with op.batch_alter_table("subject") as batch:
        # filled for new subjects as they are created, for older ones when the API starts
        batch.add_column(
            sa.Column("contact_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )
        batch.create_index("ix_subject_contact_hash", ["contact_hash"])


def downgrade() -> None:
    with op.batch_alter_table("subject") as batch:
        batch.drop_index("ix_subject_contact_hash")
        batch.drop_column("contact_hash")
    op.execute(
        "DELETE FROM member_session WHERE member_id IN (SELECT id FROM member WHERE organization_id IS NULL)"
    )
    op.execute(
        "DELETE FROM member_token WHERE member_id IN (SELECT id FROM member WHERE organization_id IS NULL)"
    )
    op.execute("DELETE FROM member WHERE organization_id IS NULL")
    with op.batch_alter_table("member") as batch:
        batch.alter_column(
            "organization_id", existing_type=sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False
        )
