"""``mandatum approval`` and ``mandatum workflow``: an organization's approvals (FORM, DOCUMENT,
JSON, POLICY) from YAML or JSON spec files, their versions and archiving; workflows of approvals
(docs/approvals.md). Every change goes through ``services.approvals`` as the operator running it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from pydantic import ValidationError

from cli.actions import _NoTimestampLoader
from cli.common import JsonOpt, command_context, echo, emit, fail, operator
from services import approvals
from services.errors import ServiceError
from wire.approvals import MAX_PDF_BYTES, ApprovalSpec, WorkflowSpec

approval_app = typer.Typer(
    help="Approvals (FORM, DOCUMENT, JSON, POLICY): create from a spec file, version, archive, list.",
    no_args_is_help=True,
)
workflow_app = typer.Typer(help="Workflows: approvals requested together, in order.", no_args_is_help=True)

OrgOpt = Annotated[str, typer.Option("--org", help="Organization id.")]
FileOpt = Annotated[Path, typer.Option("--file", help="The approval, as YAML (.yaml, .yml) or JSON.")]
PdfOpt = Annotated[Path | None, typer.Option("--pdf", help="A DOCUMENT approval's PDF (at most 5 MB).")]
ApprovalOpt = Annotated[str, typer.Option("--approval", help="Approval id.")]


def _read_spec(path: Path) -> ApprovalSpec:
    """The approval spec in a file, or exit 1 naming the file and every problem found."""
    suffix = path.suffix.lower()
    if suffix not in {".yaml", ".yml", ".json"}:
        fail(f"{path}: use a .yaml, .yml or .json file")
    try:
        text = path.read_text(encoding="utf-8")
        raw: Any = json.loads(text) if suffix == ".json" else yaml.load(text, Loader=_NoTimestampLoader)  # noqa: S506
    except FileNotFoundError:
        fail(f"{path}: file not found")
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        fail(f"{path}: cannot be read: {exc}")
    if not isinstance(raw, dict):
        fail(f"{path}: the approval must be a mapping with name, type and its type's content")
    try:
        return ApprovalSpec.model_validate(raw)
    except ValidationError as exc:
        lines = [f"  - {'.'.join(map(str, e['loc'])) or 'approval'}: {e['msg']}" for e in exc.errors()]
        fail(f"{path}: the approval is not valid:\n" + "\n".join(lines))


def _read_pdf(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_PDF_BYTES + 1)
    except OSError as exc:
        fail(f"{path}: cannot be read: {exc}")
    if len(data) > MAX_PDF_BYTES:
        fail(f"{path}: the PDF is over {MAX_PDF_BYTES} bytes")
    return data


def _row(view: approvals.ApprovalView) -> dict[str, object]:
    a = view.approval
    return {
        "approvalId": a.id,
        "name": a.name,
        "type": a.type,
        "active": a.active,
        "internalId": a.internal_id,
        "version": a.version,
        "workflowIds": view.workflow_ids,
        "content": view.current.content,
    }


@approval_app.command("create")
def approval_create(org: OrgOpt, file: FileOpt, pdf: PdfOpt = None, as_json: JsonOpt = False) -> None:
    """Create an approval from a spec file (a DOCUMENT with --pdf), as its version 1."""
    ctx = command_context()
    spec, document = _read_spec(file), _read_pdf(pdf)
    try:
        view = approvals.create(ctx, operator(), org, spec, document)
    except ServiceError as exc:
        fail(str(exc))
    emit(_row(view), as_json, f"Approval created ({view.approval.type}, version 1).")


@approval_app.command("version")
def approval_version(
    org: OrgOpt, approval_id: ApprovalOpt, file: FileOpt, pdf: PdfOpt = None, as_json: JsonOpt = False
) -> None:
    """Give an approval its next version from a spec file of the same type: new requests take it,
    earlier ones keep theirs."""
    ctx = command_context()
    spec, document = _read_spec(file), _read_pdf(pdf)
    try:
        view = approvals.new_version(ctx, operator(), org, approval_id, spec, document)
    except ServiceError as exc:
        fail(str(exc))
    emit(_row(view), as_json, f"Version {view.approval.version} added.")


@approval_app.command("archive")
def approval_archive(org: OrgOpt, approval_id: ApprovalOpt) -> None:
    """Archive an approval: no request takes it any more."""
    ctx = command_context()
    try:
        approvals.archive(ctx, operator(), org, approval_id)
    except ServiceError as exc:
        fail(str(exc))
    echo(f"Approval {approval_id} archived.")


def _every(find: Any, ctx: Any, org: str) -> list[Any]:
    import asyncio

    found: list[Any] = []
    page = 0
    while True:
        views, total = asyncio.run(find(ctx, org, approvals.Filter(page_index=page, page_size=100)))
        found += views
        if len(found) >= total or not views:
            return found
        page += 1


@approval_app.command("list")
def approval_list(org: OrgOpt, as_json: JsonOpt = False) -> None:
    """List an organization's approvals, archived ones included."""
    ctx = command_context()
    views = _every(approvals.find, ctx, org)
    if as_json:
        typer.echo(json.dumps([_row(v) for v in views], indent=2))
        return
    for v in views:
        state = "active" if v.approval.active else "archived"
        echo(f"{v.approval.id}  {v.approval.type:<8}  v{v.approval.version}  {state:<8}  {v.approval.name}")


def _workflow_row(view: approvals.WorkflowView) -> dict[str, object]:
    w = view.workflow
    return {
        "workflowId": w.id,
        "name": w.name,
        "description": w.description,
        "active": w.active,
        "approvals": [a.id for a in view.approvals],
    }


@workflow_app.command("create")
def workflow_create(
    org: OrgOpt,
    name: Annotated[str, typer.Option("--name", help="The workflow's name.")],
    approval_ids: Annotated[list[str], typer.Option("--approval", help="An approval id, in order (repeat).")],
    description: Annotated[str | None, typer.Option("--description", help="What it is for.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a workflow of the organization's active approvals, in the order given."""
    ctx = command_context()
    try:
        spec = WorkflowSpec(name=name, description=description, approvals=approval_ids)
    except ValidationError as exc:
        fail(
            "the workflow is not valid:\n" + "\n".join(f"  - {e['loc'][0]}: {e['msg']}" for e in exc.errors())
        )
    try:
        view = approvals.create_workflow(ctx, operator(), org, spec)
    except ServiceError as exc:
        fail(str(exc))
    emit(_workflow_row(view), as_json, "Workflow created.")


@workflow_app.command("archive")
def workflow_archive(
    org: OrgOpt, workflow_id: Annotated[str, typer.Option("--workflow", help="Workflow id.")]
) -> None:
    """Archive a workflow: no request takes it any more (its approvals stay as they are)."""
    ctx = command_context()
    try:
        approvals.archive_workflow(ctx, operator(), org, workflow_id)
    except ServiceError as exc:
        fail(str(exc))
    echo(f"Workflow {workflow_id} archived.")


@workflow_app.command("list")
def workflow_list(org: OrgOpt, as_json: JsonOpt = False) -> None:
    """List an organization's workflows with their approvals in order."""
    ctx = command_context()
    views = _every(approvals.find_workflows, ctx, org)
    if as_json:
        typer.echo(json.dumps([_workflow_row(v) for v in views], indent=2))
        return
    for v in views:
        state = "active" if v.workflow.active else "archived"
        echo(f"{v.workflow.id}  {state:<8}  {v.workflow.name}")
        for a in v.approvals:
            echo(f"  {a.id}  {a.type:<8}  {a.name}")
