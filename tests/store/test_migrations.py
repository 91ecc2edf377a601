"""The Alembic migrations build exactly the schema the models declare, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, MetaData, Table, inspect
from sqlmodel import SQLModel

import store.tables  # noqa: F401  (registers the tables)
from store.db import alembic_config, make_engine, migrate
from tests.support.databases import fresh_database


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


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_second_factor_revision_keeps_a_waiting_secret_both_ways(backend: str, tmp_path: Path) -> None:
    """0017 (recovery codes, a new secret kept apart until its first code, an organization's
    requirement) moves a secret still waiting for its first code to its own column, and back."""
    with fresh_database(backend, tmp_path) as url:
        migrate(url)
        command.downgrade(alembic_config(url), "0016")
        eng = make_engine(url)
        try:
            now = datetime.now(UTC)
            with eng.begin() as conn:
                org, member, session = (
                    Table(n, MetaData(), autoload_with=conn)
                    for n in ("organization", "member", "member_session")
                )
                conn.execute(
                    org.insert().values(
                        id="a" * 24,
                        name="Org",
                        created_at=now,
                        request_rate_per_minute=60,
                        presentation_minutes=5,
                    )
                )
                conn.execute(
                    member.insert(),
                    [
                        {
                            "id": "b" * 24,
                            "organization_id": "a" * 24,
                            "email": "wait@example.com",
                            "role": "owner",
                            "created_at": now,
                            "totp_secret_ciphertext": b"waiting",
                            "totp_enabled_at": None,
                        },
                        {
                            "id": "c" * 24,
                            "organization_id": "a" * 24,
                            "email": "on@example.com",
                            "role": "owner",
                            "created_at": now,
                            "totp_secret_ciphertext": b"in use",
                            "totp_enabled_at": now,
                        },
                    ],
                )
                # rows that reference both tables: a copy of either (a batch migration) would fail
                conn.execute(
                    session.insert().values(
                        token_hash="d" * 64,
                        member_id="c" * 24,
                        created_at=now,
                        last_seen_at=now,
                        expires_at=now,
                        awaiting_code=False,
                    )
                )
            migrate(url)
            eng.dispose()
            read = "SELECT id, totp_secret_ciphertext, totp_pending_ciphertext FROM member ORDER BY id"
            with eng.connect() as conn:
                rows = [
                    (r[0][0], r[1] and bytes(r[1]), r[2] and bytes(r[2])) for r in conn.exec_driver_sql(read)
                ]
                required = conn.exec_driver_sql("SELECT require_second_factor FROM organization").scalar()
            assert (
                rows == [("b", None, b"waiting"), ("c", b"in use", None)] and not required
            )  # 0 on SQLite, false on PostgreSQL
            assert "member_recovery_code" in inspect(eng).get_table_names()
            command.downgrade(alembic_config(url), "0016")
            eng.dispose()
            with eng.connect() as conn:
                back = [
                    (r[0][0], bytes(r[1]))
                    for r in conn.exec_driver_sql("SELECT id, totp_secret_ciphertext FROM member ORDER BY id")
                ]
            assert back == [("b", b"waiting"), ("c", b"in use")]
            assert "member_recovery_code" not in inspect(eng).get_table_names()
        finally:
            eng.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_every_revision_upgrades_a_database_in_use(backend: str, tmp_path: Path) -> None:
    """From 0014, with an organization, a member and their session in it,
    to the newest revision and back to 0014: on SQLite a batch revision copies a table that other
    rows refer to (0016 failed with "FOREIGN KEY constraint failed" on any installation with a
    dashboard session); the rows are all still there and still refer to each other."""
    with fresh_database(backend, tmp_path) as url:
        command.upgrade(alembic_config(url), "0014")
        eng = make_engine(url)
        now = datetime.now(UTC)
        try:
            with eng.begin() as conn:
                org, member, session = (
                    Table(n, MetaData(), autoload_with=conn)
                    for n in ("organization", "member", "member_session")
                )
                conn.execute(
                    org.insert().values(
                        id="a" * 24,
                        name="O",
                        created_at=now,
                        request_rate_per_minute=60,
                        presentation_minutes=5,
                    )
                )
                conn.execute(
                    member.insert().values(
                        id="c" * 24,
                        organization_id="a" * 24,
                        email="x@example.com",
                        role="owner",
                        created_at=now,
                        failed_logins=0,
                    )
                )
                conn.execute(
                    session.insert().values(
                        token_hash="d" * 64,
                        member_id="c" * 24,
                        created_at=now,
                        last_seen_at=now,
                        expires_at=now,
                        awaiting_code=False,
                    )
                )
            migrate(url)
            command.downgrade(alembic_config(url), "0014")
            migrate(url)
            with eng.connect() as conn:
                rows = conn.exec_driver_sql(
                    "SELECT m.email, s.token_hash FROM member_session s JOIN member m ON m.id = s.member_id"
                ).all()
            assert [tuple(r) for r in rows] == [("x@example.com", "d" * 64)]
        finally:
            eng.dispose()
