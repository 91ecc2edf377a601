"""Logging in and out, setting a password from a one-time invitation or reset link, and the
organization's overview. Links and forms read the token from the path: only the characters a token
has, at most 100. Logins and codes are throttled per address with client address and per client
address (``services.logins``; the client's address is ``common.client_address``); a hash waits on
its own threads, 503 with ``Retry-After`` when they are full (``services.passwords``)."""

from __future__ import annotations

import re
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import (
    COOKIE,
    ENROL,
    client_address,
    form_by,
    from_this_origin,
    member_of,
    not_found,
    org_of,
    page,
    refused,
    secure,
    signed_in,
    to_login,
)
from core.actors import SYSTEM
from services import audit, first_steps, logins, member_sessions, members, second_factor
from services import orgs as organizations
from services.context import run_blocking
from services.errors import Conflict, Invalid, TooMany, Unavailable

router = APIRouter()

LINK_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{20,100}")
RECENT = 10

NOTICES = {
    "password-set": "Your password is set: log in with it.",
    "password-set-factor": f"Your password is set: log in with it. {members.FACTOR_STAYS}",
    "logged-out": "You are logged out.",
}


@router.get("/dashboard/login", response_class=HTMLResponse)
async def login_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    if await member_of(request, ctx) is not None:
        return RedirectResponse("/dashboard", status_code=303)
    return page("dashboard/login.html", title="Log in", notice=NOTICES.get(notice or ""), email="")


@router.post("/dashboard/login", response_class=HTMLResponse)
async def login(
    request: Request,
    ctx: ContextDep,
    email: Annotated[str, Form(max_length=320)] = "",
    password: Annotated[str, Form(max_length=members.MAX_PASSWORD)] = "",
) -> Response:
    if not from_this_origin(request, ctx):
        return refused("This form can only be sent from the dashboard's own page.")
    try:
        done = await logins.login(ctx, email, password, client_address(request))
    except (TooMany, Unavailable) as exc:
        return _login_page(exc, email)
    except Invalid as exc:
        return page("dashboard/login.html", status=401, title="Log in", error=str(exc), email=email)
    return _with_session(ctx, done, "/dashboard/login/code" if done.awaiting_code else "/dashboard")


def _login_page(exc: TooMany | Unavailable, email: str) -> Response:
    """The login page again, 429 or 503, with ``Retry-After``."""
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
    status = 429 if isinstance(exc, TooMany) else 503
    return page(
        "dashboard/login.html", status=status, headers=headers, title="Log in", error=str(exc), email=email
    )


def _with_session(ctx: ContextDep, done: logins.Login, where: str) -> Response:
    answer = RedirectResponse(where, status_code=303)
    answer.set_cookie(
        COOKIE,
        done.session_token,
        max_age=int(ctx.settings.dashboard_session_max.total_seconds()),
        path="/dashboard",
        httponly=True,
        samesite="lax",
        secure=secure(ctx),
    )
    return answer


def _code_page(
    status: int = 200, error: str | None = None, headers: dict[str, str] | None = None
) -> Response:
    return page("dashboard/code.html", status=status, headers=headers, title="Your code", error=error)


@router.get("/dashboard/login/code", response_class=HTMLResponse)
async def code_page(request: Request, ctx: ContextDep) -> Response:
    """The second step of a login with the second factor on: the authenticator app's code."""
    if await member_of(request, ctx) is not None:
        return RedirectResponse("/dashboard", status_code=303)
    return _code_page()


@router.post("/dashboard/login/code", response_class=HTMLResponse)
async def check_code(
    request: Request, ctx: ContextDep, code: Annotated[str, Form(max_length=40)] = ""
) -> Response:
    """The authenticator app's code, or one of the member's recovery codes (then their second
    factor's page says how many remain)."""
    if not from_this_origin(request, ctx):
        return refused("This form can only be sent from the dashboard's own page.")
    pending = request.cookies.get(COOKIE)
    try:
        client = client_address(request)
        done = await run_blocking(ctx, logins.second_factor, ctx, pending, code, client)
    except TooMany as exc:
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return _code_page(429, str(exc), headers)
    except Invalid as exc:
        if str(exc) == logins.CODE_SESSION_OVER:
            return page("dashboard/login.html", status=401, title="Log in", error=str(exc), email="")
        return _code_page(401, str(exc))
    used_recovery = done.recovery_left is not None
    return _with_session(ctx, done, f"{ENROL}?notice=recovery-used" if used_recovery else "/dashboard")


@router.get("/dashboard", response_class=HTMLResponse)
async def overview(request: Request, ctx: ContextDep) -> Response:
    found = await signed_in(request, ctx)
    if isinstance(found, Response):
        return found
    member, token = found
    if member.organization_id is None:  # operators: the operators' area is theirs
        return RedirectResponse("/dashboard/operators", status_code=303)
    org = await run_blocking(ctx, organizations.get_organization, ctx, org_of(member))
    rows, _ = await audit.activity(ctx, org_of(member), audit.ActivityFilter(), 0, RECENT)
    return page(
        "dashboard/overview.html",
        title=f"{org.name} · Mandatum",
        org=org,
        member=member,
        records=[_record(r) for r in rows],
        names=await run_blocking(ctx, members.actor_names, ctx, org_of(member)),
        steps=await first_steps.first_steps(ctx, org_of(member)),
        section="overview",
        csrf=member_sessions.csrf_token(ctx, token),
    )


def _record(row: Any) -> dict[str, Any]:
    return {
        "type": row.type,
        "at": row.created_at.strftime("%Y-%m-%d %H:%M UTC"),
        "actor": row.actor or "",
        "request": row.request_id or "",
    }


@router.post("/dashboard/logout", response_class=HTMLResponse)
async def logout(
    request: Request, ctx: ContextDep, csrf: Annotated[str, Form(max_length=100)] = ""
) -> Response:
    found = await form_by(request, ctx, csrf, enrolling=True)
    if isinstance(found, Response):
        return found
    _, token = found
    await run_blocking(ctx, member_sessions.logout, ctx, token)
    answer = to_login("logged-out")
    answer.delete_cookie(COOKIE, path="/dashboard", httponly=True, samesite="lax", secure=secure(ctx))
    return answer


PASSWORD_PATHS = {"set-password": "Choose your password", "reset-password": "Choose a new password"}


def _password_form(
    kind: str, token: str, status: int = 200, error: str | None = None, factor_on: bool = False
) -> HTMLResponse:
    return page(
        "dashboard/password.html",
        status=status,
        title=PASSWORD_PATHS[kind],
        action=f"/dashboard/{kind}/{token}",
        error=error,
        minimum=members.MIN_PASSWORD,
        factor_stays=members.FACTOR_STAYS if factor_on else None,
    )


def _link_token(kind: str, token: str) -> bool:
    return kind in PASSWORD_PATHS and LINK_TOKEN_RE.fullmatch(token) is not None


def _kind(request: Request) -> str:
    """``set-password`` or ``reset-password``: the route's own literal path segment."""
    return request.url.path.split("/")[2]


@router.get("/dashboard/set-password/{token}", response_class=HTMLResponse)
@router.get("/dashboard/reset-password/{token}", response_class=HTMLResponse)
async def password_page(request: Request, ctx: ContextDep, token: str) -> Response:
    """The form; a reset link's page says that the second factor stays on when it is (told to the
    link's holder: the e-mail that brought it says so too)."""
    kind = _kind(request)
    if not _link_token(kind, token):
        return not_found()
    factor_on = await run_blocking(ctx, second_factor.link_holder_has_factor, ctx, token)
    return _password_form(kind, token, factor_on=factor_on)


@router.post("/dashboard/set-password/{token}", response_class=HTMLResponse)
@router.post("/dashboard/reset-password/{token}", response_class=HTMLResponse)
async def set_password(
    request: Request,
    ctx: ContextDep,
    token: str,
    password: Annotated[str, Form(max_length=members.MAX_PASSWORD)] = "",
    again: Annotated[str, Form(max_length=members.MAX_PASSWORD)] = "",
) -> Response:
    kind = _kind(request)
    if not _link_token(kind, token):
        return not_found()
    if not from_this_origin(request, ctx):
        return refused("This form can only be sent from the dashboard's own page.")
    factor_on = await run_blocking(ctx, second_factor.link_holder_has_factor, ctx, token)
    form = partial(_password_form, kind, token, factor_on=factor_on)
    if password != again:
        return form(400, "The two passwords differ: type the same one twice.")
    try:
        await logins.set_password(ctx, token, password)
    except Invalid as exc:
        return form(400, str(exc))
    except Conflict as exc:  # told to the address's owner only: the link went to that address
        return form(409, str(exc))
    except Unavailable as exc:
        answer = form(503, str(exc))
        answer.headers["Retry-After"] = str(exc.retry_after)
        return answer
    return to_login("password-set-factor" if factor_on else "password-set")


RESET_SENT = (
    "If that address belongs to a member, a link to choose a new password is on its way to it. "
    "It works once; a new one can be asked for after a minute."
)


@router.get("/dashboard/forgot-password", response_class=HTMLResponse)
async def forgot_password_page() -> Response:
    return page("dashboard/forgot.html", title="Forgot your password?")


@router.post("/dashboard/forgot-password", response_class=HTMLResponse)
async def forgot_password(
    request: Request, ctx: ContextDep, email: Annotated[str, Form(max_length=320)] = ""
) -> Response:
    """The same answer whoever asks, member or not (``services.members.send_password_reset``)."""
    if not from_this_origin(request, ctx):
        return refused("This form can only be sent from the dashboard's own page.")
    await run_blocking(ctx, members.send_password_reset, ctx, SYSTEM, email)
    return page("dashboard/forgot.html", title="Forgot your password?", notice=RESET_SENT)
