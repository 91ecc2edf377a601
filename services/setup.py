"""A process's start: its files kept private, the database opened (and its schema brought up to
date), the audit trail signed with the service's key, and the service context made. The API's
``create_app``, every ``mandatum`` command and ``make run`` start here, so none of them reaches the
store itself (``store.db``, ``store.audit``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Engine, inspect

from core.secretbox import SecretCipher
from core.settings import Settings
from services.context import Context
from store import audit
from store.db import keep_files_private as keep_files_private  # the process's files: 0600, var/ 0700
from store.db import make_engine
from store.db import migrate as migrate  # every pending schema migration (idempotent)
from store.db import restrict as restrict  # group and other access off a file of ours made before

if TYPE_CHECKING:  # the client is loaded by the processes that connect, not by every command
    from temporalio.client import Client


def engine_of(settings: Settings) -> Engine:
    """The database engine of ``settings`` (``MANDATUM_DATABASE_URL``)."""
    return make_engine(settings.sqlalchemy_url)


def open_engine(settings: Settings) -> Engine:
    """The database engine, after making this process's files private (``keep_files_private``
    with ``var_dir``): the start of every process that reads the database."""
    keep_files_private(settings.var_dir)
    return engine_of(settings)


def has_table(engine: Engine, name: str) -> bool:
    """Whether the database has the table ``name`` (its schema is not made, or not up to date,
    without it)."""
    return inspect(engine).has_table(name)


def sign_audit_records(engine: Engine, cipher: SecretCipher, settings: Settings) -> None:
    """The audit records written through ``engine`` are signed with the service's active key."""
    audit.use_service_key(engine, cipher, settings)


def open_context(settings: Settings, temporal: Client | None = None) -> Context:
    """The service context of a process serving requests (the API): the files private, the
    engine, the cipher of the master key, the audit trail signed with the service's key."""
    engine = open_engine(settings)
    ctx = Context(
        settings=settings,
        engine=engine,
        cipher=SecretCipher(settings.master_key_bytes()),
        temporal=temporal,
    )
    sign_audit_records(engine, ctx.cipher, settings)
    return ctx
