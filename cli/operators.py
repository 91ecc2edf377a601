"""``mandatum operator``: the operators, the platform's own people who run the installation and use the
operators' area of the dashboard across organizations (``services.operators``). The command's first
name, ``mandatum staff``, still works and is not listed."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli.common import JsonOpt, ReasonOpt, command_context, emit, fail, operator, reason_of
from services.errors import ServiceError

operator_app = typer.Typer(
    help="Operators: the platform's own people, who use the operators' area of the dashboard.",
    no_args_is_help=True,
)

EmailArg = Annotated[str, typer.Argument(help="The operator's e-mail address.")]


@operator_app.command("create")
def operator_create(email: EmailArg, as_json: JsonOpt = False) -> None:
    """Add an operator: prints a one-time link to set their password (then they log in at
    /dashboard/login and land in the operators' area)."""
    from services import operators  # with the password hasher: loaded only here

    ctx = command_context()
    try:
        invitation = operators.create(ctx, operator(), email)
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {
            "memberId": invitation.member.id,
            "email": invitation.member.email,
            "setPasswordLink": invitation.link,
        },
        as_json,
        "Operator created. Hand them the link (it works once):",
    )


@operator_app.command("list")
def operator_list(as_json: JsonOpt = False) -> None:
    """Every operator, oldest first."""
    from services import operators

    ctx = command_context()
    rows = [
        {
            "memberId": m.id,
            "email": m.email,
            "createdAt": m.created_at.isoformat(),
            "disabled": m.disabled_at is not None,
            "secondFactor": m.totp_enabled_at is not None,
        }
        for m in operators.list_operators(ctx, operator())
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no operators: add one with `mandatum operator create EMAIL`")
    for r in rows:
        state = "disabled" if r["disabled"] else "enabled"
        typer.echo(f"{r['email']}  {r['memberId']}  {state}  since {r['createdAt']}")


def _set_disabled(email: str, disabled: bool, as_json: bool) -> None:
    from services import operators

    ctx = command_context()
    try:
        member = operators.set_disabled(ctx, operator(), email, disabled)
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {"memberId": member.id, "email": member.email, "disabled": member.disabled_at is not None},
        as_json,
        "Operator disabled: their sessions ended." if disabled else "Operator enabled.",
    )


@operator_app.command("disable")
def operator_disable(email: EmailArg, as_json: JsonOpt = False) -> None:
    """Disable an operator: logged out at once, their unused links stop working."""
    _set_disabled(email, True, as_json)


@operator_app.command("enable")
def operator_enable(email: EmailArg, as_json: JsonOpt = False) -> None:
    """Enable a disabled operator again."""
    _set_disabled(email, False, as_json)


@operator_app.command("reset-factor")
def operator_reset_factor(email: EmailArg, reason: ReasonOpt = None, as_json: JsonOpt = False) -> None:
    """Turn an operator's second factor off and end their sessions (they lost their phone and
    their recovery codes): they set it up again after their password, before the operators' area
    opens. Logged with you and the reason (operators belong to no organization's trail)."""
    from services import member_admin

    why = reason_of(reason)
    try:
        ended = member_admin.reset_operator_factor(command_context(), operator(), email, why)
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {"email": email.strip().lower(), "secondFactor": False, "sessionsEnded": ended},
        as_json,
        "Second factor off and sessions ended: they set it up again after their password.",
    )
