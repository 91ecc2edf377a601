"""API keys (owners and developers): create (a name, an optional description, an expiry in days),
rename or re-describe, rotate the signature secret (the old one works 24 hours more, CONTRACT 1),
revoke; the key and secret shown once. Each key shows when it last signed an accepted call, to the
minute (``api.key_use``).

A form that makes a secret answers with a redirect (post, redirect, get), so reloading the page
never makes another: the secret travels to the page once, encrypted under the service's key in a
short-lived HttpOnly cookie bound to the member, which that page clears."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard import shown_once
from api.routes.dashboard.common import (
    BUILDERS,
    form_by,
    not_found,
    org_of,
    page,
    signed_in,
    when,
)
from services import member_sessions, members
from services import orgs as organizations
from services.context import Context, run_blocking, utcnow
from services.errors import Invalid, NotFound
from store.tables import Member

router = APIRouter()

KEY_ROLES = BUILDERS
KEY_ID_RE = re.compile(r"[0-9a-f]{24}")
MAX_KEY_DAYS = 3650
DAYS_RE = re.compile(r"[0-9]{1,4}")
LABEL_FORM_MAX = 2000  # what a form field may carry; the service says what a name or description may be
KEY_NOTICES = {
    "revoked": "The key is revoked: calls signed with it are refused from now on.",
    "edited": "The key's name and description are saved.",
}
UNNAMED = "(unnamed)"
ISSUED_COOKIE = "mandatum_issued_key"
ISSUED_PATH = "/dashboard/keys"


def _issued_redirect(
    ctx: Context, member: Member, issued: organizations.IssuedKey, rotated: bool
) -> Response:
    """303 to the keys page, which shows the key and secret once (``shown_once``)."""
    shown = {
        "rotated": rotated,
        "issued": {
            "key_id": issued.key_id,
            "api_key": issued.api_key,
            "signature_secret": issued.signature_secret,
            "name": issued.name,
            "description": issued.description,
        },
    }
    return shown_once.redirect_showing(ctx, member, ISSUED_PATH, ISSUED_COOKIE, shown)


def _key_status(key: Any, now: datetime) -> str:
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "active"


async def _keys_page(ctx: Context, member: Member, token: str, **extra: Any) -> HTMLResponse:
    """``_keys_html`` in a thread (it reads the database)."""
    return await run_blocking(ctx, partial(_keys_html, ctx, member, token, **extra))


def _keys_html(ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any) -> HTMLResponse:
    now = utcnow()
    keys = [
        {
            "id": k.id,
            "name": k.name,
            "description": k.description,
            "prefix": k.key_prefix,
            "created": when(k.created_at),
            "expires": when(k.expires_at) if k.expires_at else "never",
            "rotated": when(k.rotated_at) if k.rotated_at else "",
            "last_used": when(k.last_used_at) if k.last_used_at else "never",
            "status": _key_status(k, now),
        }
        for k in organizations.list_keys(ctx, org_of(member))
    ]
    return page(
        "dashboard/keys.html",
        status=status,
        title="API keys · Mandatum",
        member=member,
        org=organizations.get_organization(ctx, org_of(member)),
        csrf=member_sessions.csrf_token(ctx, token),
        keys=keys,
        max_days=MAX_KEY_DAYS,
        max_name=organizations.MAX_KEY_NAME,
        max_description=organizations.MAX_KEY_DESCRIPTION,
        unnamed=UNNAMED,
        section="keys",
        **extra,
    )


@router.get("/dashboard/keys", response_class=HTMLResponse)
async def keys_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, KEY_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    shown = shown_once.taken(ctx, member, request, ISSUED_COOKIE)
    if shown is None:
        answer = await _keys_page(ctx, member, token, notice=KEY_NOTICES.get(notice or ""))
    else:
        answer = await _keys_page(ctx, member, token, **shown)
    return shown_once.cleared(ctx, request, answer, ISSUED_COOKIE, ISSUED_PATH)  # a reload: the list alone


@router.post("/dashboard/keys", response_class=HTMLResponse)
async def create_key(
    request: Request,
    ctx: ContextDep,
    csrf: Annotated[str, Form(max_length=100)] = "",
    days: Annotated[str, Form(max_length=10)] = "",
    name: Annotated[str, Form(max_length=LABEL_FORM_MAX)] = "",
    description: Annotated[str, Form(max_length=LABEL_FORM_MAX)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, KEY_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    typed = {"name": name, "description": description, "days": days}
    expires, days = None, days.strip()
    if days:
        if not DAYS_RE.fullmatch(days) or not 1 <= int(days) <= MAX_KEY_DAYS:  # ASCII digits only
            error = f"The expiry is a whole number of days from 1 to {MAX_KEY_DAYS}, or empty for none."
            return await _keys_page(ctx, member, token, status=400, error=error, typed=typed)
        expires = utcnow() + timedelta(days=int(days))
    actor = members.actor_of(member)
    create = partial(organizations.create_key, name=name, description=description)
    try:
        issued = await run_blocking(ctx, create, ctx, actor, org_of(member), expires)
    except Invalid as exc:
        return await _keys_page(ctx, member, token, status=400, error=str(exc), typed=typed)
    return _issued_redirect(ctx, member, issued, rotated=False)


@router.post("/dashboard/keys/{key_id}/edit", response_class=HTMLResponse)
async def edit_key(
    request: Request,
    ctx: ContextDep,
    key_id: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    name: Annotated[str, Form(max_length=LABEL_FORM_MAX)] = "",
    description: Annotated[str, Form(max_length=LABEL_FORM_MAX)] = "",
) -> Response:
    """A new name and description for a key (``API_KEY_EDITED`` when they change)."""
    found = await form_by(request, ctx, csrf, KEY_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    if not KEY_ID_RE.fullmatch(key_id):
        return not_found()
    actor, org_id = members.actor_of(member), org_of(member)
    edit = partial(organizations.describe_key, org_id=org_id)
    try:
        await run_blocking(ctx, edit, ctx, actor, key_id, name, description)
    except NotFound:
        return not_found("No such API key.")
    except Invalid as exc:  # the key's form shown open again, as typed
        editing = {"id": key_id, "name": name, "description": description}
        return await _keys_page(ctx, member, token, status=400, error=str(exc), editing=editing)
    return RedirectResponse("/dashboard/keys?notice=edited", status_code=303)


@router.post("/dashboard/keys/{key_id}/{change}", response_class=HTMLResponse)
async def change_key(
    request: Request,
    ctx: ContextDep,
    key_id: str,
    change: str,
    csrf: Annotated[str, Form(max_length=100)] = "",
    confirm: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    found = await form_by(request, ctx, csrf, KEY_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    if change not in ("rotate", "revoke") or not KEY_ID_RE.fullmatch(key_id):
        return not_found()
    actor, org_id = members.actor_of(member), org_of(member)
    try:
        if change == "rotate":
            issued = await run_blocking(ctx, organizations.rotate_key, ctx, actor, key_id, org_id)
            return _issued_redirect(ctx, member, issued, rotated=True)
        if confirm != "yes":
            error = "Tick the box to confirm: a revoked key can never be used again."
            return await _keys_page(ctx, member, token, status=400, error=error)
        await run_blocking(ctx, organizations.revoke_key, ctx, actor, key_id, org_id)
    except NotFound:
        return not_found("No such API key.")
    except Invalid as exc:  # a rotation of a revoked key
        return await _keys_page(ctx, member, token, status=409, error=str(exc))
    return RedirectResponse("/dashboard/keys?notice=revoked", status_code=303)
