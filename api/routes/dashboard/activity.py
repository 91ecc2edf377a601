"""The organization's audit trail in the dashboard (issue 14, item 7): every record, newest first,
filtered as ``GET /activity`` filters (record type, request, UTC days), and a check of the whole
chain on request (every record's sequence, link to its predecessor, hash and signature). Every
member may read it; the check names who asked only in its answer, as reading changes nothing."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from api.deps import ContextDep
from api.routes.dashboard.common import EVERYONE, form_by, org_of, page_number, pager, show, signed_in, when
from api.routes.dashboard.csv_export import MAX_ROWS, csv_response, csv_text
from core.ids import is_object_id
from services import audit, members
from services.audit import RECORD_TYPES, ActivityFilter, details_of
from services.context import Context, run_blocking
from services.errors import Unavailable
from store.tables import Member
from wire.dates import day_range

router = APIRouter()
PAGE_SIZE = 50
CSV_PAGE = 500


def _filter(params: Any) -> tuple[ActivityFilter, int]:
    """The filter and page (from 1) of the query; ValueError with the words to show."""
    types = [t for t in params.getlist("type") if t]  # "" is the form's "every type"
    if any(t not in RECORD_TYPES for t in types):
        raise ValueError("type is one of the record types listed")
    request_id = (params.get("requestId") or "").strip() or None
    if request_id is not None and not is_object_id(request_id):
        raise ValueError("requestId is 24 lower-case hexadecimal characters")
    date_from = (params.get("dateFrom") or "").strip() or None
    date_to = (params.get("dateTo") or "").strip() or None
    if any(len(d) > 40 for d in (date_from or "", date_to or "")):
        raise ValueError("a date is at most 40 characters")
    start, end = day_range(date_from, date_to)
    page = page_number(params.get("page"))
    where = ActivityFilter(
        types=tuple(dict.fromkeys(types)), request_id=request_id, date_from=start, date_to=end
    )
    return where, page


async def _activity_page(
    ctx: Context, member: Member, token: str, params: Any, *, status: int = 200, **extra: Any
) -> HTMLResponse:
    shown = {name: (params.get(name) or "")[:40] for name in ("requestId", "dateFrom", "dateTo")}
    chosen = [t for t in params.getlist("type") if t in RECORD_TYPES]
    render = partial(
        show,
        ctx,
        member,
        token,
        "dashboard/activity.html",
        "activity",
        title="Activity · Mandatum",
        types=RECORD_TYPES,
        chosen=chosen,
        filters=shown,
        **extra,
    )
    try:
        where, page = _filter(params)
    except ValueError as exc:
        return await render(status=400, error=str(exc), records=[])
    rows, pages = await audit.activity(ctx, org_of(member), where, page - 1, PAGE_SIZE)
    records = [
        {
            "seq": r.seq,
            "at": when(r.created_at),
            "type": r.type,
            "actor": r.actor or "",
            "request": r.request_id or "",
            "credential": r.credential_id or "",
            "details": details_of(r.data),
        }
        for r in rows
    ]
    subjects = await run_blocking(
        ctx, members.subject_names, ctx, org_of(member), [r.actor or "" for r in rows]
    )
    export = f"/dashboard/activity.csv?{params}" if params else "/dashboard/activity.csv"
    return await render(
        status=status, records=records, subject_names=subjects, export=export, **pager(params, page, pages)
    )


CSV_HEADER = ("seq", "at", "type", "actor", "requestId", "credentialId", "data")


@router.get("/dashboard/activity.csv")
async def activity_csv(request: Request, ctx: ContextDep) -> Response:
    """The records the page's filters select, as CSV (at most ``MAX_ROWS``, newest first), with
    each record's data as JSON and each actor as recorded."""
    found = await signed_in(request, ctx, EVERYONE)
    if isinstance(found, Response):
        return found
    member, _ = found
    try:
        where, _ = _filter(request.query_params)
    except ValueError as exc:
        return PlainTextResponse(str(exc), status_code=400)
    rows: list[list[Any]] = []
    for index in range(MAX_ROWS // CSV_PAGE):
        found_rows, pages = await audit.activity(ctx, org_of(member), where, index, CSV_PAGE)
        rows += [
            [
                r.seq,
                r.created_at.isoformat(),
                r.type,
                r.actor or "",
                r.request_id or "",
                r.credential_id or "",
                json.dumps(r.data, ensure_ascii=False, sort_keys=True),
            ]
            for r in found_rows
        ]
        if index + 1 >= pages:
            break
    text = await asyncio.to_thread(csv_text, CSV_HEADER, rows)
    return csv_response("activity.csv", text)


@router.get("/dashboard/activity", response_class=HTMLResponse)
async def activity_page(request: Request, ctx: ContextDep) -> Response:
    found = await signed_in(request, ctx, EVERYONE)
    if isinstance(found, Response):
        return found
    member, token = found
    return await _activity_page(ctx, member, token, request.query_params)


@router.post("/dashboard/activity/check", response_class=HTMLResponse)
async def check_chain(
    request: Request, ctx: ContextDep, csrf: Annotated[str, Form(max_length=100)] = ""
) -> Response:
    """Walk the organization's whole chain (on a thread: ``services.audit.check_chain``) and show
    the outcome above the records; 503 with ``Retry-After`` while other checks fill its threads."""
    found = await form_by(request, ctx, csrf, EVERYONE)
    if isinstance(found, Response):
        return found
    member, token = found
    try:
        result = await audit.check_chain(ctx, members.actor_of(member), org_of(member))
    except Unavailable as exc:
        shown = await _activity_page(ctx, member, token, request.query_params, status=503, error=str(exc))
        shown.headers["Retry-After"] = str(exc.retry_after)
        return shown
    check = {
        "records": result.records,
        "ok": result.broken is None,
        "problem": str(result.broken) if result.broken else "",
    }
    return await _activity_page(ctx, member, token, request.query_params, check=check)
