"""The Alembic migrations build exactly the schema the models declare, on every backend."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect
from sqlmodel import SQLModel

import store.tables  # noqa: F401  (registers the tables)
from store.db import make_engine, migrate


def test_migrated_schema_matches_models(engine: Engine) -> None:
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(ctx, SQLModel.metadata)
    assert diff == [], f"models and migrations disagree: {diff}"


def test_migrate_is_idempotent_and_versioned(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    migrate(url)
    migrate(url)  # a second run changes nothing and does not fail
    eng = make_engine(url)
    try:
        tables = set(inspect(eng).get_table_names())
        assert {"organization", "api_key", "credential_request", "credential", "subject",
                "request_subject", "decision", "seen_signature", "idempotency_record",
                "alembic_version"} <= tables
        with eng.connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() == "0001"
    finally:
        eng.dispose()
