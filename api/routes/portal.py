"""The subject's portal (issue 32, item 2): ``/portal``. Plain forms, no script.

- ``GET /portal``: the mandates of the signed-in contact, else the form asking for a contact.
- ``POST /portal/code-request``, ``GET|POST /portal/code``: the one-time code.
- ``GET /portal/mandates/{id}``: one mandate; ``GET|POST /portal/mandates/{id}/revoke``: revoking
  it after a confirmation.
- ``POST /portal/sign-out``.

The browser's token is the cookie ``mandatum_portal``: HttpOnly, ``SameSite=Strict``,
``Path=/portal``, ``Secure`` when the service is served over https, at most an hour. Every POST
must come from our own page (``from_this_origin``) and carry the token's CSRF value. The language
is ``lang`` (ENG, PRT, SPA, FRA) in the query or the form. Everything else is ``services.portal``
and ``services.portal_mandates``.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.pages import render_page
from api.routes.dashboard.common import client_address, from_this_origin, secure
from core import i18n
from services import portal, portal_mandates
from services.context import Context, run_blocking
from services.errors import Conflict, Invalid, NotFound, TooMany
from store.tables import PortalSession

router = APIRouter(include_in_schema=False)
COOKIE = "mandatum_portal"
COOKIE_SECONDS = int(portal.MAX_AGE.total_seconds())
ID_MAX = 100
NOTICES = {
    "signed-out": "portal_signed_out",
    "ended": "portal_session_ended",
    "revoked": "portal_revoked_notice",
}


def _lang(value: str | None) -> str:
    return i18n.language_of(value)


def _here(path: str, lang: str, **query: str) -> str:
    return f"{path}?{urlencode({'lang': lang, **query})}"


def _set_cookie(response: Response, ctx: Context, token: str) -> None:
    response.set_cookie(
        COOKIE,
        token,
        max_age=COOKIE_SECONDS,
        path="/portal",
        httponly=True,
        samesite="strict",
        secure=secure(ctx),
    )


def _page(
    ctx: Context,
    template: str,
    lang: str,
    token: str,
    *,
    status: int = 200,
    path: str = "/portal",
    **extra: Any,
) -> HTMLResponse:
    t = partial(i18n.text, lang)
    languages = [
        (i18n.HTML_LANG[code], i18n.LANGUAGE_NAMES[code], _here(path, code), code == lang)
        for code in i18n.LANGUAGES
    ]
    response = render_page(
        template,
        status=status,
        headers={"Referrer-Policy": "same-origin"},
        t=t,
        lang=lang,
        html_lang=i18n.HTML_LANG[lang],
        languages=languages,
        csrf=portal.csrf_token(ctx, token),
        number=partial(i18n.number, lang),
        **extra,
    )
    _set_cookie(response, ctx, token)
    return response


def _token(request: Request) -> str:
    """The browser's token, or a fresh one (set with the answer) when it has none."""
    token = request.cookies.get(COOKIE)
    return token if token is not None and portal.token_wellformed(token) else portal.new_token()


def _posted_here(request: Request, ctx: Context, csrf: str) -> bool:
    return from_this_origin(request, ctx) and portal.csrf_valid(ctx, request.cookies.get(COOKIE), csrf)


def _stale(ctx: Context, request: Request, lang: str) -> HTMLResponse:
    token = _token(request)
    return _page(ctx, "portal_signin.html", lang, token, status=403, error=i18n.text(lang, "portal_stale"))


async def _session(ctx: Context, request: Request) -> tuple[PortalSession, str] | None:
    token = request.cookies.get(COOKIE)
    found = await run_blocking(ctx, portal.session_of, ctx, token)
    return None if found is None or token is None else (found, token)


def _to_start(lang: str, notice: str = "ended") -> RedirectResponse:
    return RedirectResponse(_here("/portal", lang, notice=notice), status_code=303)


def _too_many(lang: str, exc: TooMany) -> str:
    return i18n.text(lang, "portal_too_many", minutes=max(1, -(-(exc.retry_after or 60) // 60)))


# --- signing in ---------------------------------------------------------------------------------


@router.get("/portal", response_class=HTMLResponse)
async def home(
    request: Request, ctx: ContextDep, lang: str | None = None, notice: str | None = None
) -> Response:
    lang = _lang(lang)
    shown_notice = i18n.text(lang, NOTICES[notice]) if notice in ("signed-out", "ended") else None
    found = await _session(ctx, request)
    if found is None:
        return _page(ctx, "portal_signin.html", lang, _token(request), notice=shown_notice)
    session, token = found
    mandates = await portal_mandates.mandates(ctx, session, lang)
    return _page(ctx, "portal_list.html", lang, token, session=session, mandates=mandates)


@router.post("/portal/code-request", response_class=HTMLResponse)
async def ask_code(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    contact: Annotated[str, Form(max_length=400)] = "",
    lang: Annotated[str, Form(max_length=3)] = "",
) -> Response:
    lang = _lang(lang)
    if not _posted_here(request, ctx, csrf):
        return _stale(ctx, request, lang)
    token = _token(request)
    try:
        await portal.ask_code(ctx, token, contact, client_address(request), lang)
    except Invalid:
        error = i18n.text(lang, "portal_contact_invalid")
        return _page(ctx, "portal_signin.html", lang, token, status=400, error=error, contact=contact)
    except TooMany as exc:
        shown = _page(ctx, "portal_signin.html", lang, token, status=429, error=_too_many(lang, exc))
        shown.headers["Retry-After"] = str(exc.retry_after or 60)
        return shown
    return RedirectResponse(_here("/portal/code", lang), status_code=303)


async def _code_page(
    ctx: Context, request: Request, lang: str, *, status: int = 200, error: str | None = None
) -> Response:
    token = _token(request)
    where = await run_blocking(ctx, portal.contact_shown, ctx, token)
    if where is None:
        return RedirectResponse(_here("/portal", lang), status_code=303)
    return _page(
        ctx, "portal_code.html", lang, token, status=status, path="/portal/code", contact=where, error=error
    )


@router.get("/portal/code", response_class=HTMLResponse)
async def code_page(request: Request, ctx: ContextDep, lang: str | None = None) -> Response:
    return await _code_page(ctx, request, _lang(lang))


CODE_ERRORS = {
    portal.WRONG: "portal_code_wrong",
    portal.EXPIRED: "portal_code_expired",
    portal.LOCKED: "portal_code_locked",
}


@router.post("/portal/code", response_class=HTMLResponse)
async def enter_code(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    code: Annotated[str, Form(max_length=40)] = "",
    lang: Annotated[str, Form(max_length=3)] = "",
) -> Response:
    lang = _lang(lang)
    if not _posted_here(request, ctx, csrf):
        return _stale(ctx, request, lang)
    try:
        entered = await portal.enter_code(ctx, request.cookies.get(COOKIE), code, client_address(request))
    except Invalid:
        return await _code_page(ctx, request, lang, status=400, error=i18n.text(lang, "portal_code_format"))
    except TooMany as exc:
        shown = await _code_page(ctx, request, lang, status=429, error=_too_many(lang, exc))
        shown.headers["Retry-After"] = str(exc.retry_after or 60)
        return shown
    if entered.outcome == portal.PASSED and entered.session_token is not None:
        answer = RedirectResponse(_here("/portal", lang), status_code=303)
        _set_cookie(answer, ctx, entered.session_token)
        return answer
    if entered.outcome == portal.NO_CODE:
        return RedirectResponse(_here("/portal", lang), status_code=303)
    error = i18n.text(lang, CODE_ERRORS[entered.outcome], left=entered.attempts_left)
    return await _code_page(ctx, request, lang, status=400, error=error)


@router.post("/portal/sign-out", response_class=HTMLResponse)
async def sign_out(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    lang: Annotated[str, Form(max_length=3)] = "",
) -> Response:
    lang = _lang(lang)
    if not _posted_here(request, ctx, csrf):
        return _stale(ctx, request, lang)
    await run_blocking(ctx, portal.sign_out, ctx, request.cookies.get(COOKIE))
    answer = _to_start(lang, "signed-out")
    _set_cookie(answer, ctx, portal.new_token())
    return answer


# --- a mandate ----------------------------------------------------------------------------------


def _not_found(ctx: Context, lang: str, token: str, session: PortalSession) -> HTMLResponse:
    error = i18n.text(lang, "portal_not_found")
    return _page(
        ctx, "portal_list.html", lang, token, status=404, session=session, mandates=None, error=error
    )


@router.get("/portal/mandates/{credential_id}", response_class=HTMLResponse)
async def mandate_page(
    request: Request, ctx: ContextDep, credential_id: str, lang: str | None = None, notice: str | None = None
) -> Response:
    lang = _lang(lang)
    found = await _session(ctx, request)
    if found is None:
        return _to_start(lang)
    session, token = found
    try:
        shown = await portal_mandates.mandate(ctx, session, credential_id[:ID_MAX], lang)
    except NotFound:
        return _not_found(ctx, lang, token, session)
    org = shown.mandate.organization.name
    said = i18n.text(lang, "portal_revoked_notice", org=org) if notice == "revoked" else None
    path = f"/portal/mandates/{credential_id}"
    return _page(ctx, "portal_mandate.html", lang, token, path=path, session=session, m=shown, notice=said)


@router.get("/portal/mandates/{credential_id}/revoke", response_class=HTMLResponse)
async def revoke_page(
    request: Request, ctx: ContextDep, credential_id: str, lang: str | None = None
) -> Response:
    lang = _lang(lang)
    found = await _session(ctx, request)
    if found is None:
        return _to_start(lang)
    session, token = found
    try:
        shown = await portal_mandates.mandate(ctx, session, credential_id[:ID_MAX], lang)
    except NotFound:
        return _not_found(ctx, lang, token, session)
    path = f"/portal/mandates/{credential_id}/revoke"
    return _page(ctx, "portal_revoke.html", lang, token, path=path, session=session, m=shown)


@router.post("/portal/mandates/{credential_id}/revoke", response_class=HTMLResponse)
async def revoke(
    request: Request,
    ctx: ContextDep,
    credential_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    lang: Annotated[str, Form(max_length=3)] = "",
) -> Response:
    lang = _lang(lang)
    if not _posted_here(request, ctx, csrf):
        return _stale(ctx, request, lang)
    found = await _session(ctx, request)
    if found is None:
        return _to_start(lang)
    session, token = found
    try:
        await portal_mandates.revoke(ctx, session, credential_id[:ID_MAX])
    except NotFound:
        return _not_found(ctx, lang, token, session)
    except Conflict:
        shown = await portal_mandates.mandate(ctx, session, credential_id[:ID_MAX], lang)
        error = i18n.text(lang, "portal_not_revocable")
        path = f"/portal/mandates/{credential_id}"
        return _page(
            ctx,
            "portal_mandate.html",
            lang,
            token,
            status=409,
            path=path,
            session=session,
            m=shown,
            error=error,
        )
    return RedirectResponse(
        _here(f"/portal/mandates/{credential_id}", lang, notice="revoked"), status_code=303
    )
