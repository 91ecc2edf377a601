"""The Alembic migrations build exactly the schema the models declare, on every backend."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect
from sqlmodel import SQLModel

import store.tables  # noqa: F401  (registers the tables)
from store.db import alembic_config, make_engine, migrate


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
        assert {
            "organization",
            "api_key",
            "credential_request",
            "credential",
            "subject",
            "request_subject",
            "decision",
            "seen_signature",
            "idempotency_record",
            "signing_key",
            "action",
            "action_version",
            "status_list",
            "presentation",
            "verification",
            "audit_record",
            "audit_head",
            "alembic_version",
        } <= tables
        head = ScriptDirectory.from_config(alembic_config(url)).get_current_head()
        assert head is not None and int(head) >= 5  # the newest revision, whichever it is
        with eng.connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() == head
    finally:
        eng.dispose()


def test_signing_key_revision_downgrades_and_upgrades(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """0002 is reversible, and its partial unique index (one active key per owner) is created
    with its WHERE clause, which the models-vs-migrations diff does not compare."""
    url = f"sqlite:///{tmp_path / 'roundtrip.db'}"
    migrate(url)
    command.downgrade(alembic_config(url), "0001")
    eng = make_engine(url)
    try:
        assert "signing_key" not in inspect(eng).get_table_names()
        migrate(url)
        with eng.connect() as conn:
            ddl = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'uq_signing_key_one_active'"
            ).scalar()
        assert ddl is not None and "UNIQUE" in ddl and "WHERE status = 'active'" in ddl
    finally:
        eng.dispose()


def test_one_active_key_index_is_partial(engine: Engine) -> None:
    indexes = {i["name"]: i for i in inspect(engine).get_indexes("signing_key")}
    index = indexes["uq_signing_key_one_active"]
    assert index["unique"] and index["column_names"] == ["owner"]
    where = index.get("dialect_options", {}).get(f"{engine.dialect.name}_where")
    assert where is not None and "active" in str(where)


def test_action_revision_downgrades_and_upgrades(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """0003 is reversible, trigger included (the models-vs-migrations diff does not see triggers)."""
    url = f"sqlite:///{tmp_path / 'actions.db'}"
    migrate(url)
    command.downgrade(alembic_config(url), "0002")
    eng = make_engine(url)
    try:
        names = set(inspect(eng).get_table_names())
        assert "action" not in names and "action_version" not in names
        migrate(url)
        with eng.connect() as conn:
            ddl = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' "
                "AND name = 'action_version_published_immutable'"
            ).scalar()
        assert ddl is not None and "OLD.status = 'published'" in ddl
    finally:
        eng.dispose()


def test_published_action_versions_are_guarded_by_a_trigger(engine: Engine) -> None:
    if engine.dialect.name == "postgresql":
        query = (
            "SELECT count(*) FROM pg_trigger WHERE tgname = 'action_version_published_immutable' "
            "AND tgrelid = 'action_version'::regclass"
        )
    else:
        query = (
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
            "AND name = 'action_version_published_immutable'"
        )
    with engine.connect() as conn:
        assert conn.exec_driver_sql(query).scalar() == 1


def test_mandate_revision_downgrades_and_upgrades(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """0004 is reversible: its tables and the credential's issuance columns come and go."""
    url = f"sqlite:///{tmp_path / 'mandates.db'}"
    migrate(url)
    command.downgrade(alembic_config(url), "0003")
    eng = make_engine(url)
    try:
        names = set(inspect(eng).get_table_names())
        assert not {"status_list", "presentation", "verification"} & names
        assert "status_list_index" not in {c["name"] for c in inspect(eng).get_columns("credential")}
        migrate(url)
        eng.dispose()
        assert "status_list_index" in {c["name"] for c in inspect(eng).get_columns("credential")}
    finally:
        eng.dispose()


def test_login_throttle_and_member_address_revisions_downgrade_and_upgrade(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """0015 (the login throttle; the member row's count and lock go) and 0016 (an address unique
    per organization, and among members with a password, by a partial index) are reversible."""
    url = f"sqlite:///{tmp_path / 'members.db'}"
    migrate(url)
    command.downgrade(alembic_config(url), "0014")
    eng = make_engine(url)
    try:
        assert "login_throttle" not in inspect(eng).get_table_names()
        assert {"failed_logins", "locked_until"} <= {c["name"] for c in inspect(eng).get_columns("member")}
        migrate(url)
        with eng.connect() as conn:
            ddl = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'uq_member_email_with_password'"
            ).scalar()
        assert ddl is not None and "UNIQUE" in ddl and "WHERE password_hash IS NOT NULL" in ddl
        assert "failed_logins" not in {c["name"] for c in inspect(eng).get_columns("member")}
        assert [u["column_names"] for u in inspect(eng).get_unique_constraints("member")] == [
            ["organization_id", "email"]
        ]
    finally:
        eng.dispose()
