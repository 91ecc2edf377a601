"""The second factor's pages (issue 30, item 7): each member's own, and an owner's turning off of
another member's (a lost phone).

- ``/dashboard/account/second-factor``: the factor's state and how many recovery codes remain;
  setting one up, replacing it, new recovery codes and turning it off, each asking for the
  password and, when the factor is on, a current code or a recovery code
  (``services.second_factor.Proof``, counted as a login is). The new secret is shown in the
  answer that made it only; its first code turns it on and answers with the ten recovery codes,
  shown that once (``Cache-Control: no-store``; never logged or recorded). A member who must have
  a factor and has none reaches this page and logout only (``common.signed_in``).
- ``/dashboard/members/{id}/second-factor`` (owners): turn off another member's factor, with the
  owner's own password and factor.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import (
    ANYONE,
    ENROL,
    client_address,
    form_by,
    not_found,
    refusal_page,
    show,
    signed_in,
    when,
)
from core.kinds import MemberRole
from services import members, second_factor
from services.context import Context, run_blocking
from services.errors import NotFound
from services.members import MAX_PASSWORD
from store.tables import Member

router = APIRouter()
OWNERS = (MemberRole.OWNER,)
MEMBER_ID_RE = re.compile(r"[0-9a-f]{24}")
CHANGES = ("set-up", "codes", "off")
NOTICES = {
    "off": "The second factor is off.",
    "recovery-used": "You logged in with a recovery code: it is used up.",
}
UNREACHABLE = "The dashboard is busy: nothing was changed. Try again in a few seconds."
PasswordField = Annotated[str, Form(max_length=MAX_PASSWORD)]
CodeField = Annotated[str, Form(max_length=40)]
CsrfField = Annotated[str, Form(max_length=100)]


async def _factor_page(
    ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    def read() -> dict[str, Any]:
        fresh = members.member_in(ctx, member.organization_id, member.id)
        return {
            "fresh": fresh,
            "left": second_factor.codes_left(ctx, fresh),
            "waiting": second_factor.waiting(ctx, fresh),
            "required": second_factor.required_of(ctx, fresh),
        }

    state = await run_blocking(ctx, read)
    fresh = state.pop("fresh")
    return await show(
        ctx,
        fresh,
        token,
        "dashboard/second_factor.html",
        "account",
        status=status,
        title="Your second factor · Mandatum",
        factor_on=fresh.totp_enabled_at is not None,
        factor_since=when(fresh.totp_enabled_at) if fresh.totp_enabled_at else "",
        **state,
        **extra,
    )


async def _codes_page(ctx: Context, member: Member, token: str, codes: list[str], replaced: bool) -> Response:
    """The recovery codes, this once; never cached (nor logged: they are in this body only)."""
    shown = await show(
        ctx,
        member,
        token,
        "dashboard/recovery_codes.html",
        "account",
        title="Your recovery codes · Mandatum",
        codes=codes,
        replaced=replaced,
    )
    shown.headers["Cache-Control"] = "no-store"
    return shown


@router.get("/dashboard/account/second-factor", response_class=HTMLResponse)
async def factor_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, ANYONE, enrolling=True)
    if isinstance(found, Response):
        return found
    member, token = found
    return await _factor_page(ctx, member, token, notice=NOTICES.get(notice or ""))


@router.post("/dashboard/account/second-factor", response_class=HTMLResponse)
async def change_factor(
    request: Request,
    ctx: ContextDep,
    csrf: CsrfField = "",
    change: Annotated[str, Form(max_length=20)] = "",
    password: PasswordField = "",
    code: CodeField = "",
) -> Response:
    """Set one up (or another in its place), make new recovery codes, or turn it off."""
    if change not in CHANGES:
        return not_found()
    found = await form_by(request, ctx, csrf, ANYONE, enrolling=True)
    if isinstance(found, Response):
        return found
    member, token = found
    proof = second_factor.Proof(password, code, client_address(request))
    try:
        if change == "set-up":
            enrolment = await second_factor.begin(ctx, member, proof)
            return await _factor_page(ctx, member, token, enrolment=enrolment)
        if change == "codes":
            codes = await second_factor.make_recovery_codes(ctx, member, proof)
            return await _codes_page(ctx, member, token, codes, replaced=True)
        await second_factor.turn_off(ctx, member, proof, member.id)
    except Exception as exc:
        return await refusal_page(exc, _again(ctx, member, token), UNREACHABLE)
    return RedirectResponse(f"{ENROL}?notice=off", status_code=303)


def _again(ctx: Context, member: Member, token: str) -> Any:
    async def render(status: int, error: str) -> HTMLResponse:
        return await _factor_page(ctx, member, token, status=status, error=error)

    return render


@router.post("/dashboard/account/second-factor/confirm", response_class=HTMLResponse)
async def confirm_factor(
    request: Request, ctx: ContextDep, csrf: CsrfField = "", code: CodeField = ""
) -> Response:
    """The new secret's first code: the factor on (or replaced), and the recovery codes, once."""
    found = await form_by(request, ctx, csrf, ANYONE, enrolling=True)
    if isinstance(found, Response):
        return found
    member, token = found
    was_on = member.totp_enabled_at is not None
    try:
        codes = await run_blocking(ctx, second_factor.confirm, ctx, member, code, client_address(request))
    except Exception as exc:
        return await refusal_page(exc, _again(ctx, member, token), UNREACHABLE)
    return await _codes_page(ctx, member, token, codes, replaced=was_on)


# --- an owner turning off another member's factor ---------------------------------------------


async def _turn_off_page(
    ctx: Context, owner: Member, token: str, member_id: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    target = await run_blocking(ctx, members.member_in, ctx, owner.organization_id, member_id)
    return await show(
        ctx,
        owner,
        token,
        "dashboard/member_factor_off.html",
        "members",
        status=status,
        title="Turn off a member's second factor · Mandatum",
        target=target,
        **extra,
    )


def _valid_other(member_id: str, owner: Member) -> bool:
    return MEMBER_ID_RE.fullmatch(member_id) is not None and member_id != owner.id


@router.get("/dashboard/members/{member_id}/second-factor", response_class=HTMLResponse)
async def turn_off_page(request: Request, ctx: ContextDep, member_id: str) -> Response:
    found = await signed_in(request, ctx, OWNERS)
    if isinstance(found, Response):
        return found
    owner, token = found
    if not _valid_other(member_id, owner):
        return not_found("No such member in your organization.")
    try:
        return await _turn_off_page(ctx, owner, token, member_id)
    except NotFound:
        return not_found("No such member in your organization.")


@router.post("/dashboard/members/{member_id}/second-factor", response_class=HTMLResponse)
async def turn_off_members_factor(
    request: Request,
    ctx: ContextDep,
    member_id: str,
    csrf: CsrfField = "",
    password: PasswordField = "",
    code: CodeField = "",
) -> Response:
    """Another member's factor off (they lost their phone), proved by the owner's own password and
    factor; the audit record names the owner."""
    found = await form_by(request, ctx, csrf, OWNERS)
    if isinstance(found, Response):
        return found
    owner, token = found
    if not _valid_other(member_id, owner):
        return not_found("No such member in your organization.")
    proof = second_factor.Proof(password, code, client_address(request))
    try:
        await second_factor.turn_off(ctx, owner, proof, member_id)
    except NotFound:
        return not_found("No such member in your organization.")
    except Exception as exc:

        async def render(status: int, error: str) -> HTMLResponse:
            return await _turn_off_page(ctx, owner, token, member_id, status=status, error=error)

        return await refusal_page(exc, render, UNREACHABLE)
    return RedirectResponse("/dashboard/members?notice=factor-off", status_code=303)
