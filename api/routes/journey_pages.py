"""The subject's pages as ``api.routes.journey``'s routes show them: who is on the page and how it
is shown (``Page``), each step rendered with its headers (``render``), the page of a link (a bad
link, an ended request and a parent that may not frame it answered here), and where the subject
stands after the code and after an identity check."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlencode

from fastapi.responses import HTMLResponse
from temporalio.service import RPCError

from adapters.kyc import provider_for
from api.deps import ContextDep
from api.errors import TEMPORAL_RETRY_AFTER
from api.pages import TEMPLATES, page_headers
from core import i18n
from core.actors import Actor
from core.kinds import IDENTITY_SOURCES, IdentityStatus, RequestStatus, Surface
from core.origins import header_origins, origin_of_url, safe_url
from core.otp import mask_contact
from orchestration.temporal import temporal_unavailable
from services import journey, limit_views
from services.journey import Journey
from workflows.messages import IDENTITY_FAILED, IDENTITY_REQUIRED, identity_state

HOSTED, IFRAME = Surface.HOSTED, Surface.IFRAME


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


def render(
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
            # where the code goes: the secondary contact when the subject has one (issue 36)
            contact=mask_contact(j.secondary_contact or j.subject.contact),
            signer_quality=j.link.signer_quality,
            credentials=j.credentials,
            open_credentials=j.open_credentials,
            base=page.base,
            surface=page.surface,
            parent=page.parent,
            step_number=number,
            step_total=total if number else None,
            kyc_source=IDENTITY_SOURCES.get(j.request.security_level),
            languages=language_links(page) if step == "otp" else None,
            limit_lines=partial(limit_views.subject_lines, lang),
        )
        if page.surface == IFRAME and page.parent:
            frame_ancestors = page.parent
    context.update(extra)
    html = TEMPLATES.get_template("journey.html").render(context)
    return HTMLResponse(html, status_code=status, headers=page_headers(nonce, frame_ancestors, form_targets))


def language_links(page: Page) -> list[tuple[str, str, str]]:
    links = []
    for code in i18n.LANGUAGES:
        query: dict[str, str] = {"lang": code}
        if page.surface == IFRAME and page.parent:
            query.update(surface=IFRAME, parent=page.parent)
        links.append((i18n.HTML_LANG[code], i18n.LANGUAGE_NAMES[code], f"{page.base}?{urlencode(query)}"))
    return links


async def load_page(
    ctx: ContextDep, token: str, lang: str | None, surface: str | None, parent: str | None
) -> Page | HTMLResponse:
    """The page's subject and request, or the answer for a bad link, an ended request or an
    iframe parent that is not allowed."""
    target = ctx.journey.parse_link_token(token)
    if target is None:
        return render("invalid", lang=lang or i18n.DEFAULT_LANGUAGE, status=404)
    found = await journey.load(ctx, target.request_id, target.subject_id)
    if found is None:
        return render("invalid", lang=lang or i18n.DEFAULT_LANGUAGE, status=404)
    language = i18n.language_of(lang if lang in i18n.CATALOG else found.request.language)
    kind = IFRAME if surface == IFRAME else HOSTED
    local = ctx.settings.allow_loopback_http  # http on a loopback host is allowed outside production
    allowed = header_origins(found.organization.frame_origins, local)  # checked again for the header
    if kind == IFRAME and (not parent or parent not in allowed):
        # the browser refuses to show it anyway (frame-ancestors 'none'); say why to a direct visit
        return render("invalid", lang=language, status=403)
    redirect = safe_url(found.request.redirect_url, local) if kind == HOSTED else None  # the parent leads
    targets = [
        origin_of_url(redirect, local),
        (provider := provider_for(ctx.settings)) and provider.origin,
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
            return done_page(page)
        return render("ended", page=page, status=410)
    return page


async def with_session(
    ctx: ContextDep, token: str, session: str, lang: str | None, surface: str | None, parent: str | None
) -> Page | HTMLResponse:
    """The page of a step after the code: its session must be valid, else back to the code."""
    page = await load_page(ctx, token, lang, surface, parent)
    if isinstance(page, HTMLResponse):
        return page
    if not ctx.journey.session_valid(token, session):
        return render("otp", page=page, status=403, error=page.t("session_expired"))
    return page


async def frame_messages(page: Page, ctx: ContextDep, decision_ids: list[str]) -> list[dict[str, Any]]:
    """What the iframe's last page posts to the parent for the decisions' ``credential`` events:
    each encrypted whole to the request's registered key (``iframe.pubKey``), else cut down to what
    identifies it (``for_the_browser``); nothing outside the iframe, where the events are not read."""
    if page.surface != IFRAME or not page.parent:
        return []
    payloads = [e.payload for e in await journey.decision_events(ctx, decision_ids)]
    key = page.journey.request.iframe_pub_key
    if key:
        return await journey.encrypted_messages(key, payloads)
    return [for_the_browser(p) for p in payloads]


def done_page(page: Page, post_message: list[dict[str, Any]] | None = None) -> HTMLResponse:
    if page.journey.link.identity_result == IdentityStatus.FAILED:  # declined for them: say why
        return render("kyc_failed", page=page, status=403)
    names = {c.id: c.name for c in page.journey.credentials}
    decided = page.journey.decided
    approved = ", ".join(names[c] for c, ok in decided.items() if ok and c in names)
    declined = ", ".join(names[c] for c, ok in decided.items() if not ok and c in names)
    message = None
    if post_message and page.surface == IFRAME and page.parent:
        message = {"payloads": post_message, "targetOrigin": page.parent}
    return render(
        "done",
        page=page,
        approved=approved,
        declined=declined,
        redirect_url=page.redirect_url,
        post_message=message,
    )


def subject_of(page: Page) -> Actor:
    """The subject whose link this page is: who its steps are done by."""
    return Actor.subject(page.journey.subject.id)


def unavailable(page: Page) -> HTMLResponse:
    """Temporal unreachable or no worker in time: the "try again" page, 503 with Retry-After."""
    response = render("unavailable", page=page, status=503)
    response.headers["Retry-After"] = TEMPORAL_RETRY_AFTER
    return response


def after_code(
    page: Page, identity: str, session: str, error: str | None = None, **extra: Any
) -> HTMLResponse:
    """The step after a confirmed code: the identity check when the level requires one and it has
    not passed, the end when it failed, else the decision. ``extra`` goes to the page (the trusted
    browser session's notice and its "forget this browser" form)."""
    if identity == IDENTITY_REQUIRED:
        return render("kyc", page=page, session=session, error=error, **extra)
    if identity == IDENTITY_FAILED:
        return render("kyc_failed", page=page, status=403)
    return render("review", page=page, session=session, **extra)


async def continue_page(page: Page, ctx: ContextDep, session: str, **extra: Any) -> HTMLResponse:
    """Where the subject stands now (after an identity check, or checking again); ``extra`` as
    for ``after_code``."""
    j = page.journey
    try:
        status = await journey.standing(ctx, j.request.id)
    except (RPCError, RuntimeError) as exc:
        if temporal_unavailable(exc):
            return unavailable(page)
        if isinstance(exc, RuntimeError):
            raise
        return render("ended", page=page, status=410)
    if j.subject.id not in status.otp_passed:
        return render("otp", page=page, status=403, error=page.t("session_expired"))
    identity = identity_state(j.request.security_level, status.identity.get(j.subject.id))
    return after_code(page, identity, session, **extra)


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
