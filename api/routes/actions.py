"""Actions, read-only (CONTRACT 4 and 6): the caller's published action versions.

Creation, new versions and publishing stay in the dashboard (today the ``mandatum action``
command); drafts are never shown here, and an action with no published version is not found.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from api.deps import CallerDep, ContextDep
from api.errors import ApiError
from api.responses import errors, path_param
from api.versions import VersionedRoute
from services import actions
from store.tables import ActionVersion
from wire import patterns
from wire.action_models import ActionEnvelope, ActionList, ActionOut, ActionVersionOut, ActionVersionPage
from wire.models import QueryBool

router = APIRouter(tags=["actions"], route_class=VersionedRoute)
ONE_ACTION = errors(400, 401, 404, s404="No published action of the caller's organization has this id")
ActionId = Annotated[str, path_param(patterns.ACTION_URN, "The action URN (percent-encoded or not)")]


def _version_out(version: ActionVersion) -> ActionVersionOut:
    content = actions.content_fields(version)
    assert version.digest_sri is not None and version.published_at is not None  # published
    return ActionVersionOut(
        id=version.id,
        number=version.number,
        digestSRI=version.digest_sri,
        publishedAt=version.published_at,
        **content,
    )


def action_out(view: actions.ActionView) -> ActionOut:
    action = view.action
    return ActionOut(
        id=action.id,
        name=action.name,
        description=action.description,
        createdAt=action.created_at,
        currentVersion=view.versions[-1].id,
        versions=[_version_out(v) for v in view.versions],
    )


def _render(action: ActionOut, version: str) -> dict[str, Any]:
    """The action in the caller's version. Each version shows its content verbatim (a description
    or limits it does not have are absent, not null), so a client can recompute the digestSRI from
    it."""
    body = action.model_dump(mode="json")
    for item in body["versions"]:
        for optional in ("description", "limits"):
            if item.get(optional) is None:
                item.pop(optional, None)
    return body


@router.get("/actions", response_model=ActionList, responses=errors(400, 401))
async def list_actions(
    caller: CallerDep,
    ctx: ContextDep,
    pageIndex: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    pageSize: Annotated[int, Query(ge=5, le=100)] = 100,
    search: Annotated[str | None, Query(max_length=100, description="In the name, any case")] = None,
    active: Annotated[
        QueryBool | None,
        Query(description="`true` or `false`: every listed action has a published version (false: none)"),
    ] = None,
) -> Any:
    """The organization's actions that have a published version, oldest first, each with its
    published versions in ascending number; `currentVersion` is the one `POST /request` pins."""
    views = await actions.published_actions(ctx, caller.organization_id)
    if search:
        views = [v for v in views if search.casefold() in v.action.name.casefold()]
    if active is False:
        views = []
    page = views[pageIndex * pageSize : (pageIndex + 1) * pageSize]
    return JSONResponse(
        {
            "data": [_render(action_out(v), caller.api_version) for v in page],
            "totalPages": math.ceil(len(views) / pageSize),
        }
    )


async def _published(ctx: ContextDep, caller: CallerDep, action_id: str) -> actions.ActionView:
    if not actions.is_action_urn(action_id):
        raise ApiError(400, "actionId must be an action URN urn:via:action:<uuid>")
    view = await actions.published_action(ctx, caller.organization_id, action_id)
    if view is None:
        raise ApiError(404, f"Action {action_id} not found")
    return view


@router.get("/actions/{actionId}", response_model=ActionEnvelope, responses=ONE_ACTION)
async def get_action(actionId: ActionId, caller: CallerDep, ctx: ContextDep) -> Any:
    """One action with its published versions (`actionId` may be percent-encoded)."""
    view = await _published(ctx, caller, actionId)
    return JSONResponse({"data": _render(action_out(view), caller.api_version)})


@router.get("/actions/version/{actionId}", response_model=ActionVersionPage, responses=ONE_ACTION)
async def list_action_versions(
    actionId: ActionId,
    caller: CallerDep,
    ctx: ContextDep,
    pageIndex: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    pageSize: Annotated[int, Query(ge=5, le=100)] = 100,
) -> Any:
    """A page of an action's published versions in ascending number, each naming its action
    (`actionId`)."""
    view = await _published(ctx, caller, actionId)
    versions = _render(action_out(view), caller.api_version)["versions"]
    page = versions[pageIndex * pageSize : (pageIndex + 1) * pageSize]
    return JSONResponse(
        {
            "data": [{**v, "actionId": view.action.id} for v in page],
            "totalPages": math.ceil(len(versions) / pageSize),
        }
    )
