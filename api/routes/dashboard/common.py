"""What every dashboard page shares: the session cookie, the member of a request, the origin and
CSRF checks of a form, and the page renderer.

- The session is a server-side row (``services.member_sessions``); the browser holds its token in the
  cookie ``mandatum_dashboard``: HttpOnly, ``SameSite=Lax``, ``Path=/dashboard``, ``Secure`` when
  the service is served over https.
- Every POST is refused (403) unless the browser says it comes from this origin: ``Sec-Fetch-Site``
  (``same-origin``, or ``none`` for a typed address) where the browser sends it, as every current
  one does; else ``Origin`` must be ours (``null``, which a sandboxed frame sends, is not). A client
  that sends neither is no browser a cross-site page could drive. That stops a cross-site form
  from logging a member into someone else's account or using a link. The forms of a session also
  carry its CSRF token. The pages are served with ``Referrer-Policy: same-origin`` (not the
  subject's pages' ``no-referrer``, under which browsers send ``Origin: null`` on our own forms).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from functools import partial
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.errors import service_error_status
from api.pages import render_page
from core.kinds import PLATFORM_ROLE, MemberRole
from orchestration.temporal import temporal_unavailable
from services import member_sessions, members, second_factor
from services import orgs as organizations
from services.context import Context, run_blocking
from services.errors import ServiceError
from store.tables import Member

COOKIE = "mandatum_dashboard"
# who may use what (issue 14, item 3): support reads and does the support actions only
BUILDERS: tuple[str, ...] = (MemberRole.OWNER, MemberRole.DEVELOPER)  # keys, webhook settings, actions
EVERYONE: tuple[str, ...] = (MemberRole.OWNER, MemberRole.DEVELOPER, MemberRole.SUPPORT)  # of an organization
OPERATORS: tuple[str, ...] = (PLATFORM_ROLE,)  # operators: the operators' area
ANYONE = EVERYONE + OPERATORS  # each person's own account


def page(
    template: str, *, status: int = 200, headers: dict[str, str] | None = None, **context: Any
) -> HTMLResponse:
    """A dashboard page: ``api.pages.render_page`` with ``Referrer-Policy: same-origin``."""
    own = {"Referrer-Policy": "same-origin", **(headers or {})}
    return render_page(template, status=status, headers=own, **context)


# a subject's id in a form or path: a lowercase UUID, as the service makes them
SUBJECT_ID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


async def refusal_page(
    exc: Exception, render: Callable[..., Awaitable[HTMLResponse]], unreachable: str
) -> HTMLResponse:
    """The page again (``render(status=..., error=...)``) with why an action did not happen: a
    service refusal with the status a REST caller would get (and its ``Retry-After``), Temporal
    not answering as 503 with ``unreachable``; anything else is raised."""
    if isinstance(exc, ServiceError):
        shown = await render(status=service_error_status(exc), error=str(exc))
        if exc.retry_after:
            shown.headers["Retry-After"] = str(exc.retry_after)
        return shown
    if temporal_unavailable(exc):
        shown = await render(status=503, error=unreachable)
        shown.headers["Retry-After"] = "5"
        return shown
    raise exc


def client_address(request: Request) -> str | None:
    """The client's address as the ASGI server gives it: the peer's, or, behind a reverse proxy
    uvicorn trusts (``--forwarded-allow-ips``, ``FORWARDED_ALLOW_IPS``; 127.0.0.1 by default),
    the one the proxy put in ``X-Forwarded-For``. The login throttle counts per client address
    (``services.logins``), so it must be the proxy's client, never a header anyone can send."""
    return request.client.host if request.client else None


def secure(ctx: Context) -> bool:
    return ctx.settings.public_url.startswith("https://")


def from_this_origin(request: Request, ctx: Context) -> bool:
    """Whether the browser says the POST comes from one of our own pages."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return True
    ours = urlsplit(ctx.settings.public_url)
    return origin == f"{ours.scheme}://{ours.netloc}"


def refused(message: str, status: int = 403) -> HTMLResponse:
    return page("dashboard/message.html", status=status, title="Refused", message=message)


def to_login(notice: str | None = None) -> RedirectResponse:
    return RedirectResponse("/dashboard/login" + (f"?notice={notice}" if notice else ""), status_code=303)


async def member_of(request: Request, ctx: Context) -> tuple[Member, str] | None:
    token = request.cookies.get(COOKIE)
    member = await run_blocking(ctx, member_sessions.session_member, ctx, token)
    return (member, token) if member is not None and token else None


ENROL = "/dashboard/account/second-factor"


async def signed_in(
    request: Request, ctx: Context, roles: tuple[str, ...] | None = None, *, enrolling: bool = False
) -> tuple[Member, str] | Response:
    """The member of the request's session, or the answer instead: to the login page without one,
    to the second factor's set-up for a member who must have one and has not (operators, or
    an organization that requires it) on any page but that one (``enrolling``), 403 for a role the
    page is not for."""
    found = await member_of(request, ctx)
    if found is None:
        return to_login()
    if not enrolling and await run_blocking(ctx, second_factor.must_enrol, ctx, found[0]):
        return RedirectResponse(ENROL, status_code=303)
    if roles is not None and found[0].role not in roles:
        return refused("Your role cannot use this page: ask your organization's owner.")
    return found


def org_of(member: Member) -> str:
    """The organization of the member on one of its pages: every such page admits an
    organization's roles only (``signed_in``), which operators, of no organization, never have."""
    if member.organization_id is None:
        raise RuntimeError("operators reached an organization's page")
    return member.organization_id


def posted_here(request: Request, ctx: Context, token: str, csrf: str) -> bool:
    """A logged-in form: sent from our own page, with this session's CSRF token."""
    return from_this_origin(request, ctx) and member_sessions.csrf_valid(ctx, token, csrf)


STALE_FORM = "This form has expired or did not come from the dashboard: reload the page."


async def form_by(
    request: Request,
    ctx: Context,
    csrf: str,
    roles: tuple[str, ...] | None = None,
    *,
    enrolling: bool = False,
) -> tuple[Member, str] | Response:
    """The member sending a logged-in form (as ``signed_in``), or 403 when it did not come from
    our own page with this session's CSRF token."""
    found = await signed_in(request, ctx, roles, enrolling=enrolling)
    if not isinstance(found, Response) and not posted_here(request, ctx, found[1], csrf):
        return refused(STALE_FORM)
    return found


def when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def not_found(message: str = "No such page.") -> HTMLResponse:
    return page("dashboard/message.html", status=404, title="Not found", message=message)


def member_page(
    ctx: Context, member: Member, token: str, template: str, section: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    """A page of the member's organization with the header's needs (the organization, the member,
    the section, the session's CSRF token). Reads the database: call it as ``show`` does
    (``services.context.run_blocking``)."""
    org_id = member.organization_id  # None for operators (their account page)
    return page(
        template,
        status=status,
        member=member,
        enrol_only=second_factor.must_enrol(ctx, member),
        org=organizations.get_organization(ctx, org_id) if org_id else None,
        csrf=member_sessions.csrf_token(ctx, token),
        section=section,
        names=members.actor_names(ctx, org_id) if org_id else {},
        **extra,
    )


async def show(
    ctx: Context, member: Member, token: str, template: str, section: str, **extra: Any
) -> HTMLResponse:
    """``member_page`` in a thread (it reads the database)."""
    return await run_blocking(ctx, partial(member_page, ctx, member, token, template, section, **extra))


MAX_PAGE = 100_000
PAGE_RE = re.compile(r"[1-9][0-9]{0,5}")  # ASCII digits: str.isdigit and int take other scripts' too


def page_number(raw: str | None) -> int:
    """The page (from 1) a list's ``page`` query asks for; ValueError with the words to show."""
    raw = raw or "1"
    if not PAGE_RE.fullmatch(raw) or int(raw) > MAX_PAGE:
        raise ValueError(f"page is a whole number from 1 to {MAX_PAGE}")
    return int(raw)


def pager(params: Any, page: int, pages: int) -> dict[str, Any]:
    """The pager of a list (``page``, ``pages`` and the links to the pages beside, keeping the
    query's other values)."""
    kept = [(k, v) for k, v in params.multi_items() if k != "page" and v.strip()]
    return {
        "page": page,
        "pages": pages,
        "previous": f"?{urlencode([*kept, ('page', page - 1)])}" if page > 1 else None,
        "next": f"?{urlencode([*kept, ('page', page + 1)])}" if page < pages else None,
    }


def event_row(e: Any, endpoints: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A webhook event as the event tables show it. With ``endpoints`` (the organization's
    endpoints: id to URL without its query, ``services.webhooks.shown_url``), its endpoint too:
    ``endpoint`` its id ("" when the organization had none), ``endpoint_url`` its URL ("" once it
    is removed)."""
    row = {
        "id": e.id,
        "type": e.event_type,
        "created": when(e.created_at),
        "state": e.state,
        "resending": bool(getattr(e, "resending", False)),
        "attempts": e.attempts,
        "last": (f"HTTP {e.last_status}" if e.last_status else "") or (e.last_error or ""),
        "request": e.request_id or "",
    }
    if endpoints is not None:
        row["endpoint"] = e.endpoint_id or ""
        row["endpoint_url"] = endpoints.get(e.endpoint_id, "") if e.endpoint_id else ""
    return row
