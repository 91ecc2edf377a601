"""Alembic environment: the target metadata is the SQLModel tables of store.tables."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection
from sqlmodel import SQLModel

import store.tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from store.db import make_engine

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = make_engine(str(config.get_main_option("sqlalchemy.url")))
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            _foreign_keys(connection, on=False)
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=True, compare_type=True
        )
        with context.begin_transaction():
            context.run_migrations()
            if sqlite:
                _check_foreign_keys(connection)
        if sqlite:
            _foreign_keys(connection, on=True)
    engine.dispose()


def _foreign_keys(connection: Connection, *, on: bool) -> None:
    """SQLite's enforcement of foreign keys, set outside any transaction (inside one the pragma does
    nothing). A batch migration copies a table, drops the old one and renames the copy: with the
    enforcement on, dropping a table other rows refer to fails (SQLite's documented way to change a
    table turns it off meanwhile, then checks the keys)."""
    driver = connection.connection.driver_connection
    assert driver is not None  # a live connection
    driver.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")


def _check_foreign_keys(connection: Connection) -> None:
    """Every reference still holds once the migrations ran, before they are committed."""
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise RuntimeError(f"the migration left {len(broken)} broken references, e.g. {tuple(broken[0])}")


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
