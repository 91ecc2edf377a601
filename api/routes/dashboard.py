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
from datetime import datetime, timedelta
from functools import partial
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ServicesDep
from api.pages import render_page
from core.kinds import MemberRole
from orchestration.temporal import temporal_unavailable
from services import audit, members, webhooks
from services import orgs as organizations
from services.context import Context
from services.errors import Invalid, NotFound, TooMany
from store import orgs
from store import webhooks as webhook_store
from store.audit_queries import ActivityFilter
from store.db import run_db, utcnow
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


async def _signed_in(
    request: Request, ctx: Context, roles: tuple[MemberRole, ...] | None = None
) -> tuple[Member, str] | Response:
    """The member of the request's session, or the answer instead: to the login page without one,
    403 for a role the page is not for."""
    found = await _member(request, ctx)
    if found is None:
        return _to_login()
    if roles is not None and found[0].role not in roles:
        return _refused("Your role cannot use this page: ask your organization's owner.")
    return found


def _posted_here(request: Request, ctx: Context, token: str, csrf: str) -> bool:
    """A logged-in form: sent from our own page, with this session's CSRF token."""
    return _from_this_origin(request, ctx) and members.csrf_valid(ctx, token, csrf)


STALE_FORM = "This form has expired or did not come from the dashboard: reload the page."


async def _form_by(
    request: Request, ctx: Context, csrf: str, roles: tuple[MemberRole, ...] | None = None
) -> tuple[Member, str] | Response:
    """The member sending a logged-in form (as ``_signed_in``), or 403 when it did not come from
    our own page with this session's CSRF token."""
    found = await _signed_in(request, ctx, roles)
    if not isinstance(found, Response) and not _posted_here(request, ctx, found[1], csrf):
        return _refused(STALE_FORM)
    return found


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
        section="overview",
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
    found = await _form_by(request, services, csrf)
    if isinstance(found, Response):
        return found
    _, token = found
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


def _kind(request: Request) -> str:
    """``set-password`` or ``reset-password``: the route's own literal path segment."""
    return request.url.path.split("/")[2]


@router.get("/dashboard/set-password/{token}", response_class=HTMLResponse)
@router.get("/dashboard/reset-password/{token}", response_class=HTMLResponse)
async def password_page(request: Request, token: str) -> Response:
    kind = _kind(request)
    if not _link_token(kind, token):
        return _page("dashboard/message.html", status=404, title="Not found", message="No such page.")
    return _password_form(kind, token)


@router.post("/dashboard/set-password/{token}", response_class=HTMLResponse)
@router.post("/dashboard/reset-password/{token}", response_class=HTMLResponse)
async def set_password(
    request: Request,
    services: ServicesDep,
    token: str,
    password: Annotated[str, Form(max_length=members.MAX_PASSWORD)] = "",
    again: Annotated[str, Form(max_length=members.MAX_PASSWORD)] = "",
) -> Response:
    kind = _kind(request)
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


# --- API keys (owners and developers) -----------------------------------------------------------

KEY_ROLES = (MemberRole.OWNER, MemberRole.DEVELOPER)
KEY_ID_RE = re.compile(r"[0-9a-f]{24}")
MAX_KEY_DAYS = 3650
DAYS_RE = re.compile(r"[0-9]{1,4}")
KEY_NOTICES = {"revoked": "The key is revoked: calls signed with it are refused from now on."}


def _key_status(key: Any, now: datetime) -> str:
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "active"


async def _keys_page(ctx: Context, member: Member, token: str, **extra: Any) -> HTMLResponse:
    """``_keys_html`` in a thread (it reads the database)."""
    return await run_db(ctx.engine, partial(_keys_html, ctx, member, token, **extra))


def _keys_html(ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any) -> HTMLResponse:
    now = utcnow()
    keys = [
        {
            "id": k.id,
            "prefix": k.key_prefix,
            "created": _when(k.created_at),
            "expires": _when(k.expires_at) if k.expires_at else "never",
            "rotated": _when(k.rotated_at) if k.rotated_at else "",
            "status": _key_status(k, now),
        }
        for k in organizations.list_keys(ctx, member.organization_id)
    ]
    return _page(
        "dashboard/keys.html",
        status=status,
        title="API keys · Mandatum",
        member=member,
        org=orgs.get_organization(ctx.engine, member.organization_id),
        csrf=members.csrf_token(ctx, token),
        keys=keys,
        max_days=MAX_KEY_DAYS,
        section="keys",
        **extra,
    )


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


@router.get("/dashboard/keys", response_class=HTMLResponse)
async def keys_page(request: Request, services: ServicesDep, notice: str | None = None) -> Response:
    found = await _signed_in(request, services, KEY_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    return await _keys_page(services, member, token, notice=KEY_NOTICES.get(notice or ""))


@router.post("/dashboard/keys", response_class=HTMLResponse)
async def create_key(
    request: Request,
    services: ServicesDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    days: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    found = await _form_by(request, services, csrf, KEY_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    expires, days = None, days.strip()
    if days:
        if not DAYS_RE.fullmatch(days) or not 1 <= int(days) <= MAX_KEY_DAYS:  # ASCII digits only
            error = f"The expiry is a whole number of days from 1 to {MAX_KEY_DAYS}, or empty for none."
            return await _keys_page(services, member, token, status=400, error=error)
        expires = utcnow() + timedelta(days=int(days))
    actor = members.actor_of(member)
    issued = await run_db(
        services.engine, organizations.create_key, services, actor, member.organization_id, expires
    )
    return await _keys_page(services, member, token, issued=issued, rotated=False)


@router.post("/dashboard/keys/{key_id}/{change}", response_class=HTMLResponse)
async def change_key(
    request: Request,
    services: ServicesDep,
    key_id: str,
    change: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    confirm: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    found = await _form_by(request, services, csrf, KEY_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    if change not in ("rotate", "revoke") or not KEY_ID_RE.fullmatch(key_id):
        return _page("dashboard/message.html", status=404, title="Not found", message="No such page.")
    actor, org_id = members.actor_of(member), member.organization_id
    try:
        if change == "rotate":
            issued = await run_db(services.engine, organizations.rotate_key, services, actor, key_id, org_id)
            return await _keys_page(services, member, token, issued=issued, rotated=True)
        if confirm != "yes":
            error = "Tick the box to confirm: a revoked key can never be used again."
            return await _keys_page(services, member, token, status=400, error=error)
        await run_db(services.engine, organizations.revoke_key, services, actor, key_id, org_id)
    except NotFound:
        return _page("dashboard/message.html", status=404, title="Not found", message="No such API key.")
    except Invalid as exc:  # a rotation of a revoked key
        return await _keys_page(services, member, token, status=409, error=str(exc))
    return RedirectResponse("/dashboard/keys?notice=revoked", status_code=303)


# --- the webhook (owners and developers) --------------------------------------------------------

WEBHOOK_ROLES = KEY_ROLES
EVENTS_SHOWN = 20
WEBHOOK_NOTICES = {
    "test-sent": "The test event is on its way: its delivery shows below (reload to follow it)."
}


async def _webhook_page(ctx: Context, member: Member, token: str, **extra: Any) -> HTMLResponse:
    """``_webhook_html`` in a thread (it reads the database)."""
    return await run_db(ctx.engine, partial(_webhook_html, ctx, member, token, **extra))


def _webhook_html(
    ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    org_id = member.organization_id
    config = webhook_store.config_row(ctx.engine, org_id)
    events = [
        {
            "id": e.id,
            "type": e.event_type,
            "created": _when(e.created_at),
            "state": e.state,
            "attempts": e.attempts,
            "last": (f"HTTP {e.last_status}" if e.last_status else "") or (e.last_error or ""),
            "request": e.request_id or "",
        }
        for e in webhook_store.list_events(ctx.engine, org_id, EVENTS_SHOWN)
    ]
    return _page(
        "dashboard/webhooks.html",
        status=status,
        title="Webhook · Mandatum",
        member=member,
        org=orgs.get_organization(ctx.engine, org_id),
        csrf=members.csrf_token(ctx, token),
        section="webhooks",
        url=config.url if config else "",
        updated=_when(config.updated_at) if config else "",
        events=events,
        **extra,
    )


@router.get("/dashboard/webhooks", response_class=HTMLResponse)
async def webhook_page(request: Request, services: ServicesDep, notice: str | None = None) -> Response:
    found = await _signed_in(request, services, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    notice_text = WEBHOOK_NOTICES.get(notice or "")
    return await _webhook_page(services, member, token, notice=notice_text)


@router.post("/dashboard/webhooks", response_class=HTMLResponse)
async def set_webhook(
    request: Request,
    services: ServicesDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    url: Annotated[str, Form(max_length=2048)] = "",
    new_secrets: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    found = await _form_by(request, services, csrf, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    fresh = (
        {
            "signature_secret": webhook_store.new_signature_secret(),
            "encryption_secret": webhook_store.new_encryption_secret(),
            "salt": webhook_store.new_salt(),
        }
        if new_secrets == "yes"
        else {}
    )
    try:
        generated = await run_db(
            services.engine,
            partial(
                webhooks.configure,
                services,
                members.actor_of(member),
                member.organization_id,
                url.strip(),
                **fresh,
            ),
        )
    except Invalid as exc:
        return await _webhook_page(services, member, token, status=400, error=str(exc))
    shown = generated or {name.replace("_", " "): value for name, value in fresh.items()}
    return await _webhook_page(services, member, token, secrets=shown)


@router.post("/dashboard/webhooks/test", response_class=HTMLResponse)
async def send_test_event(
    request: Request, services: ServicesDep, csrf: Annotated[str, Form(max_length=100)] = ""
) -> Response:
    found = await _form_by(request, services, csrf, WEBHOOK_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    if (
        await run_db(services.engine, webhook_store.config_row, services.engine, member.organization_id)
        is None
    ):
        error = "Set the webhook's URL first: the test event is sent there."
        return await _webhook_page(services, member, token, status=409, error=error)
    actor = members.actor_of(member)
    try:
        event = await run_db(
            services.engine, webhooks.create_test_event, services, actor, member.organization_id
        )
        await webhooks.start_delivery(services, actor, event.id)
    except Exception as exc:
        if not temporal_unavailable(exc):
            raise
        error = "The delivery service does not answer right now: try again in a minute."
        return await _webhook_page(services, member, token, status=503, error=error)
    return RedirectResponse("/dashboard/webhooks?notice=test-sent", status_code=303)
