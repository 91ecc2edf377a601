"""The organization's members (owners; issue 14, item 2) and each member's own account.

- ``/dashboard/members`` (owners): invite by e-mail (the link goes out through the delivery path of
  the subjects' codes, never shown on the page), send an invitation again, change a role, disable
  or enable a member, end their sessions; turning off a member's second factor (a lost phone) is
  ``second_factor``'s page, which asks for the owner's password and factor.
- ``/dashboard/account`` (every member): the second factor's state (its changes are
  ``second_factor``'s page), the member's open sessions and "end every other session".

Every change goes through ``services.members`` (a member's sessions: ``services.member_sessions``)
with the member as actor, so the audit trail says who; ids in paths are checked against the
ObjectId form before anything reads them, and a member of another organization is "not found" like
a made-up id.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import ANYONE, form_by, not_found, org_of, show, signed_in, when
from core.kinds import MemberRole
from services import member_sessions, members, second_factor
from services.context import Context, run_blocking
from services.errors import Conflict, Invalid, NotFound, TooMany
from store.tables import Member

router = APIRouter()
OWNERS = (MemberRole.OWNER,)
MEMBER_ID_RE = re.compile(r"[0-9a-f]{24}")
ROLES = [r.value for r in MemberRole]

NOTICES = {
    "invited": "The invitation is on its way.",
    "sent": "A fresh invitation is on its way.",
    "role": "The role is changed.",
    "disabled": "The member is disabled and logged out everywhere.",
    "enabled": "The member is enabled again.",
    "ended": "The member's sessions are ended.",
    "factor-off": "The member's second factor is off.",
}
ACCOUNT_NOTICES = {"ended": "Every other session of yours is ended."}


def _status(m: Member) -> str:
    if m.disabled_at is not None:
        return "disabled"
    return "active" if m.password_hash is not None else "invited"


def _row(m: Member, sessions: int) -> dict[str, Any]:
    return {
        "id": m.id,
        "email": m.email,
        "role": m.role,
        "status": _status(m),
        "since": when(m.created_at),
        "factor": "on" if m.totp_enabled_at is not None else "off",
        "sessions": sessions,
    }


async def _members_page(
    ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any
) -> Response:
    rows = [_row(m, n) for m, n in await run_blocking(ctx, members.list_members, ctx, org_of(member))]
    return await show(
        ctx,
        member,
        token,
        "dashboard/members.html",
        "members",
        status=status,
        title="Members · Mandatum",
        rows=rows,
        roles=ROLES,
        **extra,
    )


@router.get("/dashboard/members", response_class=HTMLResponse)
async def members_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, OWNERS)
    if isinstance(found, Response):
        return found
    member, token = found
    return await _members_page(ctx, member, token, notice=NOTICES.get(notice or ""))


@router.post("/dashboard/members", response_class=HTMLResponse)
async def invite(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    email: Annotated[str, Form(max_length=320)] = "",
    role: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, OWNERS)
    if isinstance(found, Response):
        return found
    member, token = found
    if role not in ROLES:
        return await _members_page(
            ctx, member, token, status=400, error=f"A role is one of {', '.join(ROLES)}.", form=email
        )
    try:
        await run_blocking(
            ctx,
            members.invite_by_email,
            ctx,
            members.actor_of(member),
            org_of(member),
            email,
            MemberRole(role),
        )
    except (Invalid, Conflict) as exc:
        return await _members_page(ctx, member, token, status=400, error=_sentence(exc), form=email)
    except members.NotSent as exc:  # the member is added: the list offers to send it again
        return await _members_page(ctx, member, token, status=502, error=_sentence(exc))
    return RedirectResponse("/dashboard/members?notice=invited", status_code=303)


def _sentence(exc: Exception) -> str:
    text = str(exc)
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


CHANGES = ("invite", "role", "disable", "enable", "sessions")


@router.post("/dashboard/members/{member_id}/{change}", response_class=HTMLResponse)
async def change_member(
    request: Request,
    ctx: ContextDep,
    member_id: str,
    change: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    role: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    if change not in CHANGES or not MEMBER_ID_RE.fullmatch(member_id):
        return not_found()
    found = await form_by(request, ctx, csrf, OWNERS)
    if isinstance(found, Response):
        return found
    member, token = found
    actor, org_id = members.actor_of(member), org_of(member)

    def apply() -> str:
        if change == "invite":
            members.send_invitation(ctx, actor, org_id, member_id)
            return "sent"
        if change == "role":
            members.change_role(ctx, actor, org_id, member_id, role)
            return "role"
        if change in ("disable", "enable"):
            members.set_disabled(ctx, actor, org_id, member_id, change == "disable")
            return f"{change}d"
        member_sessions.end_sessions(ctx, actor, org_id, member_id)
        return "ended"

    try:
        notice = await run_blocking(ctx, apply)
    except NotFound:
        return not_found("No such member in your organization.")
    except TooMany as exc:
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return await _members_page(ctx, member, token, status=429, error=_sentence(exc), headers=headers)
    except (Invalid, Conflict) as exc:
        return await _members_page(ctx, member, token, status=409, error=_sentence(exc))
    except members.NotSent as exc:
        return await _members_page(ctx, member, token, status=502, error=_sentence(exc))
    if change in ("role", "disable", "sessions") and member_id == member.id:
        # an owner who changed their own role, or ended their own sessions, may have no page left
        return RedirectResponse("/dashboard", status_code=303)
    return RedirectResponse(f"/dashboard/members?notice={notice}", status_code=303)


# --- the member's own account ---------------------------------------------------------------------


async def _account_page(
    ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any
) -> Response:
    def read() -> tuple[Member, list[dict[str, Any]], int]:
        fresh = members.member_in(ctx, member.organization_id, member.id)
        sessions = [
            {
                "started": when(s.created_at),
                "seen": when(s.last_seen_at),
                "this": member_sessions.is_session(s, token),
            }
            for s in member_sessions.sessions_of(ctx, fresh)
        ]
        return fresh, sessions, second_factor.codes_left(ctx, fresh)

    fresh, sessions, left = await run_blocking(ctx, read)
    return await show(
        ctx,
        fresh,
        token,
        "dashboard/account.html",
        "account",
        status=status,
        title="Your account · Mandatum",
        sessions=sessions,
        factor_on=fresh.totp_enabled_at is not None,
        factor_since=when(fresh.totp_enabled_at) if fresh.totp_enabled_at else "",
        codes_left=left,
        **extra,
    )


@router.get("/dashboard/account", response_class=HTMLResponse)
async def account_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, ANYONE)
    if isinstance(found, Response):
        return found
    member, token = found
    return await _account_page(ctx, member, token, notice=ACCOUNT_NOTICES.get(notice or ""))


@router.post("/dashboard/account/sessions", response_class=HTMLResponse)
async def end_other_sessions(
    request: Request, ctx: ContextDep, csrf: Annotated[str, Form(max_length=100)] = ""
) -> Response:
    """End every session of the member's but this one."""
    found = await form_by(request, ctx, csrf, ANYONE)
    if isinstance(found, Response):
        return found
    member, token = found
    actor, org_id = members.actor_of(member), member.organization_id
    await run_blocking(ctx, member_sessions.end_sessions, ctx, actor, org_id, member.id, token)
    return RedirectResponse("/dashboard/account?notice=ended", status_code=303)
