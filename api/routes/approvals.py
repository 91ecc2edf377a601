"""Approvals (the SDK's "resources") and workflows (its "groups"), read-only (docs/approvals.md).

They are made with ``mandatum approval`` and ``mandatum workflow``; ``POST /request`` takes them by
id (``resourcesIds``, ``groupIds``). Only the caller's organization's are ever listed.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from api.deps import CallerDep, ContextDep
from api.responses import errors, path_param
from api.versions import VersionedRoute
from services import approvals
from wire.approvals import APPROVAL_TYPES, ApprovalPage, WorkflowPage
from wire.models import QueryBool, iso

router = APIRouter(tags=["approvals"], route_class=VersionedRoute)
ApprovalIdPath = Annotated[str, path_param(r"^[0-9a-f]{24}$", "The approval's id")]
PageIndex = Annotated[int, Query(ge=0, le=1_000_000, description="Zero-based page index")]
PageSize = Annotated[int, Query(ge=5, le=100, description="Items per page, 5 to 100")]
Search = Annotated[str | None, Query(max_length=100, description="In the name, any case")]
Active = Annotated[QueryBool | None, Query(description="`true`: active only; `false`: archived only")]
Types = Annotated[
    list[str] | None,
    Query(
        max_length=10, description=f"One or more of {', '.join(APPROVAL_TYPES)} (repeated or comma-separated)"
    ),
]
InternalId = Annotated[str | None, Query(max_length=255, description="The approval's internalId, exactly")]


def _filter(
    page_index: int,
    page_size: int,
    search: str | None,
    active: bool | None,
    types: list[str] | None,
    internal_id: str | None,
) -> approvals.Filter:
    named = tuple(t.strip() for value in types or () for t in value.split(",") if t.strip())
    return approvals.Filter(page_index, page_size, search or None, active, named, internal_id)


def approval_out(view: approvals.ApprovalView) -> dict[str, Any]:
    """An approval in the newest version's shape: its current version's content by its type."""
    a, v = view.approval, view.current
    content = dict(v.content)
    if a.type == "DOCUMENT":
        content["pdf"] = {**content["pdf"], "url": approvals.document_url(a.id, v.number)}
    return {
        "id": a.id,
        "name": a.name,
        "type": a.type,
        "active": a.active,
        "internalId": a.internal_id,
        "description": a.description,
        "workflowIds": view.workflow_ids,
        "version": a.version,
        "content": content,
        "createdAt": iso(a.created_at),
        "updatedAt": iso(a.updated_at),
    }


def workflow_out(view: approvals.WorkflowView) -> dict[str, Any]:
    w = view.workflow
    return {
        "id": w.id,
        "name": w.name,
        "description": w.description,
        "active": w.active,
        "approvals": [
            {"id": a.id, "name": a.name, "type": a.type, "active": a.active, "internalId": a.internal_id}
            for a in view.approvals
        ],
        "createdAt": iso(w.created_at),
        "updatedAt": iso(w.updated_at),
    }


@router.get("/approvals", response_model=ApprovalPage, responses=errors(400, 401))
async def list_approvals(
    caller: CallerDep,
    ctx: ContextDep,
    pageIndex: PageIndex = 0,
    pageSize: PageSize = 10,
    search: Search = None,
    active: Active = None,
    types: Types = None,
    internalId: InternalId = None,
) -> Any:
    """The organization's approvals (FORM, DOCUMENT, JSON, POLICY), oldest first, each with its
    current version's content: what `POST /request` takes of it by `resourcesIds`."""
    query = _filter(pageIndex, pageSize, search, active, types, internalId)
    found, total = await approvals.find(ctx, caller.organization_id, query)
    return JSONResponse({"data": [approval_out(v) for v in found], "totalPages": math.ceil(total / pageSize)})


@router.get("/approvals/workflow", response_model=WorkflowPage, responses=errors(400, 401))
async def list_workflows(
    caller: CallerDep,
    ctx: ContextDep,
    pageIndex: PageIndex = 0,
    pageSize: PageSize = 10,
    search: Annotated[
        str | None, Query(max_length=100, description="In the workflow's or an approval's name")
    ] = None,
    active: Active = None,
    types: Types = None,
    internalId: InternalId = None,
) -> Any:
    """The organization's workflows, oldest first, each with its approvals in order (`types`,
    `internalId`: workflows listing such an approval): what `POST /request` takes by `groupIds`."""
    query = _filter(pageIndex, pageSize, search, active, types, internalId)
    found, total = await approvals.find_workflows(ctx, caller.organization_id, query)
    return JSONResponse({"data": [workflow_out(v) for v in found], "totalPages": math.ceil(total / pageSize)})


@router.get(
    "/approvals/{approvalId}/document",
    response_class=Response,
    responses={
        200: {
            "description": "The PDF",
            "content": {
                "application/pdf": {
                    "schema": {"type": "string", "format": "binary"},
                    "example": "%PDF-1.3 ... (the PDF's bytes)",
                }
            },
        },
        **errors(
            400, 401, 404, s404="No DOCUMENT approval of the caller's organization has this id and version"
        ),
    },
)
async def approval_document(
    approvalId: ApprovalIdPath,
    caller: CallerDep,
    ctx: ContextDep,
    version: Annotated[
        int | None, Query(ge=1, le=1_000_000, description="Default: the current version")
    ] = None,
) -> Response:
    """A DOCUMENT approval's PDF, the bytes whose `digestSRI` its content and credentials carry."""
    pdf = await approvals.document(ctx, caller.organization_id, approvalId, version)
    return Response(pdf, media_type="application/pdf", headers={"Cache-Control": "no-store"})
