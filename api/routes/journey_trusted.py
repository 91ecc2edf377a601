"""The trusted browser session on the subject's pages (issue 36, ``iframe.cookie``;
docs/adr/0019-trusted-browser-session.md).

- After a confirmed code on a request that allows a session, ``remember`` opens one and the answer
  sets its cookie: a fresh random token (never one the browser brought), HttpOnly, for the
  approval pages only (``Path=/r/``), for the session's lifetime. On the hosted page it is
  ``SameSite=Lax`` (the link in the message is a top-level navigation from another site, which Lax
  lets carry it; no other site's form or frame gets it), ``Secure`` over https. Inside the
  integrator's iframe the page is a third party: ``SameSite=None; Secure; Partitioned`` (CHIPS),
  so the browser keeps it for the top-level site that framed the page and sends it only there;
  it has its own name, so the two never mix.
- ``skip_code``: on a later request of the same organization to the same subject that allows it
  too, the page asks the request's workflow to take the browser's session in place of the code
  (``verify_session``); when it holds, the subject goes on as after a right code (to an identity
  check the security level requires, else to the decision).
- ``POST /r/<token>/forget``: the subject's "forget this browser" ends the session and clears the
  cookie.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from api.deps import ContextDep, TemporalDep
from api.routes.journey_pages import (
    HOSTED,
    IFRAME,
    Page,
    after_code,
    continue_page,
    load_page,
    render,
    subject_of,
    unavailable,
)
from core.otp import JourneySecrets
from services import trusted_sessions
from services.errors import Refused, Unavailable
from services.trusted_sessions import NewSession

router = APIRouter(include_in_schema=False)
TRUSTED_COOKIE = {HOSTED: "mandatum_trusted", IFRAME: "mandatum_trusted_frame"}
COOKIE_PATH = "/r/"  # every approval page of this service, nothing else


def trusted_cookie(surface: str, value: str, secure: bool, max_age: int) -> str:
    """The Set-Cookie value of a trusted browser session (``max_age`` 0 clears it)."""
    if value and not JourneySecrets.trusted_session_token_wellformed(value):
        raise ValueError("not a trusted session token")  # never build a header of anything else
    name = TRUSTED_COOKIE[IFRAME if surface == IFRAME else HOSTED]
    attributes = [f"{name}={value}", f"Max-Age={max(0, int(max_age))}", f"Path={COOKIE_PATH}", "HttpOnly"]
    if surface == IFRAME:
        attributes += ["SameSite=None", "Secure", "Partitioned"]
    else:
        attributes += ["SameSite=Lax", *(["Secure"] if secure else [])]
    return "; ".join(attributes)


def _secure(ctx: ContextDep) -> bool:
    return ctx.settings.public_url.startswith("https://")


def browser_token(request: Request, page: Page) -> str | None:
    """The trusted session token this browser brought on this surface, if it is well formed."""
    token = request.cookies.get(TRUSTED_COOKIE[page.surface])
    return token if JourneySecrets.trusted_session_token_wellformed(token) else None


def allows_session(page: Page) -> bool:
    return page.journey.request.trusted_session_seconds is not None


async def skip_code(page: Page, request: Request, ctx: ContextDep) -> HTMLResponse | None:
    """The step after the code, reached without it because this browser's trusted session stands
    in for it on this request; None when it does not (no session, another subject's, expired,
    revoked, a request that does not allow it): the code is asked."""
    if not allows_session(page):
        return None
    token = browser_token(request, page)
    if token is None:
        return None
    j = page.journey
    try:
        checked = await trusted_sessions.confirm_browser(
            ctx, subject_of(page), j.request.id, j.subject.id, token
        )
    except Refused:
        return None  # the request cannot take it now (closed, decided): the page says so as usual
    except Unavailable:
        return unavailable(page)
    if not checked.passed:
        return None
    return after_code(
        page,
        checked.identity,
        ctx.journey.session_for(page.token),
        notice=page.t("trusted_used"),
        forget=True,
    )


async def remember(page: Page, request: Request, ctx: ContextDep) -> NewSession | None:
    """A session for the subject who just confirmed their code, when the request allows one."""
    if not allows_session(page):
        return None
    j = page.journey
    return await trusted_sessions.open_session(
        ctx, subject_of(page), j.request.id, j.subject.id, page.surface, browser_token(request, page)
    )


def remembered_page(page: Page, opened: NewSession | None) -> dict[str, Any]:
    """What the page after the code says of a session just opened."""
    if opened is None:
        return {}
    hours = opened.seconds // 3600
    return {
        "notice": page.t("trusted_opened", hours=hours, org=page.journey.organization.name),
        "forget": True,
    }


def set_cookie(response: Response, page: Page, ctx: ContextDep, opened: NewSession | None) -> Response:
    if opened is not None:
        response.headers.append(
            "Set-Cookie", trusted_cookie(page.surface, opened.token, _secure(ctx), opened.seconds)
        )
    return response


@router.post("/r/{token}/forget", response_class=HTMLResponse)
async def forget_browser(
    token: str,
    request: Request,
    ctx: ContextDep,
    temporal: TemporalDep,
    session: Annotated[str, Form()] = "",
    surface: Annotated[str, Form()] = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    """The subject's "forget this browser": the session of this browser ends and its cookie is
    cleared; the subject stays where they stood (with a valid page session) or is asked the code."""
    page = await load_page(ctx, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    await trusted_sessions.forget_browser(
        ctx, subject_of(page), page.journey.subject.id, browser_token(request, page)
    )
    notice = page.t("trusted_forgotten")
    if ctx.journey.session_valid(token, session):
        response: Response = await continue_page(page, ctx, session, notice=notice)
    else:
        response = render("otp", page=page, notice=notice)
    response.headers.append("Set-Cookie", trusted_cookie(page.surface, "", _secure(ctx), 0))
    return response
