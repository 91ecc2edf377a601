"""What every ``mandatum`` command group shares: configuration, output and failure."""

from __future__ import annotations

import asyncio
import getpass
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, NoReturn, TypeVar

import typer
from sqlalchemy import Engine

from core.actors import Actor
from core.process import exit_now
from core.secretbox import SecretCipher
from core.settings import Settings, get_settings
from core.text import escaped
from services.audit import MAX_REASON, checked_reason
from services.context import Context
from services.errors import Invalid, ServiceError
from services.setup import has_table, open_engine, sign_audit_records

T = TypeVar("T")
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
ReasonOpt = Annotated[
    str | None,
    typer.Option(
        "--reason",
        help=f"Why (required; 1 to {MAX_REASON} characters, one line): recorded with the action "
        "in the organization's audit trail.",
    ),
]


def context() -> tuple[Settings, Engine, SecretCipher]:
    try:
        settings = get_settings()
        cipher = SecretCipher(settings.master_key_bytes())
    except ValueError as exc:  # pydantic's ValidationError is one
        fail(f"invalid configuration: {exc}")
    engine = open_engine(settings)
    if not has_table(engine, "organization"):
        fail("the database has no schema yet: run `mandatum db upgrade` first")
    sign_audit_records(engine, cipher, settings)
    return settings, engine, cipher


def command_context() -> Context:
    """The service layer's context for this command (no Temporal client until one is needed)."""
    settings, engine, cipher = context()
    return Context(settings, engine, cipher)


def operator() -> Actor:
    """Who a command is done by: ``operator:<the user running it>`` (``operator:unknown`` when the
    user name cannot be an actor id)."""
    try:
        return Actor.shell_operator(getpass.getuser())
    except (ValueError, OSError, KeyError):
        return Actor.shell_operator("unknown")


def emit(data: dict[str, object], as_json: bool, title: str) -> None:
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=_json_value))
        return
    typer.echo(title)
    width = max(len(k) for k in data)
    for k, v in data.items():
        echo(f"  {k.ljust(width)}  {v}")


def echo(line: str) -> None:
    """A line of text output holding stored text (names, reasons, URLs): its control, line
    separator and bidi characters shown as ``\\uXXXX`` (``core.text``), so none can move the
    terminal's cursor, break the line or reorder it. ``--json`` output is ASCII-escaped JSON."""
    typer.echo(escaped(line))


def _json_value(value: object) -> str:
    """Date-times in ISO 8601 (``2026-01-31T12:00:00+00:00``), like every other date printed."""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def reason_of(raw: str | None) -> str:
    """The ``--reason`` a state-changing command requires, checked before anything else is done."""
    if raw is None:
        fail(f"--reason is required: say why in 1 to {MAX_REASON} characters (it goes in the audit trail)")
    try:
        return checked_reason(raw)
    except Invalid as exc:
        fail(f"--reason: {exc}")


def finish(code: int = 0) -> NoReturn:
    """End the process at once, output flushed, without finalization (``core.process``)."""
    exit_now(code)


def with_temporal(ctx: Context, work: Callable[[Context], Awaitable[T]], doing: str) -> T:
    """``work`` with ``ctx`` and a Temporal client made as the API's (``build_client``: the
    Settings' MANDATUM_TEMPORAL_ADDRESS and namespace), connected before ``work`` starts so that
    an unreachable Temporal changes nothing. A refusal or Temporal not answering is one line on
    stderr and exit 1. The caller ends with ``finish()`` (a client was made)."""
    # imported here: the Temporal client is heavy to load, and only these commands need it
    from orchestration.temporal import build_client, temporal_unavailable

    async def run() -> T:
        ctx.temporal = await build_client(ctx.settings)
        return await work(ctx)

    try:
        return asyncio.run(run())
    except ServiceError as exc:
        typer.echo(f"error: {exc}", err=True)
    except Exception as exc:
        if not temporal_unavailable(exc):
            raise
        typer.echo(
            f"error: cannot {doing}: Temporal at {ctx.settings.temporal_address} does not answer "
            "(is it running? MANDATUM_TEMPORAL_ADDRESS names it)",
            err=True,
        )
    finish(1)
