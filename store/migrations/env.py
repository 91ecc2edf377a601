"""Alembic environment: the target metadata is the SQLModel tables of store.tables."""

from __future__ import annotations

from alembic import context
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
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=True, compare_type=True
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
