"""The organization's settings (owners and developers; issue 14, item 5): the origins allowed to
embed the approval page in an iframe, how long its VPs stay valid, and the API version it is
pinned to. Each change is checked as the command line checks it (``services.orgs``) and recorded
with the member as actor. Owners also choose whether every member must have a second factor
(issue 30, item 7), with their own password and factor (``services.second_factor.set_required``),
and whether the subject's portal shows the organization's mandates (issue 32)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import (
    BUILDERS,
    client_address,
    form_by,
    org_of,
    refusal_page,
    show,
    signed_in,
)
from core.kinds import MemberRole
from services import members, second_factor
from services import orgs as organizations
from services.context import Context, run_blocking
from services.errors import Invalid
from services.orgs import MAX_MINUTES, MIN_MINUTES
from store.tables import Member
from wire import versioning

router = APIRouter()
MINUTES_RE = re.compile(r"[0-9]{1,2}")
MAX_ORIGINS_TEXT = 4000
NOTICES = {
    "saved": "The settings are saved.",
    "factor-required": (
        "From now on every member needs a second factor: "
        "one without it can only set it up, from their next page on."
    ),
    "factor-optional": "A second factor is now each member's choice.",
    "portal-on": "The subject's portal shows your organization's mandates again.",
    "portal-off": "The subject's portal no longer shows your organization's mandates.",
}


async def _settings_page(ctx: Context, member: Member, token: str, **extra: Any) -> HTMLResponse:
    return await show(
        ctx,
        member,
        token,
        "dashboard/settings.html",
        "settings",
        title="Settings · Mandatum",
        versions=versioning.VERSIONS,
        min_minutes=MIN_MINUTES,
        max_minutes=MAX_MINUTES,
        **extra,
    )


@router.get("/dashboard/settings", response_class=HTMLResponse)
async def settings_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, BUILDERS)
    if isinstance(found, Response):
        return found
    member, token = found
    return await _settings_page(ctx, member, token, notice=NOTICES.get(notice or ""))


@router.post("/dashboard/settings", response_class=HTMLResponse)
async def save_settings(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    origins: Annotated[str, Form(max_length=MAX_ORIGINS_TEXT)] = "",
    minutes: Annotated[str, Form(max_length=10)] = "",
    version: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    """Saves what changed, each setting on its own (a refused one names itself; none is saved then)."""
    found = await form_by(request, ctx, csrf, BUILDERS)
    if isinstance(found, Response):
        return found
    member, token = found
    actor, org_id = members.actor_of(member), org_of(member)
    wanted_origins = [line.strip() for line in origins.splitlines() if line.strip()]
    minutes = minutes.strip()

    def save() -> None:
        org = organizations.get_organization(ctx, org_id)
        if not MINUTES_RE.fullmatch(minutes) or not MIN_MINUTES <= int(minutes) <= MAX_MINUTES:
            raise Invalid(f"the VP lifetime is a whole number of minutes from {MIN_MINUTES} to {MAX_MINUTES}")
        if version and version not in versioning.VERSIONS:
            raise Invalid(f"the API version is one of {', '.join(versioning.VERSIONS)}")
        checked = organizations.check_frame_origins(ctx, wanted_origins)
        if checked != list(org.frame_origins or []):
            organizations.set_frame_origins(ctx, actor, org_id, checked)
        if int(minutes) != org.presentation_minutes:
            organizations.set_presentation_minutes(ctx, actor, org_id, int(minutes))
        if version and version != org.api_version:
            organizations.set_api_version(ctx, actor, org_id, version)

    try:
        await run_blocking(ctx, save)
    except Invalid as exc:
        form = {"origins": origins, "minutes": minutes, "version": version}
        return await _settings_page(ctx, member, token, status=400, error=str(exc), form=form)
    return RedirectResponse("/dashboard/settings?notice=saved", status_code=303)


@router.post("/dashboard/settings/second-factor", response_class=HTMLResponse)
async def require_second_factor(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    required: Annotated[str, Form(max_length=5)] = "",
    password: Annotated[str, Form(max_length=members.MAX_PASSWORD)] = "",
    code: Annotated[str, Form(max_length=40)] = "",
) -> Response:
    """Whether every member must have a second factor (owners, with their password and factor)."""
    found = await form_by(request, ctx, csrf, (MemberRole.OWNER,))
    if isinstance(found, Response):
        return found
    member, token = found
    if required not in ("yes", "no"):
        return await _settings_page(ctx, member, token, status=400, error="Choose yes or no.")
    proof = second_factor.Proof(password, code, client_address(request))
    try:
        await second_factor.set_required(ctx, member, proof, required == "yes")
    except Exception as exc:

        async def render(status: int, error: str) -> HTMLResponse:
            return await _settings_page(ctx, member, token, status=status, factor_error=error)

        return await refusal_page(exc, render, "The dashboard is busy: nothing was changed.")
    notice = "factor-required" if required == "yes" else "factor-optional"
    return RedirectResponse(f"/dashboard/settings?notice={notice}", status_code=303)


@router.post("/dashboard/settings/portal", response_class=HTMLResponse)
async def set_portal(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    enabled: Annotated[str, Form(max_length=5)] = "",
) -> Response:
    """Whether the subject's portal shows the organization's mandates (owners; issue 32)."""
    found = await form_by(request, ctx, csrf, (MemberRole.OWNER,))
    if isinstance(found, Response):
        return found
    member, token = found
    if enabled not in ("yes", "no"):
        return await _settings_page(ctx, member, token, status=400, portal_error="Choose yes or no.")
    actor, org_id = members.actor_of(member), org_of(member)
    await run_blocking(ctx, organizations.set_portal_enabled, ctx, actor, org_id, enabled == "yes")
    notice = "portal-on" if enabled == "yes" else "portal-off"
    return RedirectResponse(f"/dashboard/settings?notice={notice}", status_code=303)
