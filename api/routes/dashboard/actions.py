"""Actions (owners and developers, CONTRACT 6): the organization's actions with their versions; an
action's name and description, its versions with their state, digestSRI and mandates, a new
version, deletion while nothing names it; the version editor of a draft (typed params, named CEL
rules, "Check", "Try it", "Publish") and a published version, which no form can change.

The editor works without JavaScript: "Check" re-renders the page with each problem beside its
param or rule. Its script only adds a check as one types, posting the form to ``.../check`` (the
session's CSRF token in ``X-CSRF-Token``), which answers the same problems as JSON. Both run
``services.action_drafts.check``: the checks publishing runs. Paths carry an action's UUID and a
version's number, both matched by pattern before anything is looked up; another organization's
action is not found, exactly like a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.routes.dashboard import actions_version
from api.routes.dashboard.action_snippet import snippets
from api.routes.dashboard.actions_form import ACTION_ROLES, action_id_of, form_value, key_of, posted, said
from api.routes.dashboard.common import form_by, member_page, not_found, org_of, signed_in, when
from core.kinds import ActionVersionStatus
from services import actions, members
from services.context import Context, run_blocking
from services.errors import Conflict, Invalid, NotFound
from store.tables import Member

router = APIRouter()
router.include_router(actions_version.router)

NOTICES = {
    "deleted": "The action is deleted.",
    "saved": "The name and description are saved; the drafts carry them too.",
}


# --- the list, creating ---------------------------------------------------------------------------


def _list_html(ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any) -> HTMLResponse:
    listed = [
        {
            "key": key_of(view.action.id),
            "id": view.action.id,
            "name": view.action.name,
            "description": view.action.description or "",
            "created": when(view.action.created_at),
            "versions": [(v.number, v.status) for v in view.versions],
        }
        for view in actions.overview(ctx, members.actor_of(member), org_of(member))
    ]
    return member_page(
        ctx,
        member,
        token,
        "dashboard/actions.html",
        "actions",
        status=status,
        title="Actions · Mandatum",
        actions=listed,
        **extra,
    )


@router.get("/dashboard/actions", response_class=HTMLResponse)
async def actions_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, ACTION_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    return await run_blocking(ctx, partial(_list_html, ctx, member, token, notice=NOTICES.get(notice or "")))


@router.post("/dashboard/actions", response_class=HTMLResponse)
async def create_action(request: Request, ctx: ContextDep) -> Response:
    form = await posted(request)
    found = await form_by(request, ctx, form_value(form, "csrf", 100), ACTION_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    name, description = form_value(form, "name", 1000), form_value(form, "description", 10_000)
    try:
        action, _ = await run_blocking(
            ctx,
            actions.new_action,
            ctx,
            members.actor_of(member),
            org_of(member),
            name,
            description,
        )
    except Invalid as exc:
        return await run_blocking(
            ctx,
            partial(
                _list_html,
                ctx,
                member,
                token,
                status=400,
                error=said(exc.message),
                typed=(name, description),
            ),
        )
    return RedirectResponse(
        f"/dashboard/actions/{key_of(action.id)}/versions/1?notice=created", status_code=303
    )


# --- one action ------------------------------------------------------------------------------------


def _action_html(
    ctx: Context, member: Member, token: str, action_id: str, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    """The action's page; raises NotFound for another organization's."""
    found = actions.detail(ctx, members.actor_of(member), org_of(member), action_id)
    versions = [
        {
            "number": use.version.number,
            "status": use.version.status,
            "digest": use.version.digest_sri or "",
            "published": when(use.version.published_at) if use.version.published_at else "",
            "mandates": use.mandates,
        }
        for use in found.versions
    ]
    published = [use for use in found.versions if use.version.status == ActionVersionStatus.PUBLISHED]
    example = (
        snippets(ctx.settings.public_url, action_id, found.action.name, published[-1].spec.user_params)
        if published
        else None
    )
    return member_page(
        ctx,
        member,
        token,
        "dashboard/actions_action.html",
        "actions",
        status=status,
        title=f"{found.action.name} · Actions · Mandatum",
        action=found.action,
        key=key_of(action_id),
        versions=versions,
        undeletable=actions.undeletable(found.credentials, found.mandates) if found.credentials else None,
        example=example,
        example_version=published[-1].version.number if published else None,
        **extra,
    )


async def _action_page(ctx: Context, member: Member, token: str, action_id: str, **extra: Any) -> Response:
    try:
        return await run_blocking(ctx, partial(_action_html, ctx, member, token, action_id, **extra))
    except NotFound:
        return not_found("No such action.")


@router.get("/dashboard/actions/{key}", response_class=HTMLResponse)
async def action_page(request: Request, ctx: ContextDep, key: str, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, ACTION_ROLES)
    if isinstance(found, Response):
        return found
    action_id = action_id_of(key)
    if action_id is None:
        return not_found("No such action.")
    return await _action_page(ctx, *found, action_id, notice=NOTICES.get(notice or ""))


@dataclass(frozen=True)
class _ActionForm:
    form: dict[str, str]
    member: Member
    token: str
    action_id: str


async def _action_form(request: Request, ctx: Context, key: str) -> _ActionForm | Response:
    """A form posted about the action ``key`` by a member who may change actions (origin, CSRF,
    role), or the answer instead: 403, or 404 for a key that names no action."""
    form = await posted(request)
    found = await form_by(request, ctx, form_value(form, "csrf", 100), ACTION_ROLES)
    if isinstance(found, Response):
        return found
    action_id = action_id_of(key)
    if action_id is None:
        return not_found("No such action.")
    return _ActionForm(form, found[0], found[1], action_id)


@router.post("/dashboard/actions/{key}", response_class=HTMLResponse)
async def rename_action(request: Request, ctx: ContextDep, key: str) -> Response:
    sent = await _action_form(request, ctx, key)
    if isinstance(sent, Response):
        return sent
    form, member, token, action_id = sent.form, sent.member, sent.token, sent.action_id
    name, description = form_value(form, "name", 1000), form_value(form, "description", 10_000)
    actor = members.actor_of(member)
    try:
        await run_blocking(
            ctx,
            actions.update,
            ctx,
            actor,
            org_of(member),
            action_id,
            name,
            description,
        )
    except NotFound:
        return not_found("No such action.")
    except Invalid as exc:
        return await _action_page(ctx, member, token, action_id, status=400, error=said(exc.message))
    return RedirectResponse(f"/dashboard/actions/{key}?notice=saved", status_code=303)


@router.post("/dashboard/actions/{key}/versions", response_class=HTMLResponse)
async def add_version(request: Request, ctx: ContextDep, key: str) -> Response:
    sent = await _action_form(request, ctx, key)
    if isinstance(sent, Response):
        return sent
    member, action_id = sent.member, sent.action_id
    actor = members.actor_of(member)
    try:
        made = await run_blocking(ctx, actions.new_version, ctx, actor, org_of(member), action_id)
    except NotFound:
        return not_found("No such action.")
    return RedirectResponse(f"/dashboard/actions/{key}/versions/{made.number}", status_code=303)


@router.post("/dashboard/actions/{key}/delete", response_class=HTMLResponse)
async def delete_action(request: Request, ctx: ContextDep, key: str) -> Response:
    sent = await _action_form(request, ctx, key)
    if isinstance(sent, Response):
        return sent
    form, member, token, action_id = sent.form, sent.member, sent.token, sent.action_id
    if form_value(form, "confirm", 10) != "yes":
        error = "Tick the box to confirm: a deleted action and its versions are gone for good."
        return await _action_page(ctx, member, token, action_id, status=400, error=error)
    actor = members.actor_of(member)
    try:
        await run_blocking(ctx, actions.delete, ctx, actor, org_of(member), action_id)
    except NotFound:
        return not_found("No such action.")
    except Conflict as exc:
        return await _action_page(ctx, member, token, action_id, status=409, error=said(exc.message))
    return RedirectResponse("/dashboard/actions?notice=deleted", status_code=303)
