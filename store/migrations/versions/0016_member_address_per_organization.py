"""an address is a member of an organization once and has a password in one place at most, instead
of being unique across the installation: an invitation to an address that signs in to another
organization's dashboard is made like any other (issue 30, item 6; docs/adr/0003)

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# 0011 made member.email unique without naming the constraint: PostgreSQL named it
# member_email_key; SQLite keeps it nameless, so batch mode names it by this convention to drop it
NAMING = {"uq": "uq_%(table_name)s_%(column_0_name)s"}
WITH_PASSWORD = sa.text("password_hash IS NOT NULL")


def _old_unique() -> str:
    return "member_email_key" if op.get_bind().dialect.name == "postgresql" else "uq_member_email"


def upgrade() -> None:
    with op.batch_alter_table("member", naming_convention=NAMING) as batch:
        batch.drop_constraint(_old_unique(), type_="unique")
        batch.create_unique_constraint("uq_member_org_email", ["organization_id", "email"])
        batch.create_index("ix_member_email", ["email"], unique=False)
        batch.create_index(
            "uq_member_email_with_password",
            ["email"],
            unique=True,
            sqlite_where=WITH_PASSWORD,
            postgresql_where=WITH_PASSWORD,
        )


def downgrade() -> None:
    # refused while an address is a member twice (it was unique before)
    with op.batch_alter_table("member", naming_convention=NAMING) as batch:
        batch.drop_index("uq_member_email_with_password")
        batch.drop_index("ix_member_email")
        batch.drop_constraint("uq_member_org_email", type_="unique")
        batch.create_unique_constraint(_old_unique(), ["email"])
