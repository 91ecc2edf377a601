"""actions: actions and their numbered versions, published versions immutable

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 03:35:34.908243

Besides the tables, a trigger aborts any UPDATE of a published ``action_version`` row, so a
published version (whose digestSRI mandates pin) stays immutable whatever code touches the
database. SQLite and PostgreSQL spell triggers differently; both refuse with the same words.
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IMMUTABLE = "a published action version is immutable"
SQLITE_TRIGGER = f"""
CREATE TRIGGER action_version_published_immutable
BEFORE UPDATE ON action_version
FOR EACH ROW WHEN OLD.status = 'published'
BEGIN
    SELECT RAISE(ABORT, '{IMMUTABLE}');
END
"""
POSTGRES_FUNCTION = f"""
CREATE FUNCTION action_version_published_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '{IMMUTABLE}';
END
$$ LANGUAGE plpgsql
"""
POSTGRES_TRIGGER = """
CREATE TRIGGER action_version_published_immutable
BEFORE UPDATE ON action_version
FOR EACH ROW WHEN (OLD.status = 'published')
EXECUTE FUNCTION action_version_published_immutable()
"""


def upgrade() -> None:
    op.create_table(
        "action",
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("description", sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("organization_id", "id"),
    )
    op.create_table(
        "action_version",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("action_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("digest_sri", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("published_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id", "action_id"],
            ["action.organization_id", "action.id"],
            name="fk_action_version_action",
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "action_id", "number", name="uq_action_version_number"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(POSTGRES_FUNCTION)
        op.execute(POSTGRES_TRIGGER)
    else:
        op.execute(SQLITE_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS action_version_published_immutable ON action_version")
        op.execute("DROP FUNCTION IF EXISTS action_version_published_immutable()")
    else:
        op.execute("DROP TRIGGER IF EXISTS action_version_published_immutable")
    op.drop_table("action_version")
    op.drop_table("action")
