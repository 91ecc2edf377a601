"""Approvals (the SDK's "resources") and workflows (its "groups") of an organization: create, add
a version, archive, list; and the credentials ``POST /request`` makes of them (docs/approvals.md).

Every spec is checked here whatever surface it came from (the command line, the dashboard): its
model (``wire.approvals``) again, a DOCUMENT's PDF with pypdf, a POLICY's action against the
organization's newest published version. Refusals are ``services.errors``; nothing is stored then.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from core.actors import Actor
from core.ids import is_object_id
from core.text import quote_input
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import actions as action_store
from store import approval_credentials
from store import approvals as store
from store.approvals import ApprovalView as ApprovalView
from store.approvals import Filter as Filter
from store.approvals import WorkflowView as WorkflowView
from store.requests import ApprovalSource, NewCredential
from trust.credentials import sri_sha256
from wire.approvals import (
    APPROVAL_TYPES,
    MAX_PDF_BYTES,
    MAX_PDF_PAGES,
    ApprovalPlacement,
    ApprovalSpec,
    WorkflowSpec,
)
from wire.inline_credentials import compact_json

logging.getLogger("pypdf").setLevel(logging.ERROR)  # a broken PDF is refused, not logged


def _checked(spec: ApprovalSpec) -> ApprovalSpec:
    """The spec validated again from its dict form: a surface may have built it without checks."""
    try:
        return ApprovalSpec.model_validate(spec.model_dump(by_alias=True, exclude_none=True))
    except ValidationError as exc:
        raise Invalid(
            [f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in exc.errors()]
        ) from None


def pdf_facts(pdf: bytes) -> dict[str, Any]:
    """A DOCUMENT's PDF checked: at most 5 MB, a PDF pypdf reads, not encrypted, 1 to 200 pages;
    its digest, size and page count. ``Invalid`` otherwise."""
    from pypdf import PdfReader  # imported when a PDF comes: it is slow to load
    from pypdf.errors import PyPdfError

    if len(pdf) > MAX_PDF_BYTES:
        raise Invalid(f"the PDF is {len(pdf)} bytes; at most {MAX_PDF_BYTES}")
    if not pdf.startswith(b"%PDF-"):
        raise Invalid("the document is not a PDF (it does not start with %PDF-)")
    try:
        reader = PdfReader(io.BytesIO(pdf), strict=False)
        if reader.is_encrypted:
            raise Invalid("the PDF is encrypted: give it unencrypted")
        pages = len(reader.pages)
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise Invalid(f"the PDF cannot be read: {quote_input(str(exc))}") from None
    if not 1 <= pages <= MAX_PDF_PAGES:
        raise Invalid(f"the PDF has {pages} pages; 1 to {MAX_PDF_PAGES}")
    return {"digestSRI": sri_sha256(pdf), "size": len(pdf), "pages": pages}


def _content(ctx: Context, org_id: str, spec: ApprovalSpec, pdf: bytes | None) -> dict[str, Any]:
    """What the version stores of ``spec`` (and ``pdf``), every problem refused."""
    if spec.type != "DOCUMENT" and pdf is not None:
        raise Invalid(f"a {spec.type} approval takes no PDF")
    content = spec.content()
    if spec.type == "DOCUMENT":
        if pdf is None:
            raise Invalid("a DOCUMENT approval needs its PDF")
        facts = pdf_facts(pdf)
        pages = facts["pages"]
        beyond = [
            f"placements.{i}.pageIndex: page {p.pageIndex} is off the PDF, which has {pages} "
            f"page{'s' if pages != 1 else ''} (pageIndex counts from 0)"
            for i, p in enumerate(spec.placements or ())
            if p.pageIndex >= pages
        ]
        if beyond:
            raise Invalid(beyond)
        content["pdf"] = facts
    if spec.type == "POLICY":
        assert spec.action is not None
        _, problems = action_store.pin_for_request(
            ctx.engine, org_id, spec.action.id, spec.action.userParams, where="action"
        )
        if problems:
            raise Invalid(problems)
    return content


def _new(ctx: Context, org_id: str, spec: ApprovalSpec, pdf: bytes | None) -> store.NewVersion:
    spec = _checked(spec)
    return store.NewVersion(
        name=spec.name,
        type=spec.type,
        content=_content(ctx, org_id, spec, pdf),
        description=spec.description,
        internal_id=spec.internalId,
        pdf=pdf,
    )


def _approval_id(approval_id: str) -> str:
    if not is_object_id(approval_id):
        raise Invalid(f"{quote_input(approval_id)} is not an approval id (24 lower-case hex characters)")
    return approval_id


def create(
    ctx: Context, actor: Actor, org_id: str, spec: ApprovalSpec, pdf: bytes | None = None
) -> ApprovalView:
    """A new active approval with ``spec`` (and a DOCUMENT's ``pdf``) as version 1."""
    new = _new(ctx, org_id, spec, pdf)
    try:
        return store.create_approval(ctx.engine, org_id, new, actor=str(actor))
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc


def new_version(
    ctx: Context, actor: Actor, org_id: str, approval_id: str, spec: ApprovalSpec, pdf: bytes | None = None
) -> ApprovalView:
    """The approval's next version, current from now on: requests made before keep theirs."""
    new = _new(ctx, org_id, spec, pdf)
    try:
        return store.add_version(ctx.engine, org_id, _approval_id(approval_id), new, actor=str(actor))
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.Refused as exc:
        raise Conflict(str(exc)) from exc


def archive(ctx: Context, actor: Actor, org_id: str, approval_id: str) -> None:
    try:
        store.archive_approval(ctx.engine, org_id, _approval_id(approval_id), actor=str(actor))
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc


def _filter(query: Filter) -> Filter:
    bad = [t for t in query.types if t not in APPROVAL_TYPES]
    if bad:
        raise Invalid(f"types: {quote_input(bad[0])} is not one of {', '.join(APPROVAL_TYPES)}")
    for name, value in (("search", query.search), ("internalId", query.internal_id)):
        if value is not None and "\x00" in value:
            raise Invalid(f"{name} must not contain NUL characters")
    return Filter(**{**query.__dict__, "types": tuple(dict.fromkeys(query.types))})


async def find(ctx: Context, org_id: str, query: Filter) -> tuple[list[ApprovalView], int]:
    """A page of the organization's approvals and how many match in all."""
    return await asyncio.to_thread(store.list_approvals, ctx.engine, org_id, _filter(query))


def get(ctx: Context, org_id: str, approval_id: str) -> ApprovalView:
    view = store.get_approval(ctx.engine, org_id, _approval_id(approval_id))
    if view is None:
        raise NotFound(f"approval {approval_id} not found")
    return view


async def document(ctx: Context, org_id: str, approval_id: str, number: int | None = None) -> bytes:
    """A DOCUMENT approval's PDF, of version ``number`` (the current one by default)."""
    version = await asyncio.to_thread(store.version_of, ctx.engine, org_id, _approval_id(approval_id), number)
    if version is None or version.pdf is None:
        raise NotFound(f"approval {approval_id} has no such document")
    return version.pdf


def create_workflow(ctx: Context, actor: Actor, org_id: str, spec: WorkflowSpec) -> WorkflowView:
    """A new workflow of the organization's active approvals, in the order given."""
    try:
        spec = WorkflowSpec.model_validate(spec.model_dump())
    except ValidationError as exc:
        raise Invalid([f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]) from None
    try:
        return store.create_workflow(
            ctx.engine, org_id, spec.name, spec.description, spec.approvals, actor=str(actor)
        )
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.Refused as exc:
        raise Conflict(str(exc)) from exc


def archive_workflow(ctx: Context, actor: Actor, org_id: str, workflow_id: str) -> None:
    try:
        store.archive_workflow(ctx.engine, org_id, _approval_id(workflow_id), actor=str(actor))
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc


async def find_workflows(ctx: Context, org_id: str, query: Filter) -> tuple[list[WorkflowView], int]:
    return await asyncio.to_thread(store.list_workflows, ctx.engine, org_id, _filter(query))


# --- what POST /request makes of them -------------------------------------------------------------


def document_url(approval_id: str, number: int) -> str:
    """Where the caller fetches a version's PDF (``GET /approvals/{id}/document``)."""
    return f"/approvals/{approval_id}/document?version={number}"


def pdf_item(label: str, pdf: dict[str, Any], **facts: Any) -> dict[str, Any]:
    """The data item a DOCUMENT credential signs of its PDF (``pdf_facts``): the PDF's digest as its
    value, its facts (and ``facts``: the approval version it came from) as its one field."""
    fields = {"digestSRI": pdf["digestSRI"], "pages": pdf["pages"], "size": pdf["size"], **facts}
    return {"label": label, "type": "PDF", "value": pdf["digestSRI"], "hidden": False, "fields": [fields]}


def json_item(label: str, value: dict[str, Any]) -> dict[str, Any]:
    """The data item a JSON approval's (or inline JSON credential's) object is signed as."""
    return {"label": label, "type": "JSON", "value": compact_json(value), "hidden": False, "fields": []}


@dataclass(frozen=True)
class Made:
    """The credentials made of the approvals a request names, in order, and every problem."""

    credentials: list[NewCredential]
    problems: list[str]
    forms: int = 0  # how many are FORMs (filled in by one subject)
    # by position in ``credentials``: a DOCUMENT approval's placements as its version keeps them
    # (``signer`` an index into the request's contacts, resolved by ``placed``) and how it was named
    placements: dict[int, tuple[str, str, list[dict[str, Any]]]] = field(default_factory=dict)


def _credential(
    ctx: Context, org_id: str, taken: store.Taken, where: str
) -> tuple[NewCredential | None, list[str]]:
    approval, version = taken.approval, taken.version
    content = version.content
    source = ApprovalSource(approval.id, version.id, version.number, approval.type, taken.workflow_id)
    base = NewCredential("DOCUMENT", version.name, version.description, approval.internal_id, source=source)
    if approval.type == "POLICY":
        action = content["action"]
        pin, problems = action_store.pin_for_request(
            ctx.engine, org_id, action["id"], action.get("userParams") or {}, where=f"{where}.action"
        )
        if pin is None:
            return None, problems
        bounds, problems = action_store.bounds_for_pin(ctx.engine, pin, where=f"{where}.action")
        if problems:
            return None, problems
        return replace(base, resource_type="POLICY", action=pin, limits=bounds), []
    if approval.type == "DOCUMENT":
        pdf = content["pdf"]
        facts = {
            "approvalId": approval.id,
            "version": version.number,
            "url": document_url(approval.id, version.number),
        }
        return replace(base, data=[pdf_item(version.name, pdf, **facts)]), []
    if approval.type == "JSON":
        return replace(base, data=[json_item(version.name, content["json"])]), []
    items = [
        {"label": f["label"], "type": f"FORM:{f['type']}", "value": "", "hidden": False, "fields": [f]}
        for f in content["fields"]
    ]
    return replace(base, data=items), []


def credentials_for_request(
    ctx: Context, org_id: str, approval_ids: list[str], workflow_ids: list[str]
) -> Made:
    """The credentials of the approvals named (``resourcesIds``), then of each workflow's
    (``groupIds``) in its order, each from its approval's current version; or every problem: an
    unknown or another organization's id, an archived approval or workflow, an action that no
    longer takes the approval's userParams."""
    bad = [
        f"resourcesIds.{i}: {quote_input(a)} is not an approval id"
        for i, a in enumerate(approval_ids)
        if not is_object_id(a)
    ]
    bad += [
        f"groupIds.{i}: {quote_input(g)} is not a workflow id"
        for i, g in enumerate(workflow_ids)
        if not is_object_id(g)
    ]
    if bad:
        return Made([], bad)
    taken, problems = store.take_for_request(ctx.engine, org_id, approval_ids, workflow_ids)
    made: list[NewCredential] = []
    placements: dict[int, tuple[str, str, list[dict[str, Any]]]] = {}
    for i, item in enumerate(taken):
        credential, found = _credential(ctx, org_id, item, f"approvals.{i}")
        problems += found
        if credential is not None:
            kept = item.version.content.get("placements") if item.approval.type == "DOCUMENT" else None
            if kept:
                placements[len(made)] = (item.where, item.approval.id, list(kept))
            made.append(credential)
    return Made(made, problems, sum(1 for t in taken if t.approval.type == "FORM"), placements)


def placed(made: Made, contacts: list[str]) -> tuple[list[NewCredential], list[str]]:
    """The credentials ``made``, each DOCUMENT approval's placements given to the request's
    ``contacts`` (normalized, in the request's order): ``signer`` n is the n-th contact, and each
    becomes a credential placement as an inline one is stored (``PlacementIn.stored``). A signer
    beyond the contacts is a problem naming the approval (as the request named it)."""
    credentials, problems = list(made.credentials), []
    for index, (where, approval_id, kept) in made.placements.items():
        stored: list[dict[str, Any]] = []
        for j, raw in enumerate(kept):
            try:  # checked when the version was made; checked again where it is used
                placement = ApprovalPlacement.model_validate(raw)
            except ValidationError:
                problems.append(f"{where}: approval {approval_id} placements.{j} is not a placement")
                continue
            if placement.signer >= len(contacts):
                count = len(contacts)
                problems.append(
                    f"{where}: approval {approval_id} placements.{j}.signer is {placement.signer}, but "
                    f"the request names {count} contact{'s' if count != 1 else ''} (signer counts from 0)"
                )
                continue
            stored.append(placement.stored(contacts[placement.signer]))
        credentials[index] = replace(credentials[index], placements=stored)
    return credentials, problems


def sources(ctx: Context, credential_ids: list[str]) -> dict[str, Any]:
    """The approval version each credential was made from, by credential id."""
    return approval_credentials.sources_of(ctx.engine, credential_ids)


async def credential_pdf(ctx: Context, request_id: str, credential_id: str) -> bytes | None:
    """The PDF a DOCUMENT credential of the request signs (its first data item ``{type: PDF}``,
    ``pdf_item``): the PDF it was given inline (``CredentialIn.pdf``) or that of the DOCUMENT
    approval version it was made from, the same bytes either way; None for any other credential.
    What draws a credential's placements on its PDF reads the PDF here."""
    return await asyncio.to_thread(
        approval_credentials.document_of_credential, ctx.engine, request_id, credential_id
    )


async def subject_document(ctx: Context, request_id: str, credential_id: str) -> bytes:
    """The PDF a DOCUMENT credential of the request names (its subject reads it on the approval
    page before deciding): ``credential_pdf``; ``NotFound`` for any other credential."""
    pdf = await credential_pdf(ctx, request_id, credential_id)
    if pdf is None:
        raise NotFound("No document")
    return pdf


@dataclass(frozen=True)
class CredentialDocument:
    """The PDF of the DOCUMENT approval a credential was made from: its digest, and how to read it
    (a database read, done only when the credential's PDF is drawn)."""

    digest_sri: str
    read: Callable[[], bytes]


async def credential_document(ctx: Context, request_id: str, credential_id: str) -> CredentialDocument | None:
    """The PDF a DOCUMENT credential of the request signs, given inline or by the DOCUMENT approval
    it was made from (its digest, and a reader run on the renderer's pool); None for any other."""
    digest = await asyncio.to_thread(
        approval_credentials.document_digest_of_credential, ctx.engine, request_id, credential_id
    )
    if digest is None:
        return None

    def read() -> bytes:
        pdf = approval_credentials.document_of_credential(ctx.engine, request_id, credential_id)
        if pdf is None:
            raise LookupError(f"the PDF of credential {credential_id} is gone")
        return pdf

    return CredentialDocument(digest, read)
