"""The dashboard's front door (issue 14): a member sets a password from an invitation or reset link,
logs in, sees the organization's overview, and logs out. Server-rendered, no script.

- The session is a server-side row (``services.members``); the browser holds its token in the
  cookie ``mandatum_dashboard``: HttpOnly, ``SameSite=Lax``, ``Path=/dashboard``, ``Secure`` when
  the service is served over https.
- Every POST is refused (403) unless the browser says it comes from this origin: ``Sec-Fetch-Site``
  (``same-origin``, or ``none`` for a typed address) where the browser sends it, as every current
  one does; else ``Origin`` must be ours (``null``, which a sandboxed frame sends, is not). A client
  that sends neither is no browser a cross-site page could drive. That stops a cross-site form
  from logging a member into someone else's account or using a link. The forms of a session also
  carry its CSRF token. The pages are served with ``Referrer-Policy: same-origin`` (not the
  subject's pages' ``no-referrer``, under which browsers send ``Origin: null`` on our own forms).
- Links and forms read the token from the path: only the characters a token has, at most 100.
"""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ServicesDep
from api.pages import render_page
from services import audit, members
from services.context import Context
from services.errors import Invalid, TooMany
from store import orgs
from store.audit_queries import ActivityFilter
from store.db import run_db
from store.tables import Member

router = APIRouter(include_in_schema=False)
COOKIE = "mandatum_dashboard"
LINK_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{20,100}")
RECENT = 10


def _page(
    template: str, *, status: int = 200, headers: dict[str, str] | None = None, **context: Any
) -> HTMLResponse:
    """A dashboard page: ``api.pages.render_page`` with ``Referrer-Policy: same-origin``."""
    own = {"Referrer-Policy": "same-origin", **(headers or {})}
    return render_page(template, status=status, headers=own, **context)


def _secure(ctx: Context) -> bool:
    return ctx.settings.public_url.startswith("https://")


def _from_this_origin(request: Request, ctx: Context) -> bool:
    """Whether the browser says the POST comes from one of our own pages."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return True
    ours = urlsplit(ctx.settings.public_url)
    return origin == f"{ours.scheme}://{ours.netloc}"


def _refused(message: str, status: int = 403) -> HTMLResponse:
    return _page("dashboard/message.html", status=status, title="Refused", message=message)


def _to_login(notice: str | None = None) -> RedirectResponse:
    return RedirectResponse("/dashboard/login" + (f"?notice={notice}" if notice else ""), status_code=303)


async def _member(request: Request, ctx: Context) -> tuple[Member, str] | None:
    token = request.cookies.get(COOKIE)
    member = await run_db(ctx.engine, members.session_member, ctx, token)
    return (member, token) if member is not None and token else None


NOTICES = {
    "password-set": "Your password is set: log in with it.",
    "logged-out": "You are logged out.",
}


@router.get("/dashboard/login", response_class=HTMLResponse)
async def login_page(request: Request, services: ServicesDep, notice: str | None = None) -> Response:
    if await _member(request, services) is not None:
        return RedirectResponse("/dashboard", status_code=303)
    return _page("dashboard/login.html", title="Log in", notice=NOTICES.get(notice or ""), email="")


@router.post("/dashboard/login", response_class=HTMLResponse)
async def login(
    request: Request,
    services: ServicesDep,
    email: Annotated[str, Form(max_length=320)] = "",
    password: Annotated[str, Form(max_length=members.MAX_PASSWORD)] = "",
) -> Response:
    if not _from_this_origin(request, services):
        return _refused("This form can only be sent from the dashboard's own page.")
    try:
        done = await run_db(services.engine, members.login, services, email, password)
    except TooMany as exc:
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return _page(
            "dashboard/login.html", status=429, headers=headers, title="Log in", error=str(exc), email=email
        )
    except Invalid as exc:
        return _page("dashboard/login.html", status=401, title="Log in", error=str(exc), email=email)
    answer = RedirectResponse("/dashboard", status_code=303)
    answer.set_cookie(
        COOKIE,
        done.session_token,
        max_age=int(services.settings.dashboard_session_max.total_seconds()),
        path="/dashboard",
        httponly=True,
        samesite="lax",
        secure=_secure(services),
    )
    return answer


@router.get("/dashboard", response_class=HTMLResponse)
async def overview(request: Request, services: ServicesDep) -> Response:
    found = await _member(request, services)
    if found is None:
        return _to_login()
    member, token = found
    org = await run_db(services.engine, orgs.get_organization, services.engine, member.organization_id)
    rows, _ = await audit.activity(services, member.organization_id, ActivityFilter(), 0, RECENT)
    return _page(
        "dashboard/overview.html",
        title=f"{org.name} · Mandatum",
        org=org,
        member=member,
        records=[_record(r) for r in rows],
        csrf=members.csrf_token(services, token),
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
    request: Request, services: ServicesDep, csrf: Annotated[str, Form(max_length=100)] = ""
) -> Response:
    found = await _member(request, services)
    if found is None:
        return _to_login()
    _, token = found
    if not _from_this_origin(request, services) or not members.csrf_valid(services, token, csrf):
        return _refused("This form has expired or did not come from the dashboard: reload the page.")
    await run_db(services.engine, members.logout, services, token)
    answer = _to_login("logged-out")
    answer.delete_cookie(COOKIE, path="/dashboard", httponly=True, samesite="lax", secure=_secure(services))
    return answer


# --- setting a password from a one-time link --------------------------------------------------

PASSWORD_PATHS = {"set-password": "Choose your password", "reset-password": "Choose a new password"}


def _password_form(kind: str, token: str, status: int = 200, error: str | None = None) -> HTMLResponse:
    return _page(
        "dashboard/password.html",
        status=status,
        title=PASSWORD_PATHS[kind],
        action=f"/dashboard/{kind}/{token}",
        error=error,
        minimum=members.MIN_PASSWORD,
    )


def _link_token(kind: str, token: str) -> bool:
    return kind in PASSWORD_PATHS and LINK_TOKEN_RE.fullmatch(token) is not None


@router.get("/dashboard/{kind}/{token}", response_class=HTMLResponse)
async def password_page(kind: str, token: str) -> Response:
    if not _link_token(kind, token):
        return _page("dashboard/message.html", status=404, title="Not found", message="No such page.")
    return _password_form(kind, token)


@router.post("/dashboard/{kind}/{token}", response_class=HTMLResponse)
async def set_password(
    request: Request,
    services: ServicesDep,
    kind: str,
    token: str,
    password: Annotated[str, Form(max_length=members.MAX_PASSWORD)] = "",
    again: Annotated[str, Form(max_length=members.MAX_PASSWORD)] = "",
) -> Response:
    if not _link_token(kind, token):
        return _page("dashboard/message.html", status=404, title="Not found", message="No such page.")
    if not _from_this_origin(request, services):
        return _refused("This form can only be sent from the dashboard's own page.")
    if password != again:
        return _password_form(kind, token, 400, "The two passwords differ: type the same one twice.")
    try:
        await run_db(services.engine, members.set_password, services, token, password)
    except Invalid as exc:
        return _password_form(kind, token, 400, str(exc))
    return _to_login("password-set")
