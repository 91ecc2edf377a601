"""``mandatum staff``: the platform's staff, the people running the installation who use the
operators' area of the dashboard across organizations (``services.staff``)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli.common import JsonOpt, ReasonOpt, command_context, emit, fail, operator, reason_of
from services.errors import ServiceError

staff_app = typer.Typer(help="Platform staff: the operators' area of the dashboard.", no_args_is_help=True)

EmailArg = Annotated[str, typer.Argument(help="The staff member's e-mail address.")]


@staff_app.command("create")
def staff_create(email: EmailArg, as_json: JsonOpt = False) -> None:
    """Add a staff member: prints a one-time link to set their password (then they log in at
    /dashboard/login and land in the operators' area)."""
    from services import staff  # with the password hasher: loaded only here

    ctx = command_context()
    try:
        invitation = staff.create(ctx, operator(), email)
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {
            "memberId": invitation.member.id,
            "email": invitation.member.email,
            "setPasswordLink": invitation.link,
        },
        as_json,
        "Staff member created. Hand them the link (it works once):",
    )


@staff_app.command("list")
def staff_list(as_json: JsonOpt = False) -> None:
    """Every staff member, oldest first."""
    from services import staff

    ctx = command_context()
    rows = [
        {
            "memberId": m.id,
            "email": m.email,
            "createdAt": m.created_at.isoformat(),
            "disabled": m.disabled_at is not None,
            "secondFactor": m.totp_enabled_at is not None,
        }
        for m in staff.list_staff(ctx, operator())
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no staff members: add one with `mandatum staff create EMAIL`")
    for r in rows:
        state = "disabled" if r["disabled"] else "enabled"
        typer.echo(f"{r['email']}  {r['memberId']}  {state}  since {r['createdAt']}")


def _set_disabled(email: str, disabled: bool, as_json: bool) -> None:
    from services import staff

    ctx = command_context()
    try:
        member = staff.set_disabled(ctx, operator(), email, disabled)
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {"memberId": member.id, "email": member.email, "disabled": member.disabled_at is not None},
        as_json,
        "Staff member disabled: their sessions ended." if disabled else "Staff member enabled.",
    )


@staff_app.command("disable")
def staff_disable(email: EmailArg, as_json: JsonOpt = False) -> None:
    """Disable a staff member: logged out at once, their unused links stop working."""
    _set_disabled(email, True, as_json)


@staff_app.command("enable")
def staff_enable(email: EmailArg, as_json: JsonOpt = False) -> None:
    """Enable a disabled staff member again."""
    _set_disabled(email, False, as_json)


@staff_app.command("reset-factor")
def staff_reset_factor(email: EmailArg, reason: ReasonOpt = None, as_json: JsonOpt = False) -> None:
    """Turn a staff member's second factor off and end their sessions (they lost their phone and
    their recovery codes): they set it up again after their password, before the operators' area
    opens. Logged with you and the reason (staff belong to no organization's trail)."""
    from services import member_admin

    why = reason_of(reason)
    try:
        ended = member_admin.reset_staff_factor(command_context(), operator(), email, why)
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {"email": email.strip().lower(), "secondFactor": False, "sessionsEnded": ended},
        as_json,
        "Second factor off and sessions ended: they set it up again after their password.",
    )
