"""``mandatum member``: an organization's dashboard members from a shell (issue 30, item 7): list
them, and, with a required ``--reason`` recorded in the organization's audit trail with you as
the operator, turn a member's second factor off (ending their sessions) or invite an owner
(``services.member_admin``). Every argument is checked before anything is done."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli.common import JsonOpt, ReasonOpt, command_context, echo, emit, fail, operator, reason_of
from core.ids import is_object_id
from services.errors import ServiceError

member_app = typer.Typer(help="An organization's dashboard members.", no_args_is_help=True)

OrgOpt = Annotated[str, typer.Option("--org", help="Organization id (24 hexadecimal characters).")]
MemberOpt = Annotated[str, typer.Option("--member", help="Member id (24 hexadecimal characters).")]
EmailOpt = Annotated[str, typer.Option("--email", help="The new owner's e-mail address.")]


def _object_id(option: str, value: str) -> str:
    """``value`` when it is an id as the service makes them (24 lowercase hexadecimal characters)."""
    if not is_object_id(value):
        fail(f"{option}: an id is 24 lowercase hexadecimal characters")
    return value


@member_app.command("list")
def member_list(org: OrgOpt, as_json: JsonOpt = False) -> None:
    """The organization's members: role, status, second factor on or off, last login when known."""
    from services import member_admin  # with the password hasher: loaded only here

    org_id = _object_id("--org", org)
    try:
        listed = member_admin.list_members(command_context(), operator(), org_id)
    except ServiceError as exc:
        fail(str(exc))
    rows = [
        {
            "memberId": item.member.id,
            "email": item.member.email,
            "role": item.member.role,
            "status": _status(item.member.disabled_at is not None, item.member.password_hash is not None),
            "secondFactor": item.member.totp_enabled_at is not None,
            "lastLoginAt": item.last_login.isoformat() if item.last_login else None,
        }
        for item in listed
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        factor = "factor on" if r["secondFactor"] else "factor off"
        last = r["lastLoginAt"] or "-"
        echo(f"{r['memberId']}  {r['email']}  {r['role']}  {r['status']}  {factor}  last login {last}")


def _status(disabled: bool, has_password: bool) -> str:
    return "disabled" if disabled else ("active" if has_password else "invited")


@member_app.command("reset-factor")
def member_reset_factor(
    org: OrgOpt, member: MemberOpt, reason: ReasonOpt = None, as_json: JsonOpt = False
) -> None:
    """Turn a member's second factor off and end their sessions (they lost their phone and their
    recovery codes): they log in with their password and set it up again. MEMBER_SECOND_FACTOR_OFF
    names you, with the reason."""
    from services import member_admin

    org_id, member_id, why = _object_id("--org", org), _object_id("--member", member), reason_of(reason)
    try:
        ended = member_admin.reset_factor(command_context(), operator(), org_id, member_id, why)
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {"memberId": member_id, "secondFactor": False, "sessionsEnded": ended},
        as_json,
        "Second factor off and sessions ended. The member sets it up again after their password.",
    )


@member_app.command("add-owner")
def member_add_owner(
    org: OrgOpt, email: EmailOpt, reason: ReasonOpt = None, as_json: JsonOpt = False
) -> None:
    """Invite an owner: the one-time link goes by e-mail, as every invitation does (never printed).
    An address that is a member anywhere is refused. MEMBER_INVITED names you, with the reason."""
    from services import member_admin, members

    org_id, why, ctx = _object_id("--org", org), reason_of(reason), command_context()
    try:
        members.check_new_email(ctx, email)
    except ServiceError as exc:
        fail(f"--email: {exc}")
    try:
        invited = member_admin.add_owner(ctx, operator(), org_id, email, why)
    except ServiceError as exc:
        fail(str(exc))
    except members.NotSent as exc:
        fail(f"the owner is invited, but {exc}")
    emit(
        {"memberId": invited.id, "email": invited.email, "role": invited.role},
        as_json,
        "Owner invited: the link to choose a password is on its way to them by e-mail.",
    )
