"""The subject's pages: the hosted approval page at ``/r/<token>`` and, with ``?surface=iframe``,
the same flow inside an integrator's iframe (SPEC.md, CONTRACT 8).

Server-rendered HTML forms, so every step works without JavaScript: the code, then the decision.
Each step is a POST whose answer is the next page; after the code is accepted, the page session
(``core.otp``) rides along in a hidden field, so no cookie is needed (iframes of another site lose
them); it is never put in a URL. The one cookie is the identity check's: it binds the provider's
return to the browser that started the check (see ``start_identity_check``). How each step's page
is made, and where a subject stands, are ``api.routes.journey_pages``.
Only the iframe's last page runs a script: it posts the ``credential`` events to the parent window,
targeted at the allow-listed origin the integrator named: each encrypted whole to the key the
request registered (``iframe.pubKey``, a JWE only the integrator opens), or without one cut down to
the credential's id and status (``for_the_browser``: no document data reaches the browser).

Every answer has a strict Content-Security-Policy (scripts and styles only with the page's nonce;
``frame-ancestors 'none'`` for the hosted page, the organization's allowed origin for the iframe),
``Referrer-Policy: no-referrer`` (the token is in the URL) and ``Cache-Control: no-store``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from adapters.kyc import provider_for
from api.deps import ContextDep, TemporalDep
from api.routes import journey_trusted as trusted
from api.routes.journey_pages import (
    HOSTED,
    IFRAME,
    Page,
    after_code,
    continue_page,
    done_page,
    frame_messages,
    load_page,
    render,
    subject_of,
    unavailable,
    with_session,
)
from core.kinds import UpdateRefusal
from core.otp import KYC_RETURN_SECONDS, JourneySecrets
from services import approval_forms, approvals, journey
from services.context import utcnow
from services.errors import Conflict, NotFound, Refused, Unavailable
from workflows.messages import (
    OTP_EXPIRED,
    OTP_LOCKED,
    OTP_LOCKED_NOW,
    OTP_NO_CODE,
    OTP_PASSED,
    OTP_WRONG,
)

router = APIRouter(include_in_schema=False)
CODE_RE = re.compile(r"[0-9]{6}")
SurfaceForm = Annotated[str, Form()]


@router.get("/r/{token}", response_class=HTMLResponse)
async def approval_page(
    token: str,
    request: Request,
    ctx: ContextDep,
    lang: str | None = None,
    surface: str | None = None,
    parent: str | None = None,
) -> Response:
    page = await load_page(ctx, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    if not page.journey.open_credentials:
        return done_page(page)
    # a trusted browser session of this subject stands in for the code (api.routes.journey_trusted)
    skipped = await trusted.skip_code(page, request, ctx)
    if skipped is not None:
        return skipped
    if journey.code_waits_for_open(page.journey):  # the code goes to the secondary contact now
        j = page.journey
        try:
            opened = await journey.open_journey(ctx, subject_of(page), j.request.id, j.subject.id)
        except Refused:
            return render("ended", page=page, status=410)
        except Unavailable:
            return unavailable(page)
        if not opened.delivered:
            return render("otp", page=page, status=502, error=page.t("otp_no_code"))
    return render("otp", page=page)


@router.get("/r/{token}/document/{credential_id}", response_class=Response)
async def approval_document(token: str, credential_id: str, ctx: ContextDep) -> Response:
    """The PDF of a DOCUMENT approval the request asks the subject to approve: the link alone
    shows what is asked, this included (docs/approvals.md)."""
    target = ctx.journey.parse_link_token(token)
    found = target and await journey.load(ctx, target.request_id, target.subject_id)
    shown = found and next((c for c in found.credentials if c.id == credential_id and c.pdf), None)
    if not found or not shown:
        return render("invalid", status=404)
    try:
        pdf = await approvals.subject_document(ctx, found.request.id, credential_id)
    except NotFound:
        return render("invalid", status=404)
    headers = {
        "Cache-Control": "no-store",
        "Content-Disposition": "inline",
        "X-Content-Type-Options": "nosniff",
    }
    return Response(pdf, media_type="application/pdf", headers=headers)


@router.post("/r/{token}/otp", response_class=HTMLResponse)
async def submit_code(
    token: str,
    request: Request,
    ctx: ContextDep,
    temporal: TemporalDep,
    code: Annotated[str, Form()] = "",
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    page = await load_page(ctx, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    digits = "".join(ch for ch in code if ch.isdigit())
    if not CODE_RE.fullmatch(digits):
        return render("otp", page=page, status=400, error=page.t("otp_format"))
    j = page.journey
    try:
        checked = await journey.confirm_code(ctx, subject_of(page), j.request.id, j.subject.id, digits)
    except Refused:
        return render("ended", page=page, status=410)
    except Unavailable:
        return unavailable(page)
    if checked.outcome == OTP_PASSED:
        opened = await trusted.remember(page, request, ctx)  # when the request allows a session
        shown = after_code(
            page, checked.identity, ctx.journey.session_for(token), **trusted.remembered_page(page, opened)
        )
        return trusted.set_cookie(shown, page, ctx, opened)
    error = {
        OTP_WRONG: page.t("otp_wrong", left=checked.attempts_left),
        OTP_EXPIRED: page.t("otp_expired"),
        OTP_LOCKED: page.t("otp_locked"),
        OTP_LOCKED_NOW: page.t("otp_locked"),
        OTP_NO_CODE: page.t("otp_no_code"),
    }.get(checked.outcome, page.t("otp_no_code"))
    return render("otp", page=page, status=400 if checked.outcome == OTP_WRONG else 403, error=error)


@router.post("/r/{token}/continue", response_class=HTMLResponse)
async def continue_journey(
    token: str,
    ctx: ContextDep,
    temporal: TemporalDep,
    session: Annotated[str, Form()] = "",
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    """Checking again where the subject stands (the page session in the form, never in a URL)."""
    page = await with_session(ctx, token, session, lang, surface, parent)
    return page if isinstance(page, HTMLResponse) else await continue_page(page, ctx, session)


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


def _secure_cookies(ctx: ContextDep) -> bool:
    """Secure cookies wherever the service is served over https (always in production)."""
    return ctx.settings.public_url.startswith("https://")


@router.post("/r/{token}/kyc", response_class=HTMLResponse)
async def start_identity_check(
    token: str,
    ctx: ContextDep,
    session: Annotated[str, Form()] = "",
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    """Start a platform identity check and send the subject to the provider."""
    page = await with_session(ctx, token, session, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    j = page.journey
    provider = provider_for(ctx.settings)
    if not journey.platform_check_possible(j.request.security_level) or provider is None:
        return render("kyc", page=page, status=503, session=session, error=page.t("kyc_unavailable"))
    secret = JourneySecrets.kyc_browser_secret()
    check = await journey.start_identity_check(
        ctx, subject_of(page), j.request.id, j.subject.id, provider.name, secret
    )
    back: dict[str, str] = {"check": check.id, "lang": page.lang}
    if page.surface == IFRAME and page.parent:
        back.update(surface=IFRAME, parent=page.parent)
    return_url = f"{ctx.settings.public_url.rstrip('/')}{page.base}/kyc/return?{urlencode(back)}"
    response = RedirectResponse(
        provider.start_url(check, return_url, page.lang),
        status_code=303,
        headers={"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"},
    )
    response.headers.append(
        "Set-Cookie", kyc_cookie(token, secret, page.surface, _secure_cookies(ctx), KYC_RETURN_SECONDS)
    )
    return response


@router.get("/r/{token}/kyc/return", response_class=HTMLResponse)
async def return_from_identity_check(
    token: str,
    request: Request,
    ctx: ContextDep,
    temporal: TemporalDep,
    check: str = "",
    lang: str | None = None,
    surface: str | None = None,
    parent: str | None = None,
) -> Response:
    """Back from the provider: where the subject stands, with a new page session, only in the
    browser that started this check and only once; anyone else gets the code step again."""
    page = await load_page(ctx, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    secret = request.cookies.get(KYC_COOKIE)
    now = utcnow()
    taken = (
        CHECK_ID_RE.fullmatch(check) is not None
        and JourneySecrets.kyc_browser_secret_wellformed(secret)
        and await journey.take_identity_return(
            ctx,
            subject_of(page),
            check,
            page.journey.request.id,
            page.journey.subject.id,
            secret or "",
            now,
            now - timedelta(seconds=KYC_RETURN_SECONDS),
        )
    )
    if taken:
        response = await continue_page(page, ctx, ctx.journey.session_for(token))
    else:
        response = render("otp", page=page, status=403, error=page.t("kyc_return_elsewhere"))
    if secret is not None:  # used or useless here: cleared either way
        response.headers.append("Set-Cookie", kyc_cookie(token, "", page.surface, _secure_cookies(ctx), 0))
    return response


@router.post("/r/{token}/resend", response_class=HTMLResponse)
async def resend_code(
    token: str,
    ctx: ContextDep,
    temporal: TemporalDep,
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    page = await load_page(ctx, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    j = page.journey
    try:
        sent = await journey.resend_code(ctx, subject_of(page), j.request.id, j.subject.id)
    except Refused as exc:
        if exc.refusal == UpdateRefusal.TOO_SOON:
            seconds = exc.retry_after
            return render("otp", page=page, status=429, error=page.t("resend_too_soon", seconds=seconds))
        if exc.refusal == UpdateRefusal.TOO_MANY_SENDS:
            return render("otp", page=page, status=429, error=page.t("resend_limit"))
        return render("ended", page=page, status=410)
    except Unavailable:
        return unavailable(page)
    if not sent.delivered:
        return render("otp", page=page, status=502, error=page.t("otp_no_code"))
    return render("otp", page=page, notice=page.t("resent"))


@router.post("/r/{token}/decide", response_class=HTMLResponse)
async def decide(
    token: str,
    request: Request,
    ctx: ContextDep,
    temporal: TemporalDep,
    session: Annotated[str, Form()] = "",
    surface: SurfaceForm = HOSTED,
    lang: Annotated[str | None, Form()] = None,
    parent: Annotated[str | None, Form()] = None,
) -> Response:
    page = await with_session(ctx, token, session, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    form = await request.form()
    choices = _choices(page, form)
    if choices is None:
        return render("review", page=page, status=400, session=session, error=page.t("decide_missing"))
    filled = await _fill_forms(page, ctx, session, choices, form)
    if filled is not None:
        return filled
    decided = await _decide_each(page, ctx, session, choices)
    if isinstance(decided, HTMLResponse):
        return decided
    j = page.journey
    if len(decided) == len(choices):  # every choice recorded now: the done page needs only them
        page.journey = dataclasses.replace(j, decided={**j.decided, **choices})
    else:  # some were decided before (a second submit): as stored
        page.journey = await journey.load(ctx, j.request.id, j.subject.id) or j
    if page.redirect_url:
        return RedirectResponse(
            page.redirect_url,
            status_code=303,
            headers={"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"},
        )
    return done_page(page, await frame_messages(page, ctx, decided))


def _choices(page: Page, form: Mapping[str, Any]) -> dict[str, bool] | None:
    """The subject's choice on each open credential (True: accepted), None when one has none."""
    choices: dict[str, bool] = {}
    for cred in page.journey.open_credentials:
        value = form.get(f"decision-{cred.id}")
        if value not in ("accept", "reject"):
            return None
        choices[cred.id] = value == "accept"
    return choices


async def _fill_forms(
    page: Page, ctx: ContextDep, session: str, choices: dict[str, bool], form: Mapping[str, Any]
) -> HTMLResponse | None:
    """The values of each accepted FORM, checked by type and bounds and written into its
    credential before the decision (docs/approvals.md); the page again, saying which fields to
    check, when one is missing or wrong; None when all are stored."""
    accepted = [c for c in page.journey.open_credentials if c.form and choices.get(c.id)]
    read = [(c.id, *approval_forms.read_values(c.id, c.form, form)) for c in accepted]
    wrong = [label for _, _, labels in read for label in labels]
    if wrong:
        error = page.t("form_invalid", fields=", ".join(wrong))
        return render("review", page=page, status=400, session=session, error=error, form_values=form)
    for credential_id, values, _ in read:
        try:
            await approval_forms.fill(
                ctx, page.journey.request.id, page.journey.subject.id, credential_id, values
            )
        except Conflict:
            return render("ended", page=page, status=410)
    return None


async def _decide_each(
    page: Page, ctx: ContextDep, session: str, choices: dict[str, bool]
) -> list[str] | HTMLResponse:
    """Each choice given to the request's workflow in turn: the ids of the decisions made (one
    decided already, by a second submit of the same form, is passed over), or the page that says
    why the rest could not be."""
    j = page.journey
    decision_ids: list[str] = []
    for credential_id, accept in choices.items():
        try:
            result = await journey.decide(
                ctx,
                subject_of(page),
                j.request.id,
                j.subject.id,
                credential_id,
                accept,
                j.code_channel,
                page.surface,
            )
        except Refused as exc:
            if exc.refusal == UpdateRefusal.ALREADY_DECIDED:  # a second submit of the same form
                continue
            if exc.refusal == UpdateRefusal.OTP_REQUIRED:
                return render("otp", page=page, status=403, error=page.t("session_expired"))
            if exc.refusal in (UpdateRefusal.IDENTITY_REQUIRED, UpdateRefusal.IDENTITY_FAILED):
                return await continue_page(page, ctx, session)
            return render("ended", page=page, status=410)
        except Unavailable:
            return unavailable(page)
        decision_ids.append(result.decision_id)
    return decision_ids
