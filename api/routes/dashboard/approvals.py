"""Approvals and workflows (owners and developers): the organization's approvals with their
current versions, a new approval or version from a spec (JSON or YAML, as ``mandatum approval``
takes: docs/approvals.md) with a DOCUMENT's PDF, archiving; workflows made of approvals in order."""

from __future__ import annotations

import json
from functools import partial
from typing import Annotated, Any

import yaml
from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from api.deps import ContextDep
from api.routes.dashboard.common import BUILDERS, form_by, member_page, org_of, signed_in, when
from services import approvals, members
from services.context import Context, run_blocking
from services.errors import NotFound, ServiceError
from store.tables import Member
from wire.approvals import MAX_PDF_BYTES, ApprovalSpec, WorkflowSpec

router = APIRouter()
MAX_SPEC = 64 * 1024
NOTICES = {
    "created": "The approval was created.",
    "version": "The approval has a new version: new requests take it.",
    "archived": "The approval was archived: no request takes it any more.",
    "workflow": "The workflow was created.",
    "workflow-archived": "The workflow was archived.",
}
Csrf = Annotated[str, Form(max_length=100)]
SpecText = Annotated[str, Form(max_length=MAX_SPEC)]
Pdf = Annotated[UploadFile | None, File()]


async def _page(ctx: Context, member: Member, token: str, *, status: int = 200, **extra: Any) -> HTMLResponse:
    org_id = org_of(member)
    found, _ = await approvals.find(ctx, org_id, approvals.Filter(page_size=100))
    flows, _ = await approvals.find_workflows(ctx, org_id, approvals.Filter(page_size=100))
    rows = [
        {
            "id": v.approval.id,
            "name": v.approval.name,
            "type": v.approval.type,
            "active": v.approval.active,
            "version": v.approval.version,
            "internal_id": v.approval.internal_id,
            "updated": when(v.approval.updated_at),
            "content": json.dumps(v.current.content, ensure_ascii=False, indent=1)[:2000],
        }
        for v in found
    ]
    return await run_blocking(
        ctx,
        partial(
            member_page,
            ctx,
            member,
            token,
            "dashboard/approvals.html",
            "approvals",
            status=status,
            title="Approvals · Mandatum",
            approvals=rows,
            workflows=flows,
            **extra,
        ),
    )


@router.get("/dashboard/approvals", response_class=HTMLResponse)
async def approvals_page(request: Request, ctx: ContextDep, notice: str | None = None) -> Response:
    found = await signed_in(request, ctx, BUILDERS)
    if isinstance(found, Response):
        return found
    return await _page(ctx, *found, notice=NOTICES.get(notice or ""))


def _spec(text: str) -> ApprovalSpec:
    """The spec typed in (JSON, or YAML whose dates are kept as text), checked."""
    try:
        raw = json.loads(text)
    except ValueError:
        try:
            raw = json.loads(json.dumps(yaml.safe_load(text), default=str))
        except (yaml.YAMLError, ValueError) as exc:
            raise ServiceError(f"The spec is neither JSON nor YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ServiceError("The spec is a mapping with name, type and its type's content.")
    try:
        return ApprovalSpec.model_validate(raw)
    except ValidationError as exc:
        raise ServiceError(
            [f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in exc.errors()]
        ) from None


async def _pdf(upload: UploadFile | None) -> bytes | None:
    if upload is None or not upload.filename:
        return None
    data = await upload.read(MAX_PDF_BYTES + 1)
    if len(data) > MAX_PDF_BYTES:
        raise ServiceError(f"The PDF is over {MAX_PDF_BYTES} bytes.")
    return data


async def _change(
    request: Request, ctx: Context, csrf: str, work: Any, notice: str, spec: str = ""
) -> Response:
    found = await form_by(request, ctx, csrf, BUILDERS)
    if isinstance(found, Response):
        return found
    member, token = found
    try:
        await work(member)
    except ServiceError as exc:
        error = exc.message if isinstance(exc.message, str) else " ".join(exc.message)
        status = 404 if isinstance(exc, NotFound) else 400
        return await _page(ctx, member, token, status=status, error=error, spec=spec)
    return RedirectResponse(f"/dashboard/approvals?notice={notice}", status_code=303)


@router.post("/dashboard/approvals", response_class=HTMLResponse)
async def create_approval(
    request: Request, ctx: ContextDep, csrf: Csrf = "", spec: SpecText = "", pdf: Pdf = None
) -> Response:
    async def work(member: Member) -> None:
        parsed, document = _spec(spec), await _pdf(pdf)
        await run_blocking(
            ctx, partial(approvals.create, ctx, members.actor_of(member), org_of(member), parsed, document)
        )

    return await _change(request, ctx, csrf, work, "created", spec)


@router.post("/dashboard/approvals/version", response_class=HTMLResponse)
async def new_version(
    request: Request,
    ctx: ContextDep,
    csrf: Csrf = "",
    approval_id: Annotated[str, Form(max_length=64)] = "",
    spec: SpecText = "",
    pdf: Pdf = None,
) -> Response:
    async def work(member: Member) -> None:
        parsed, document = _spec(spec), await _pdf(pdf)
        actor, org_id = members.actor_of(member), org_of(member)
        await run_blocking(
            ctx, partial(approvals.new_version, ctx, actor, org_id, approval_id, parsed, document)
        )

    return await _change(request, ctx, csrf, work, "version", spec)


@router.post("/dashboard/approvals/{approval_id}/archive", response_class=HTMLResponse)
async def archive_approval(approval_id: str, request: Request, ctx: ContextDep, csrf: Csrf = "") -> Response:
    async def work(member: Member) -> None:
        await run_blocking(
            ctx, partial(approvals.archive, ctx, members.actor_of(member), org_of(member), approval_id)
        )

    return await _change(request, ctx, csrf, work, "archived")


@router.post("/dashboard/workflows", response_class=HTMLResponse)
async def create_workflow(
    request: Request,
    ctx: ContextDep,
    csrf: Csrf = "",
    name: Annotated[str, Form(max_length=200)] = "",
    description: Annotated[str, Form(max_length=2000)] = "",
    approval_ids: Annotated[str, Form(max_length=400)] = "",
) -> Response:
    async def work(member: Member) -> None:
        ids = [i.strip() for i in approval_ids.replace(",", " ").split() if i.strip()]
        try:
            spec = WorkflowSpec(name=name.strip(), description=description.strip() or None, approvals=ids)
        except ValidationError as exc:
            raise ServiceError(
                [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
            ) from None
        await run_blocking(
            ctx, partial(approvals.create_workflow, ctx, members.actor_of(member), org_of(member), spec)
        )

    return await _change(request, ctx, csrf, work, "workflow")


@router.post("/dashboard/workflows/{workflow_id}/archive", response_class=HTMLResponse)
async def archive_workflow(workflow_id: str, request: Request, ctx: ContextDep, csrf: Csrf = "") -> Response:
    async def work(member: Member) -> None:
        actor, org_id = members.actor_of(member), org_of(member)
        await run_blocking(ctx, partial(approvals.archive_workflow, ctx, actor, org_id, workflow_id))

    return await _change(request, ctx, csrf, work, "workflow-archived")
