"""What every ``mandatum`` command group shares: configuration, output and failure."""

from __future__ import annotations

import getpass
import json
from datetime import datetime
from typing import Annotated, NoReturn

import typer
from sqlalchemy import Engine, inspect

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings, get_settings
from services.context import Context
from store import audit
from store.db import keep_files_private, make_engine

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def context() -> tuple[Settings, Engine, SecretCipher]:
    try:
        settings = get_settings()
        cipher = SecretCipher(settings.master_key_bytes())
    except ValueError as exc:  # pydantic's ValidationError is one
        fail(f"invalid configuration: {exc}")
    keep_files_private(settings.var_dir)
    engine = make_engine(settings.sqlalchemy_url)
    if not inspect(engine).has_table("organization"):
        fail("the database has no schema yet: run `mandatum db upgrade` first")
    audit.use_service_key(engine, cipher, settings)
    return settings, engine, cipher


def services_context() -> Context:
    """The service layer's context for this command (no Temporal client until one is needed)."""
    settings, engine, cipher = context()
    return Context(settings, engine, cipher)


def operator() -> Actor:
    """Who a command is done by: ``operator:<the user running it>`` (``operator:unknown`` when the
    user name cannot be an actor id)."""
    try:
        return Actor.operator(getpass.getuser())
    except (ValueError, OSError, KeyError):
        return Actor.operator("unknown")


def emit(data: dict[str, object], as_json: bool, title: str) -> None:
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=_json_value))
        return
    typer.echo(title)
    width = max(len(k) for k in data)
    for k, v in data.items():
        typer.echo(f"  {k.ljust(width)}  {v}")


def _json_value(value: object) -> str:
    """Date-times in ISO 8601 (``2026-01-31T12:00:00+00:00``), like every other date printed."""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)
