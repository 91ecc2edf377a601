"""audit trail: signed, hash-chained records per organization and the end of each chain

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 04:10:00.000000

Triggers make the records append-only in the database itself: an UPDATE or DELETE of a record
aborts, on SQLite and PostgreSQL alike. (Someone who can drop the triggers can still edit rows;
the hash chain and the signatures are what reveal it: ``mandatum audit verify``.)
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

APPEND_ONLY = "audit records are append-only"
# one trigger per statement kind and dialect: an UPDATE or DELETE of a record aborts
SQLITE_TRIGGERS = [
    f"""
CREATE TRIGGER audit_record_no_{kind.lower()}
BEFORE {kind} ON audit_record
BEGIN
    SELECT RAISE(ABORT, '{APPEND_ONLY}');
END
"""
    for kind in ("UPDATE", "DELETE")
]
POSTGRES_FUNCTION = f"""
CREATE FUNCTION audit_record_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '{APPEND_ONLY}';
END
$$ LANGUAGE plpgsql
"""
POSTGRES_TRIGGER = """
CREATE TRIGGER audit_record_append_only
BEFORE UPDATE OR DELETE ON audit_record
FOR EACH ROW EXECUTE FUNCTION audit_record_append_only()
"""

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_record",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("type", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=True),
        sa.Column("credential_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("actor", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("prev_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("proof", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "seq", name="uq_audit_record_org_seq"),
    )
    with op.batch_alter_table("audit_record", schema=None) as batch_op:
        batch_op.create_index("ix_audit_record_org_created", ["organization_id", "created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_record_request_id"), ["request_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_record_credential_id"), ["credential_id"], unique=False)

    if op.get_bind().dialect.name == "postgresql":
        op.execute(POSTGRES_FUNCTION)
        op.execute(POSTGRES_TRIGGER)
    else:
        for trigger in SQLITE_TRIGGERS:
            op.execute(trigger)

    op.create_table(
        "audit_head",
        sa.Column("organization_id", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("organization_id"),
    )


def downgrade() -> None:
    op.drop_table("audit_head")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS audit_record_append_only ON audit_record")
        op.execute("DROP FUNCTION IF EXISTS audit_record_append_only()")
    else:
        op.execute("DROP TRIGGER IF EXISTS audit_record_no_update")
        op.execute("DROP TRIGGER IF EXISTS audit_record_no_delete")
    with op.batch_alter_table("audit_record", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_record_credential_id"))
        batch_op.drop_index(batch_op.f("ix_audit_record_request_id"))
        batch_op.drop_index("ix_audit_record_org_created")

    op.drop_table("audit_record")
