"""What an operator does to dashboard members from a shell (``mandatum member``, ``mandatum operator
reset-factor``; issue 30, item 7), acting for any organization: list an organization's members
with their roles, second factor and last login; turn a member's second factor off and end their
sessions (a lost phone and lost recovery codes); invite an owner (the owners are gone). Every
change takes a reason (``services.audit.checked_reason``), recorded with the operator in the
organization's trail (a log line for operators), and every function refuses any actor but
operators, in the dashboard or from a shell (``services.operators.require_operator``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.actors import Actor
from core.ids import is_object_id
from core.kinds import MemberRole
from services import members
from services.audit import checked_reason
from services.context import Context
from services.errors import Invalid, NotFound
from services.operators import require_operator
from store import member_sessions as sessions
from store import members as members_store
from store import orgs as orgs_store
from store import second_factor as factor_store
from store.db import utcnow
from store.tables import Member


@dataclass(frozen=True)
class Listed:
    member: Member
    last_login: datetime | None  # the last session opened, when one is known


def _organization(ctx: Context, org_id: str) -> str:
    if not is_object_id(org_id):
        raise Invalid("an organization id is 24 lowercase hexadecimal characters")
    try:
        orgs_store.get_organization(ctx.engine, org_id)
    except orgs_store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    return org_id


def list_members(ctx: Context, actor: Actor, org_id: str) -> list[Listed]:
    """The organization's members, oldest first, each with their last login when known."""
    require_operator(actor)
    _organization(ctx, org_id)
    last = sessions.last_logins(ctx.engine, org_id)
    return [Listed(m, last.get(m.id)) for m in members_store.members_of(ctx.engine, org_id)]


def reset_factor(ctx: Context, actor: Actor, org_id: str | None, member_id: str, reason: str) -> int:
    """Turn the member's second factor off and end every session of theirs (operators for
    ``org_id`` None), recorded as ``MEMBER_SECOND_FACTOR_OFF`` with the operator, the reason and
    the sessions ended; how many ended. They log in with their password and set a factor up again."""
    require_operator(actor)
    why = checked_reason(reason)
    if org_id is not None:
        _organization(ctx, org_id)
    if not is_object_id(member_id):
        raise Invalid("a member id is 24 lowercase hexadecimal characters")
    try:
        _, ended = factor_store.turn_off(
            ctx.engine, org_id, member_id, utcnow(), actor=str(actor), reason=why, end_sessions=True
        )
    except members_store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    return ended


def reset_operator_factor(ctx: Context, actor: Actor, email: str, reason: str) -> int:
    """``reset_factor`` of the operator with that e-mail address."""
    require_operator(actor)
    found = members_store.operator_by_email(ctx.engine, members.email_address(email))
    if found is None:
        raise NotFound(f"no operator {email.strip()[:320]}")
    return reset_factor(ctx, actor, None, found.id, reason)


def add_owner(ctx: Context, actor: Actor, org_id: str, email: str, reason: str) -> Member:
    """Invite an owner into the organization, the link sent by e-mail as every invitation is
    (``MEMBER_INVITED`` with the operator and the reason). As ``mandatum org create
    --owner-email``, an address that is a member anywhere is refused (docs/adr/0003).
    ``members.NotSent`` when the e-mail could not go: the owner is invited, an owner's members
    page sends it again."""
    require_operator(actor)
    why = checked_reason(reason)
    _organization(ctx, org_id)
    address = members.check_new_email(ctx, email)
    return members.invite_by_email(ctx, actor, org_id, address, MemberRole.OWNER, why)
