"""Credential requests: create, read, list, cancel, resend a code, hand out a subject's link.

Every function takes the context and the actor; what it writes names the actor (``REQUEST_CREATED``,
the cancellation's ``canceled_by`` and ``MANDATE_CANCELED``). Refusals are ``services.errors``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from sqlalchemy import Engine

from core import faults
from core.actors import Actor
from core.ids import is_object_id
from core.kinds import RequestStatus, UpdateRefusal
from core.origins import BadOrigin, check_origin, header_origins
from core.otp import approval_url
from core.text import quote_input
from orchestration.temporal import start_request_workflow, temporal_unavailable
from orchestration.updates import Refused as UpdateRefused
from orchestration.updates import Unavailable as UpdateUnavailable
from orchestration.updates import run_update
from services.audit import optional_reason
from services.context import Context
from services.errors import Conflict, Invalid, NotFound, Refused, TooMany, Unavailable
from services.request_validation import PageCount, validated
from store import audit_queries, guards, orgs
from store import request_queries as queries
from store import requests as store
from store import webhooks as webhook_store
from store.db import run_db
from store.tables import AuditRecord, WebhookEvent
from trust.did import web_subject_did
from wire.contacts import normalize_contact
from wire.dates import day_range
from wire.models import CreateRequestIn
from wire.views import request_out
from workflows.ids import request_workflow_id
from workflows.messages import (
    RESEND_INTERVAL_SECONDS,
    CancelInput,
    CancelResult,
    RecordDecisionInput,
    ResendOtpInput,
    SendOtpResult,
)

log = logging.getLogger("mandatum.services.requests")
T = TypeVar("T")
CODE_UNCONFIRMED = "The code was not confirmed sent yet; retry shortly"


@dataclass(frozen=True)
class Created:
    """What ``POST /request`` answers: the record envelope (newest shape) and its status; a replayed
    Idempotency-Key answers the stored response."""

    response: dict[str, Any]
    status_code: int
    bundle: store.RequestBundle | None = None  # None for a replay


# --- reading ------------------------------------------------------------------------------------


def check_request_id(request_id: str) -> None:
    """Request ids are 24 lower-case hex characters (CONTRACT 3)."""
    if not is_object_id(request_id):
        raise Invalid("requestId must be a 24-character lower-case hexadecimal ObjectId")


async def get(ctx: Context, org_id: str, request_id: str) -> store.RequestBundle:
    """The organization's request, or ``NotFound`` (another organization's request is not found
    either)."""
    check_request_id(request_id)
    bundle = await asyncio.to_thread(queries.get_request, ctx.engine, org_id, request_id)
    if bundle is None:
        raise NotFound(f"Request {request_id} not found")
    return bundle


async def find(
    ctx: Context, org_id: str, filters: queries.RequestFilter
) -> tuple[list[store.RequestBundle], int]:
    """A page of the organization's requests and how many match in all."""
    return await asyncio.to_thread(queries.list_requests, ctx.engine, org_id, filters)


@dataclass(frozen=True)
class RequestQuery:
    """The filters of ``GET /request`` (and the dashboard's requests page) as the caller gave them."""

    page_index: int = 0
    page_size: int = 10
    search: str | None = None
    contact: str | None = None
    did: str | None = None
    subject_internal_id: str | None = None
    internal_id: str | None = None
    credential_internal_id: str | None = None
    security_levels: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    statuses: tuple[str, ...] = ()  # the dashboard's (GET /request has no status filter)


def request_filter(ctx: Context, query: RequestQuery) -> queries.RequestFilter | None:
    """The store's filter for ``query``: ``Invalid`` for a value no filter takes; None when it can
    match nothing (a DID that names no subject of this service)."""
    for name, value in (
        ("search", query.search),
        ("subjectInternalId", query.subject_internal_id),
        ("internalId", query.internal_id),
        ("credentialInternalId", query.credential_internal_id),
    ):
        if value is not None and "\x00" in value:
            raise Invalid(f"{name} must not contain NUL characters")
    try:
        date_from, date_to = day_range(query.date_from, query.date_to)
    except ValueError as exc:
        raise Invalid(str(exc)) from None
    subject_id = None
    if query.did is not None:
        subject_id = queries.subject_id_from_did(query.did)
        # only this service's subject DIDs name subjects (the host is part of the DID)
        if subject_id is None or web_subject_did(ctx.settings.public_url, subject_id) != query.did:
            return None
    contact = None
    if query.contact is not None:
        try:
            contact = normalize_contact(query.contact)[0]
        except ValueError as exc:
            raise Invalid(f"contact: {exc}") from exc
    return queries.RequestFilter(
        page_index=query.page_index,
        page_size=query.page_size,
        search=query.search or None,
        contact=contact,
        did_subject_id=subject_id,
        subject_internal_id=query.subject_internal_id,
        internal_id=query.internal_id,
        credential_internal_id=query.credential_internal_id,
        security_levels=tuple(dict.fromkeys(query.security_levels)),
        date_from=date_from,
        date_to=date_to,
        statuses=_statuses(query.statuses),
    )


def _statuses(given: Sequence[str]) -> tuple[str, ...]:
    unknown = [s for s in given if s not in set(RequestStatus)]
    if unknown:
        raise Invalid(f"status is one of {', '.join(RequestStatus)}")
    return tuple(dict.fromkeys(given))


@dataclass(frozen=True)
class Detail:
    """Everything the dashboard's page of a request shows (issue 14, item 7)."""

    bundle: store.RequestBundle
    progress: dict[str, queries.SubjectProgress]  # by subject id
    events: list[WebhookEvent]  # newest first
    records: Sequence[AuditRecord]  # newest first
    workflow_url: str  # the request's workflow in the Temporal UI


DETAIL_ROWS = 100


async def detail(ctx: Context, org_id: str, request_id: str) -> Detail:
    """The organization's request with its subjects' progress, its webhook events and its audit
    records (the newest ``DETAIL_ROWS`` of each); ``NotFound`` for another organization's."""
    bundle = await get(ctx, org_id, request_id)
    progress = await asyncio.to_thread(queries.progress_of, ctx.engine, request_id)
    events = await asyncio.to_thread(webhook_store.list_events, ctx.engine, org_id, DETAIL_ROWS, request_id)
    records, _ = await asyncio.to_thread(
        audit_queries.activity_page,
        ctx.engine,
        org_id,
        audit_queries.ActivityFilter(request_id=request_id),
        0,
        DETAIL_ROWS,
    )
    return Detail(bundle, progress, events, records, workflow_url(ctx, request_id))


def workflow_url(ctx: Context, request_id: str) -> str:
    """The request's workflow in the Temporal UI."""
    return f"{ctx.settings.temporal_ui_workflows()}/{quote(request_workflow_id(request_id), safe='')}"


def subject_of(
    bundle: store.RequestBundle, contact: str | None, did: str | None, internal_id: str | None
) -> str:
    """The subject of the request named by exactly one of ``contact``, ``id`` (DID), ``internalId``."""
    given = [
        name
        for name, value in (("contact", contact), ("id", did), ("internalId", internal_id))
        if value is not None
    ]
    if len(given) != 1:
        raise Invalid("Give exactly one of the query parameters contact, id or internalId")
    if contact is not None:
        try:
            wanted, _ = normalize_contact(contact)
        except ValueError as exc:
            raise Invalid(str(exc)) from exc
        found = [s.id for _, s in bundle.subjects if s.contact == wanted]
    elif did is not None:
        found = [s.id for _, s in bundle.subjects if s.id == queries.subject_id_from_did(did)]
    else:
        found = [s.id for link, s in bundle.subjects if (link.internal_id or s.internal_id) == internal_id]
    if not found:
        raise NotFound(f"Request {bundle.request.id} has no subject with that {given[0]}")
    return found[0]


# --- creating -----------------------------------------------------------------------------------


async def create(
    ctx: Context,
    actor: Actor,
    org_id: str,
    body: CreateRequestIn,
    *,
    rate_per_minute: int,
    idempotency_key: str | None = None,
    page_count: PageCount | None = None,
) -> Created:
    """Validate, store (one transaction: idempotency, rate limit, rows, ``REQUEST_CREATED`` naming
    ``actor``), start the workflow and mark it started. A failed start is left to the reconciler.
    ``page_count``: a DOCUMENT's PDF page count, to check its placements (without it they are refused)."""
    settings = ctx.settings
    new = await validated(ctx, org_id, body, page_count)
    idem = None
    if idempotency_key is not None and "\x00" in idempotency_key:
        raise Invalid("Idempotency-Key must not contain NUL characters")
    if idempotency_key is not None and idempotency_key.strip():
        idem = store.Idempotency(
            idempotency_key.strip(),
            guards.body_digest(body.model_dump(mode="json")),
            settings.idempotency_window,
        )

    def render(bundle: store.RequestBundle) -> dict[str, Any]:
        return {"data": request_out(settings, bundle).model_dump(mode="json")}

    try:
        result = await asyncio.to_thread(
            store.create_request,
            ctx.engine,
            org_id,
            new,
            settings.request_expiry,
            rate_per_minute,
            idem,
            render,
            str(actor),
        )
    except store.RateLimited as exc:
        raise TooMany("Too many requests created; slow down", retry_after=exc.retry_after) from exc
    except store.IdempotencyConflict as exc:
        raise Conflict("Idempotency-Key was already used with a different body") from exc
    if isinstance(result, store.Replayed):
        return Created(result.response, result.status_code)
    await start_workflow(ctx, result)
    return Created(render(result), 201, result)


async def start_workflow(ctx: Context, bundle: store.RequestBundle) -> None:
    """Start the workflow, then mark the row; the reconciler covers a failure of either step."""
    faults.crash_point("after-request-insert")
    try:
        await start_request_workflow(ctx.client(), ctx.settings.task_queue, bundle)
    except Exception as exc:  # the row is committed: the reconciler starts the workflow later
        if temporal_unavailable(exc):  # expected while Temporal is down: one line, no trace
            log.warning(
                "Temporal is unreachable: the workflow of request %s starts when it is back",
                bundle.request.id,
            )
        else:
            log.exception(
                "could not start the workflow of request %s now; the reconciler will", bundle.request.id
            )
        return
    faults.crash_point("after-workflow-start")
    await ctx.started_marks.submit(bundle.request.id)


async def _ensure_started(ctx: Context, bundle: store.RequestBundle) -> None:
    """Start the request's workflow if the reconciler has not come by yet (an update needs it)."""
    if bundle.request.workflow_started_at is None:
        await start_request_workflow(ctx.client(), ctx.settings.task_queue, bundle)
        await asyncio.to_thread(store.mark_workflow_started, ctx.engine, bundle.request.id)


async def workflow_update(
    ctx: Context, request_id: str, name: str, arg: object, result_type: type[T], unconfirmed: str
) -> T:
    """The request workflow's update ``name``: a refusal as ``refused`` renders it, no answer in time
    as ``Unavailable`` with ``unconfirmed`` (it may still be applied)."""
    try:
        return await run_update(ctx.client(), request_id, name, arg, result_type)
    except UpdateRefused as exc:
        raise refused(exc) from exc
    except UpdateUnavailable as exc:
        raise Unavailable(unconfirmed, retry_after=5) from exc


def refused(exc: UpdateRefused) -> Refused:
    """A workflow's refusal as the service error every surface renders (``too_soon`` carries how
    long to wait)."""
    retry_after = None
    if exc.kind == UpdateRefusal.TOO_SOON:
        retry_after = int(exc.details[0]) if exc.details else RESEND_INTERVAL_SECONDS
    return Refused(exc.kind, exc.message, retry_after=retry_after)


# --- changing -----------------------------------------------------------------------------------


async def cancel(ctx: Context, actor: Actor, org_id: str, request_id: str, reason: str | None = None) -> None:
    """Cancel a request before any subject decided: the workflow's ``cancel`` update records it
    (``canceled_by`` and ``MANDATE_CANCELED`` name ``actor``, with ``reason`` when given), so
    nothing is recorded when Temporal does not take the update."""
    reason = optional_reason(reason)
    bundle = await get(ctx, org_id, request_id)
    await _ensure_started(ctx, bundle)
    try:
        await run_update(
            ctx.client(),
            request_id,
            "cancel",
            CancelInput(canceled_by=str(actor), reason=reason),
            CancelResult,
        )
    except UpdateRefused as exc:
        if exc.finished:  # the workflow has already finished
            current = await asyncio.to_thread(queries.get_request, ctx.engine, org_id, request_id)
            status = (current or bundle).request.status
            raise Conflict(f"The request is {status.lower()}") from exc
        message = exc.message if exc.kind != UpdateRefusal.REFUSED else "The request cannot be canceled"
        raise Refused(exc.kind, message) from exc
    except UpdateUnavailable as exc:
        if exc.__cause__ is not None and temporal_unavailable(exc.__cause__):
            raise exc.__cause__ from None  # Temporal unreachable: rendered like any call needing it
        # No worker took the update in time; it may still be applied, so say exactly that.
        raise Unavailable(
            "Cancellation not confirmed yet; check the request with GET and retry", retry_after=5
        ) from exc


async def resend_code(
    ctx: Context, actor: Actor, org_id: str, request_id: str, subject_id: str, reason: str | None = None
) -> SendOtpResult:
    """Send the subject a fresh code (CONTRACT 4: at most 5, a minute apart); its ``OTP_RESENT``
    names ``actor`` (with ``reason`` when given), written by the workflow's send."""
    reason = optional_reason(reason)
    bundle = await get(ctx, org_id, request_id)
    return await resend_to(ctx, actor, bundle, subject_id, reason)


async def resend_to(
    ctx: Context, actor: Actor, bundle: store.RequestBundle, subject_id: str, reason: str | None = None
) -> SendOtpResult:
    """``resend_code`` for a request already read (the subject's own page asks for it too)."""
    await _ensure_started(ctx, bundle)
    asked = ResendOtpInput(subject_id=subject_id, actor=str(actor), reason=reason)
    return await workflow_update(ctx, bundle.request.id, "resend_otp", asked, SendOtpResult, CODE_UNCONFIRMED)


async def subject_link(
    ctx: Context, actor: Actor, org_id: str, request_id: str, subject_id: str, parent: str | None = None
) -> dict[str, str]:
    """The subject's approval page (``url``) and, for one of the organization's allowed frame
    origins as ``parent``, the ``iframeUrl``."""
    url = approval_url(ctx.settings.public_url, ctx.journey, request_id, subject_id)
    data: dict[str, str] = {"url": url}
    if parent is not None:
        stored = (await run_db(ctx.engine, orgs.get_organization, ctx.engine, org_id)).frame_origins
        local = ctx.settings.allow_loopback_http
        try:
            origin = check_origin(parent, local)
        except BadOrigin:
            origin = None
        if origin is None or origin not in header_origins(stored, local):
            raise Invalid(
                f"parent {quote_input(parent)} is not one of the organization's allowed "
                "iframe origins (mandatum org set-frame-origins)"
            )
        data["iframeUrl"] = f"{url}?{urlencode({'surface': 'iframe', 'parent': origin})}"
    return data


async def hand_out_link(
    ctx: Context, actor: Actor, org_id: str, request_id: str, subject_id: str, reason: str | None = None
) -> dict[str, str]:
    """The subject's approval page for ``actor`` to pass on (a member in the dashboard, an operator),
    with ``SUBJECT_LINK_SHOWN`` naming them (and ``reason`` when given); ``NotFound`` for a subject
    the request does not have. Only an open request's link opens anything, so a closed one is
    ``Conflict``."""
    reason = optional_reason(reason)
    bundle = await get(ctx, org_id, request_id)
    if subject_id not in {s.id for _, s in bundle.subjects}:
        raise NotFound(f"Request {request_id} has no subject {quote_input(subject_id)}")
    if bundle.request.status != RequestStatus.PENDING:
        raise Conflict(f"The request is {bundle.request.status.lower()}: its links open nothing")
    await asyncio.to_thread(
        store.record_link_shown, ctx.engine, org_id, request_id, subject_id, str(actor), reason
    )
    return await subject_link(ctx, actor, org_id, request_id, subject_id)


# --- what the request's workflow records (through its activities) ------------------------------


def record_cancellation(
    engine: Engine, actor: Actor, request_id: str, at: datetime, reason: str | None = None
) -> datetime:
    """The cancellation ``actor`` asked for (``canceled_by``, ``MANDATE_CANCELED`` with the
    ``reason`` they gave); idempotent."""
    return store.record_cancellation(engine, request_id, at, str(actor), reason)


def record_expiry(engine: Engine, actor: Actor, request_id: str) -> None:
    """The request expired undecided: it and its open credentials become ``EXPIRED``."""
    store.record_expiry(engine, request_id)


def record_decision(engine: Engine, actor: Actor, decision: RecordDecisionInput) -> store.StoredChoice:
    """A subject's decision with its audit record naming ``actor``: the subject, also when the
    workflow declines for them after a failed identity check. Stored once per subject and
    credential: the decision stored is returned (``store.request_records.record_decision``)."""
    return store.record_decision(
        engine,
        decision.decision_id,
        decision.request_id,
        decision.credential_id,
        decision.subject_id,
        decision.accepted,
        decision.channel,
        decision.surface,
        decision.decided_at,
        decision.completes_request,
        reason=decision.reason,
        actor=str(actor),
        trusted_session_id=decision.trusted_session_id,
    )


# --- the store's records the surfaces name (re-exported: they import no store module) ----------

RequestBundle = store.RequestBundle  # a request with its subjects, credentials and decisions
RequestFilter = queries.RequestFilter  # what ``request_filter`` makes of a ``RequestQuery``
