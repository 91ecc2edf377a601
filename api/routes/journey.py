"""The subject's pages: the hosted approval page at ``/r/<token>`` and, with ``?surface=iframe``,
the same flow inside an integrator's iframe (SPEC.md, CONTRACT 8).

Server-rendered HTML forms, so every step works without JavaScript: the code, then the decision.
Each step is a POST whose answer is the next page; after the code is accepted, the page session
(``core.otp``) rides along in a hidden field, so no cookie is needed (iframes of another site lose
them); it is never put in a URL. The one cookie is the identity check's: it binds the provider's
return to the browser that started the check (see ``start_identity_check``).
Only the iframe's last page runs a script: it posts the ``credential`` events, cut down to the
credential's id and status (``for_the_browser``: no document data reaches the browser), to the
parent window, targeted at the allow-listed origin the integrator named.

Every answer has a strict Content-Security-Policy (scripts and styles only with the page's nonce;
``frame-ancestors 'none'`` for the hosted page, the organization's allowed origin for the iframe),
``Referrer-Policy: no-referrer`` (the token is in the URL) and ``Cache-Control: no-store``.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from temporalio.service import RPCError

from api.deps import ServicesDep, TemporalDep
from api.errors import TEMPORAL_RETRY_AFTER
from api.pages import TEMPLATES, page_headers
from core import i18n
from core.actors import Actor
from core.kinds import IDENTITY_SOURCES, IdentityStatus, RequestStatus, Surface, UpdateRefusal
from core.origins import header_origins, origin_of_url, safe_url
from core.otp import KYC_RETURN_SECONDS, JourneySecrets, mask_contact
from orchestration.kyc import provider_for
from orchestration.temporal import temporal_unavailable
from services import journey
from services.errors import Refused, Unavailable
from store import journey as journeys
from store import webhooks as webhook_store
from store.db import run_db, utcnow
from store.journey import Journey
from workflows.messages import (
    IDENTITY_FAILED,
    IDENTITY_REQUIRED,
    OTP_EXPIRED,
    OTP_LOCKED,
    OTP_LOCKED_NOW,
    OTP_NO_CODE,
    OTP_PASSED,
    OTP_WRONG,
    identity_state,
)

router = APIRouter(include_in_schema=False)
HOSTED, IFRAME = Surface.HOSTED, Surface.IFRAME
CODE_RE = re.compile(r"[0-9]{6}")
SurfaceForm = Annotated[str, Form()]


@dataclass
class Page:
    """Who is on the page and how it is shown."""

    token: str
    journey: Journey
    lang: str
    surface: Surface
    parent: str | None  # the iframe's parent origin, one of the organization's allowed origins
    form_targets: list[str] = field(default_factory=list)  # see api.pages.page_headers
    redirect_url: str | None = None  # the hosted page's redirectUrl, checked again (core.origins)

    @property
    def base(self) -> str:
        return f"/r/{self.token}"

    def t(self, key: str, **values: object) -> str:
        return i18n.text(self.lang, key, **values)


def _render(
    step: str, *, page: Page | None = None, lang: str = i18n.DEFAULT_LANGUAGE, status: int = 200, **extra: Any
) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    lang = page.lang if page else i18n.language_of(lang)
    t = partial(i18n.text, lang)
    context: dict[str, Any] = {
        "t": t,
        "lang": lang,
        "html_lang": i18n.HTML_LANG[lang],
        "nonce": nonce,
        "step": step,
        "title": t("invalid_heading"),
    }
    frame_ancestors = "'none'"
    form_targets: list[str] = []
    if page is not None:
        j = page.journey
        form_targets = page.form_targets
        org = j.organization.name
        kyc = j.request.security_level in IDENTITY_SOURCES
        total = 3 if kyc else 2
        number = {"otp": 1, "kyc": 2, "review": 3 if kyc else 2}.get(step)
        context.update(
            org=org,
            title=t("page_title", org=org),
            request_name=j.request.name,
            contact=mask_contact(j.subject.contact),
            credentials=j.credentials,
            open_credentials=j.open_credentials,
            base=page.base,
            surface=page.surface,
            parent=page.parent,
            step_number=number,
            step_total=total if number else None,
            kyc_source=IDENTITY_SOURCES.get(j.request.security_level),
            languages=_language_links(page) if step == "otp" else None,
        )
        if page.surface == IFRAME and page.parent:
            frame_ancestors = page.parent
    context.update(extra)
    html = TEMPLATES.get_template("journey.html").render(context)
    return HTMLResponse(html, status_code=status, headers=page_headers(nonce, frame_ancestors, form_targets))


def _language_links(page: Page) -> list[tuple[str, str, str]]:
    links = []
    for code in i18n.LANGUAGES:
        query: dict[str, str] = {"lang": code}
        if page.surface == IFRAME and page.parent:
            query.update(surface=IFRAME, parent=page.parent)
        links.append((i18n.HTML_LANG[code], i18n.LANGUAGE_NAMES[code], f"{page.base}?{urlencode(query)}"))
    return links


async def _page(
    services: ServicesDep, token: str, lang: str | None, surface: str | None, parent: str | None
) -> Page | HTMLResponse:
    """The page's subject and request, or the answer for a bad link, an ended request or an
    iframe parent that is not allowed."""
    target = services.journey.parse_link_token(token)
    if target is None:
        return _render("invalid", lang=lang or i18n.DEFAULT_LANGUAGE, status=404)
    found = await run_db(
        services.engine, journeys.load_journey, services.engine, target.request_id, target.subject_id
    )
    if found is None:
        return _render("invalid", lang=lang or i18n.DEFAULT_LANGUAGE, status=404)
    language = i18n.language_of(lang if lang in i18n.CATALOG else found.request.language)
    kind = IFRAME if surface == IFRAME else HOSTED
    local = services.settings.allow_loopback_http  # http on a loopback host is allowed outside production
    allowed = header_origins(found.organization.frame_origins, local)  # checked again for the header
    if kind == IFRAME and (not parent or parent not in allowed):
        # the browser refuses to show it anyway (frame-ancestors 'none'); say why to a direct visit
        return _render("invalid", lang=language, status=403)
    redirect = safe_url(found.request.redirect_url, local) if kind == HOSTED else None  # the parent leads
    targets = [
        origin_of_url(redirect, local),
        (provider := provider_for(services.settings)) and provider.origin,
    ]
    page = Page(
        token,
        found,
        language,
        kind,
        parent if kind == IFRAME else None,
        sorted({t for t in targets if t}),
        redirect,
    )
    if found.request.status != RequestStatus.PENDING or found.request.canceled_at is not None:
        if not found.open_credentials and found.decided:
            return _done(page)
        return _render("ended", page=page, status=410)
    return page


async def _with_session(
    services: ServicesDep, token: str, session: str, lang: str | None, surface: str | None, parent: str | None
) -> Page | HTMLResponse:
    """The page of a step after the code: its session must be valid, else back to the code."""
    page = await _page(services, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    if not services.journey.session_valid(token, session):
        return _render("otp", page=page, status=403, error=page.t("session_expired"))
    return page


def _done(page: Page, post_message: list[dict[str, Any]] | None = None) -> HTMLResponse:
    if page.journey.link.identity_result == IdentityStatus.FAILED:  # declined for them: say why
        return _render("kyc_failed", page=page, status=403)
    names = {c.id: c.name for c in page.journey.credentials}
    decided = page.journey.decided
    approved = ", ".join(names[c] for c, ok in decided.items() if ok and c in names)
    declined = ", ".join(names[c] for c, ok in decided.items() if not ok and c in names)
    message = None
    if post_message and page.surface == IFRAME and page.parent:
        message = {"payloads": post_message, "targetOrigin": page.parent}
    return _render(
        "done",
        page=page,
        approved=approved,
        declined=declined,
        redirect_url=page.redirect_url,
        post_message=message,
    )


@router.get("/r/{token}", response_class=HTMLResponse)
async def approval_page(
    token: str,
    services: ServicesDep,
    lang: str | None = None,
    surface: str | None = None,
    parent: str | None = None,
) -> Response:
    page = await _page(services, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    if not page.journey.open_credentials:
        return _done(page)
    return _render("otp", page=page)


@router.post("/r/{token}/otp", response_class=HTMLResponse)
async def submit_code(
    token: str,
    services: ServicesDep,
    temporal: TemporalDep,
    code: Annotated[str, Form()] = "",
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    page = await _page(services, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    digits = "".join(ch for ch in code if ch.isdigit())
    if not CODE_RE.fullmatch(digits):
        return _render("otp", page=page, status=400, error=page.t("otp_format"))
    j = page.journey
    try:
        checked = await journey.confirm_code(services, _subject(page), j.request.id, j.subject.id, digits)
    except Refused:
        return _render("ended", page=page, status=410)
    except Unavailable:
        return _unavailable(page)
    if checked.outcome == OTP_PASSED:
        return _after_code(page, checked.identity, services.journey.session_for(token))
    error = {
        OTP_WRONG: page.t("otp_wrong", left=checked.attempts_left),
        OTP_EXPIRED: page.t("otp_expired"),
        OTP_LOCKED: page.t("otp_locked"),
        OTP_LOCKED_NOW: page.t("otp_locked"),
        OTP_NO_CODE: page.t("otp_no_code"),
    }.get(checked.outcome, page.t("otp_no_code"))
    return _render("otp", page=page, status=400 if checked.outcome == OTP_WRONG else 403, error=error)


def _subject(page: Page) -> Actor:
    """The subject whose link this page is: who its steps are done by."""
    return Actor.subject(page.journey.subject.id)


def _unavailable(page: Page) -> HTMLResponse:
    """Temporal unreachable or no worker in time: the "try again" page, 503 with Retry-After."""
    response = _render("unavailable", page=page, status=503)
    response.headers["Retry-After"] = TEMPORAL_RETRY_AFTER
    return response


def _after_code(page: Page, identity: str, session: str, error: str | None = None) -> HTMLResponse:
    """The step after a confirmed code: the identity check when the level requires one and it has
    not passed, the end when it failed, else the decision."""
    if identity == IDENTITY_REQUIRED:
        return _render("kyc", page=page, session=session, error=error)
    if identity == IDENTITY_FAILED:
        return _render("kyc_failed", page=page, status=403)
    return _render("review", page=page, session=session)


async def _continue(page: Page, services: ServicesDep, session: str) -> HTMLResponse:
    """Where the subject stands now (after an identity check, or checking again)."""
    j = page.journey
    try:
        status = await journey.standing(services, j.request.id)
    except (RPCError, RuntimeError) as exc:
        if temporal_unavailable(exc):
            return _unavailable(page)
        if isinstance(exc, RuntimeError):
            raise
        return _render("ended", page=page, status=410)
    if j.subject.id not in status.otp_passed:
        return _render("otp", page=page, status=403, error=page.t("session_expired"))
    identity = identity_state(j.request.security_level, status.identity.get(j.subject.id))
    return _after_code(page, identity, session)


@router.post("/r/{token}/continue", response_class=HTMLResponse)
async def continue_journey(
    token: str,
    services: ServicesDep,
    temporal: TemporalDep,
    session: Annotated[str, Form()] = "",
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    """Checking again where the subject stands (the page session in the form, never in a URL)."""
    page = await _with_session(services, token, session, lang, surface, parent)
    return page if isinstance(page, HTMLResponse) else await _continue(page, services, session)


# --- the identity check: out to the provider and back ----------------------------------------------
# The return URL the provider is given names the check and nothing else of value: the page session
# stays here. Starting the check sets a random browser secret in an HttpOnly cookie scoped to this
# page's ``/r/<token>/kyc`` path (hosted: SameSite=Lax, a top-level navigation back from the
# provider carries it; iframe: SameSite=None; Secure; Partitioned, so it is kept and sent inside
# the integrator's frame, and only there). The check stores a keyed hash of the secret; the return
# is taken once, from that browser, within KYC_RETURN_SECONDS, and only then opens a new session.
KYC_COOKIE = "mandatum_kyc"
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
CHECK_ID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def _kyc_cookie_path(token: str) -> str:
    if not TOKEN_RE.fullmatch(token):  # a parsed link token always is; never build a header otherwise
        raise ValueError("not a link token")
    return f"/r/{token}/kyc"


def kyc_cookie(token: str, value: str, surface: str, secure: bool, max_age: int) -> str:
    """The Set-Cookie value binding an identity check's return to this browser (``max_age`` 0
    clears it). Inside an iframe the cookie is third-party: SameSite=None with Secure and
    Partitioned (CHIPS: kept per top-level site, so only the integrator's page that framed the
    check gets it back)."""
    if value and not JourneySecrets.kyc_browser_secret_wellformed(value):
        raise ValueError("not a browser secret")
    attributes = [
        f"{KYC_COOKIE}={value}",
        f"Max-Age={max_age}",
        f"Path={_kyc_cookie_path(token)}",
        "HttpOnly",
    ]
    if surface == IFRAME:
        attributes += ["SameSite=None", "Secure", "Partitioned"]
    else:
        attributes += ["SameSite=Lax", *(["Secure"] if secure else [])]
    return "; ".join(attributes)


def _secure_cookies(services: ServicesDep) -> bool:
    """Secure cookies wherever the service is served over https (always in production)."""
    return services.settings.public_url.startswith("https://")


@router.post("/r/{token}/kyc", response_class=HTMLResponse)
async def start_identity_check(
    token: str,
    services: ServicesDep,
    session: Annotated[str, Form()] = "",
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    """Start a platform identity check and send the subject to the provider."""
    page = await _with_session(services, token, session, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    j = page.journey
    provider = provider_for(services.settings)
    if not journey.platform_check_possible(j.request.security_level) or provider is None:
        return _render("kyc", page=page, status=503, session=session, error=page.t("kyc_unavailable"))
    secret = JourneySecrets.kyc_browser_secret()
    check = await journey.start_identity_check(
        services, _subject(page), j.request.id, j.subject.id, provider.name, secret
    )
    back: dict[str, str] = {"check": check.id, "lang": page.lang}
    if page.surface == IFRAME and page.parent:
        back.update(surface=IFRAME, parent=page.parent)
    return_url = f"{services.settings.public_url.rstrip('/')}{page.base}/kyc/return?{urlencode(back)}"
    response = RedirectResponse(
        provider.start_url(check, return_url, page.lang),
        status_code=303,
        headers={"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"},
    )
    response.headers.append(
        "Set-Cookie", kyc_cookie(token, secret, page.surface, _secure_cookies(services), KYC_RETURN_SECONDS)
    )
    return response


@router.get("/r/{token}/kyc/return", response_class=HTMLResponse)
async def return_from_identity_check(
    token: str,
    request: Request,
    services: ServicesDep,
    temporal: TemporalDep,
    check: str = "",
    lang: str | None = None,
    surface: str | None = None,
    parent: str | None = None,
) -> Response:
    """Back from the provider: where the subject stands, with a new page session, only in the
    browser that started this check and only once; anyone else gets the code step again."""
    page = await _page(services, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    secret = request.cookies.get(KYC_COOKIE)
    now = utcnow()
    taken = (
        CHECK_ID_RE.fullmatch(check) is not None
        and JourneySecrets.kyc_browser_secret_wellformed(secret)
        and await journey.take_identity_return(
            services,
            _subject(page),
            check,
            page.journey.request.id,
            page.journey.subject.id,
            secret or "",
            now,
            now - timedelta(seconds=KYC_RETURN_SECONDS),
        )
    )
    if taken:
        response = await _continue(page, services, services.journey.session_for(token))
    else:
        response = _render("otp", page=page, status=403, error=page.t("kyc_return_elsewhere"))
    if secret is not None:  # used or useless here: cleared either way
        response.headers.append(
            "Set-Cookie", kyc_cookie(token, "", page.surface, _secure_cookies(services), 0)
        )
    return response


@router.post("/r/{token}/resend", response_class=HTMLResponse)
async def resend_code(
    token: str,
    services: ServicesDep,
    temporal: TemporalDep,
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    page = await _page(services, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    j = page.journey
    try:
        sent = await journey.resend_code(services, _subject(page), j.request.id, j.subject.id)
    except Refused as exc:
        if exc.refusal == UpdateRefusal.TOO_SOON:
            seconds = exc.retry_after
            return _render("otp", page=page, status=429, error=page.t("resend_too_soon", seconds=seconds))
        if exc.refusal == UpdateRefusal.TOO_MANY_SENDS:
            return _render("otp", page=page, status=429, error=page.t("resend_limit"))
        return _render("ended", page=page, status=410)
    except Unavailable:
        return _unavailable(page)
    if not sent.delivered:
        return _render("otp", page=page, status=502, error=page.t("otp_no_code"))
    return _render("otp", page=page, notice=page.t("resent"))


@router.post("/r/{token}/decide", response_class=HTMLResponse)
async def decide(
    token: str,
    request: Request,
    services: ServicesDep,
    temporal: TemporalDep,
    session: Annotated[str, Form()] = "",
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    page = await _with_session(services, token, session, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    form = await request.form()
    j = page.journey
    choices: dict[str, bool] = {}
    for cred in j.open_credentials:
        value = form.get(f"decision-{cred.id}")
        if value not in ("accept", "reject"):
            return _render("review", page=page, status=400, session=session, error=page.t("decide_missing"))
        choices[cred.id] = value == "accept"
    decision_ids: list[str] = []
    for credential_id, accept in choices.items():
        try:
            result = await journey.decide(
                services,
                _subject(page),
                j.request.id,
                j.subject.id,
                credential_id,
                accept,
                j.channel,
                page.surface,
            )
        except Refused as exc:
            if exc.refusal == UpdateRefusal.ALREADY_DECIDED:  # a second submit of the same form
                continue
            if exc.refusal == UpdateRefusal.OTP_REQUIRED:
                return _render("otp", page=page, status=403, error=page.t("session_expired"))
            if exc.refusal in (UpdateRefusal.IDENTITY_REQUIRED, UpdateRefusal.IDENTITY_FAILED):
                return await _continue(page, services, session)
            return _render("ended", page=page, status=410)
        except Unavailable:
            return _unavailable(page)
        decision_ids.append(result.decision_id)
    reloaded = await run_db(
        services.engine, journeys.load_journey, services.engine, j.request.id, j.subject.id
    )
    page.journey = reloaded or j
    if page.redirect_url:
        return RedirectResponse(
            page.redirect_url,
            status_code=303,
            headers={"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"},
        )
    events = await asyncio.gather(
        *(
            run_db(services.engine, webhook_store.event_by_fact, services.engine, f"credential:{d}")
            for d in decision_ids
        )
    )
    return _done(page, [for_the_browser(e.payload) for e in events if e is not None])


# what of a credential the iframe's last page posts to the parent: nothing of its content (a
# document's hidden items are in its data and in its signed form, which cannot be redacted)
BROWSER_CREDENTIAL = ("id", "resourceType", "status", "name", "internalId")


def for_the_browser(payload: dict[str, Any]) -> dict[str, Any]:
    """The ``credential`` event as the subject's browser may hold it: the event's own members and
    decision, the credential's id, type, status, name and internal id. The content (``data``,
    ``w3cCredential``, ``action``, other subjects' ``decisions``) reaches the integrator by the
    signed webhook and ``GET /request`` only."""
    credential = payload.get("credential") or {}
    return {**payload, "credential": {k: credential[k] for k in BROWSER_CREDENTIAL if k in credential}}
