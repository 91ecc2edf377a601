"""Credential requests: create, list, read, cancel (SPEC.md and CONTRACT section 4)."""

from __future__ import annotations

import asyncio
import logging
import math
import re
from datetime import UTC, datetime, time, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Header, Query
from fastapi.responses import JSONResponse
from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from api import versioning
from api.contacts import normalize_contact
from api.deps import CallerDep, ServicesDep, TemporalDep
from api.errors import ApiError
from api.journey import Refused, Unavailable, run_update
from api.models import (
    CreateRequestIn,
    ErrorOut,
    RequestEnvelope,
    RequestListItem,
    RequestPage,
    SecurityLevel,
    Success,
)
from api.views import request_list_item, request_out
from core.ids import is_object_id
from core.origins import BadOrigin, check_origin, check_url, header_origins
from core.otp import approval_url
from core.temporal import request_handle, start_request_workflow, temporal_unavailable
from core.text import quote_input
from store import actions as action_store
from store import guards, orgs
from store import request_queries as queries
from store import requests as store
from workflows.messages import (
    RESEND_INTERVAL_SECONDS,
    CancelInput,
    CancelResult,
    ResendOtpInput,
    SendOtpResult,
)

log = logging.getLogger("mandatum.api.requests")
router = APIRouter(tags=["requests"])
CANCEL_TIMEOUT_SECONDS = 15.0
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (400, 401, 404, 409, 413, 422, 429, 503)
}


def _to_new_request(
    body: CreateRequestIn,
    organization_did: str,
    contacts: list[tuple[str, str, str | None]],
    pinned_actions: dict[int, dict[str, Any]],
) -> store.NewRequest:
    """The request to store; ``pinned_actions`` replaces the ``action`` of POLICY credentials (by
    position) with the pinned version and the filled userParams."""
    # the organization's DID is always authorized and listed first (CONTRACT 3): store the others once
    extra_dids = list(dict.fromkeys(d for d in body.authorizedDIDs if d != organization_did))
    return store.NewRequest(
        security_level=body.securityLevel.value,
        contacts=[store.NewContact(c, kind, internal) for c, kind, internal in contacts],
        credentials=[
            store.NewCredential(
                resource_type=c.type,
                name=c.name,
                description=c.description,
                internal_id=c.internalId,
                scope=c.scope,
                tags=c.tags,
                action=pinned_actions.get(i, c.action.model_dump() if c.action else None),
                data=[d.model_dump() for d in c.data] if c.data else None,
                valid_from=c.validFrom,
                valid_until=c.validUntil,
            )
            for i, c in enumerate(body.credentials)
        ],
        name=body.name,
        language=body.language.value,
        redirect_url=body.redirectUrl,
        internal_id=body.internalId,
        authorized_dids=extra_dids,
    )


def _pin_actions(
    services: ServicesDep, org_id: str, body: CreateRequestIn
) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """Each POLICY credential's action checked against the organization's newest published version
    of it (CONTRACT 6); by credential position, with one message per problem."""
    pinned: dict[int, dict[str, Any]] = {}
    problems: list[str] = []
    for i, cred in enumerate(body.credentials):
        if cred.action is None:
            continue
        pin, found = action_store.pin_for_request(
            services.engine, org_id, cred.action.id, cred.action.userParams, where=f"credentials.{i}.action"
        )
        problems += found
        if pin is not None:
            pinned[i] = pin
    return pinned, problems


async def _validated(body: CreateRequestIn, caller: CallerDep, services: ServicesDep) -> store.NewRequest:
    """The request to store, or a 400 listing every contact and action problem at once."""
    contacts, problems = body.normalized_contacts()
    if body.redirectUrl is not None and not services.settings.dev_pages:
        try:  # the model checked its shape; production also refuses http on a local host
            check_url(body.redirectUrl, allow_loopback_http=False)
        except BadOrigin as exc:
            problems.append(f"redirectUrl: {exc}")
    pinned: dict[int, dict[str, Any]] = {}
    action_problems: list[str] = []
    if any(c.action is not None for c in body.credentials):
        pinned, action_problems = await asyncio.to_thread(
            _pin_actions, services, caller.organization_id, body
        )
    if problems or action_problems:
        raise ApiError(400, problems + action_problems)
    return _to_new_request(body, services.settings.organization_did(caller.organization_id), contacts, pinned)


@router.post("/request", status_code=201, response_model=RequestEnvelope, responses=ERRORS)
async def create_request(
    body: CreateRequestIn,
    caller: CallerDep,
    services: ServicesDep,
    temporal: TemporalDep,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=255)] = None,
) -> Any:
    """Create a credential request; its workflow starts at once and waits for decisions."""
    settings = services.settings
    new = await _validated(body, caller, services)
    idem = None
    if idempotency_key is not None and "\x00" in idempotency_key:
        raise ApiError(400, "Idempotency-Key must not contain NUL characters")
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
            services.engine,
            caller.organization_id,
            new,
            settings.request_expiry,
            caller.key.request_rate_per_minute,
            idem,
            render,
        )
    except store.RateLimited as exc:
        raise ApiError(
            429, "Too many requests created; slow down", headers={"Retry-After": str(exc.retry_after)}
        ) from exc
    except store.IdempotencyConflict as exc:
        raise ApiError(409, "Idempotency-Key was already used with a different body") from exc
    if isinstance(result, store.Replayed):
        return JSONResponse(_versioned(result.response, caller.api_version), status_code=result.status_code)
    await _start_workflow(services, temporal, result)
    return JSONResponse(_versioned(render(result), caller.api_version), status_code=201)


def _versioned(envelope: dict[str, Any], version: str) -> dict[str, Any]:
    return {**envelope, "data": versioning.render("request", envelope["data"], version)}


async def _start_workflow(services: ServicesDep, temporal: TemporalDep, bundle: store.RequestBundle) -> None:
    """Start the workflow, then mark the row; the reconciler covers a failure of either step."""
    from core import faults

    faults.crash_point("after-request-insert")
    try:
        await start_request_workflow(temporal, services.settings.task_queue, bundle)
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
    await services.started_marks.submit(bundle.request.id)


ISO_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|z|[+-]\d{2}:?\d{2})?)?$")


def _day_start(name: str, raw: str) -> datetime:
    """The start (UTC) of the UTC day of an ISO 8601 date or date-time; naive means UTC.

    Numbers are refused rather than read as seconds since 1970 (``20250310`` is not a date here).
    """
    value = raw.strip()
    try:
        if not ISO_DATE_RE.match(value):
            raise ValueError
        parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value[-1] in "Zz" else value)
    except ValueError:
        raise ApiError(
            400, f"{name} must be an ISO 8601 date or date-time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z"
        ) from None
    parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return datetime.combine(parsed.astimezone(UTC).date(), time.min, tzinfo=UTC)


def day_range(date_from: str | None, date_to: str | None) -> tuple[datetime | None, datetime | None]:
    """``dateFrom`` / ``dateTo`` query values as the start of the first and the end of the last
    UTC day they name; 400 when ``dateTo`` comes without ``dateFrom`` or before it."""
    if date_to is not None and date_from is None:
        raise ApiError(400, "dateTo requires dateFrom")
    start = _day_start("dateFrom", date_from) if date_from is not None else None
    end = (
        _day_start("dateTo", date_to) + timedelta(days=1) - timedelta(microseconds=1)
        if date_to is not None
        else None
    )
    if start and end and end < start:
        raise ApiError(400, "dateTo must not be before dateFrom")
    return start, end


@router.get("/request", response_model=RequestPage, responses=ERRORS)
async def list_requests(
    caller: CallerDep,
    services: ServicesDep,
    pageIndex: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    pageSize: Annotated[int, Query(ge=5, le=100)] = 10,
    search: Annotated[str | None, Query(max_length=100)] = None,
    contact: Annotated[str | None, Query(max_length=320)] = None,
    did: Annotated[str | None, Query(max_length=500)] = None,
    subjectInternalId: Annotated[str | None, Query(max_length=255)] = None,
    internalId: Annotated[str | None, Query(max_length=255)] = None,
    credentialInternalId: Annotated[str | None, Query(max_length=255)] = None,
    securityLevel: Annotated[
        list[SecurityLevel] | None, Query(description=("One level, or several as repeated parameters"))
    ] = None,
    securityLevelBrackets: Annotated[
        list[SecurityLevel] | None, Query(alias="securityLevel[]", include_in_schema=False)
    ] = None,  # how axios / qs send arrays
    dateFrom: Annotated[
        str | None, Query(max_length=40, description=("ISO 8601 date or date-time; the start of its UTC day"))
    ] = None,
    dateTo: Annotated[
        str | None,
        Query(
            max_length=40,
            description=("ISO 8601 date or date-time; the end of its UTC day; requires dateFrom"),
        ),
    ] = None,
) -> Any:
    """List the organization's requests, newest first. Dates cover whole UTC days."""
    for name, value in (
        ("search", search),
        ("subjectInternalId", subjectInternalId),
        ("internalId", internalId),
        ("credentialInternalId", credentialInternalId),
    ):
        if value is not None and "\x00" in value:
            raise ApiError(400, f"{name} must not contain NUL characters")
    date_from, date_to = day_range(dateFrom, dateTo)
    subject_id = None
    if did is not None:
        subject_id = queries.subject_id_from_did(did)
        # only this service's subject DIDs name subjects (the host is part of the DID)
        if subject_id is None or services.settings.subject_did(subject_id) != did:
            return JSONResponse({"data": [], "totalPages": 0})
    normalized_contact = None
    if contact is not None:
        try:
            normalized_contact = normalize_contact(contact)[0]
        except ValueError as exc:
            raise ApiError(400, f"contact: {exc}") from exc
    filters = queries.RequestFilter(
        page_index=pageIndex,
        page_size=pageSize,
        search=search or None,
        contact=normalized_contact,
        did_subject_id=subject_id,
        subject_internal_id=subjectInternalId,
        internal_id=internalId,
        credential_internal_id=credentialInternalId,
        security_levels=tuple(
            dict.fromkeys(s.value for s in [*(securityLevel or ()), *(securityLevelBrackets or ())])
        ),
        date_from=date_from,
        date_to=date_to,
    )
    bundles, total = await asyncio.to_thread(
        queries.list_requests, services.engine, caller.organization_id, filters
    )
    items: list[RequestListItem] = [request_list_item(services.settings, b) for b in bundles]
    # JSONResponse: the body is in the caller's version's shape, not re-validated as the newest
    return JSONResponse(
        {
            "data": [
                versioning.render("request", i.model_dump(mode="json"), caller.api_version) for i in items
            ],
            "totalPages": math.ceil(total / pageSize),
        }
    )


def _check_id(request_id: str) -> None:
    """Request ids are 24 lower-case hex characters (CONTRACT 3)."""
    if not is_object_id(request_id):
        raise ApiError(400, "requestId must be a 24-character lower-case hexadecimal ObjectId")


@router.get("/request/{requestId}", response_model=RequestEnvelope, responses=ERRORS)
async def get_request(requestId: str, caller: CallerDep, services: ServicesDep) -> Any:
    """A request with its subjects, credentials and decisions."""
    _check_id(requestId)
    bundle = await asyncio.to_thread(queries.get_request, services.engine, caller.organization_id, requestId)
    if bundle is None:
        raise ApiError(404, f"Request {requestId} not found")
    body = request_out(services.settings, bundle).model_dump(mode="json")
    return JSONResponse({"data": versioning.render("request", body, caller.api_version)})


async def _ensure_started(bundle: store.RequestBundle, services: ServicesDep, temporal: TemporalDep) -> None:
    """Start the request's workflow if the reconciler has not come by yet (an update needs it)."""
    if bundle.request.workflow_started_at is None:
        await start_request_workflow(temporal, services.settings.task_queue, bundle)
        await asyncio.to_thread(store.mark_workflow_started, services.engine, bundle.request.id)


@router.delete("/request/{requestId}", response_model=Success, responses=ERRORS)
async def cancel_request(
    requestId: str, caller: CallerDep, services: ServicesDep, temporal: TemporalDep
) -> Any:
    """Cancel a request before any subject decided; its workflow ends and `canceledAt` is set."""
    _check_id(requestId)
    bundle = await asyncio.to_thread(queries.get_request, services.engine, caller.organization_id, requestId)
    if bundle is None:
        raise ApiError(404, f"Request {requestId} not found")
    await _ensure_started(bundle, services, temporal)
    try:
        await asyncio.wait_for(
            request_handle(temporal, requestId).execute_update(
                "cancel",
                CancelInput(canceled_by=f"apiKey:{caller.key.key_id}"),
                result_type=CancelResult,
            ),
            timeout=CANCEL_TIMEOUT_SECONDS,
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        message = cause.message if isinstance(cause, ApplicationError) else "The request cannot be canceled"
        raise ApiError(409, message) from exc
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as exc:
        # No worker took the update in time; it may still be applied, so say exactly that.
        raise ApiError(
            503,
            "Cancellation not confirmed yet; check the request with GET and retry",
            headers={"Retry-After": "5"},
        ) from exc
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:  # the workflow has already finished
            current = await asyncio.to_thread(
                queries.get_request, services.engine, caller.organization_id, requestId
            )
            status = (current or bundle).request.status
            raise ApiError(409, f"The request is {status.lower()}") from exc
        raise
    return Success()


def _subject_of(
    bundle: store.RequestBundle, contact: str | None, did: str | None, internal_id: str | None
) -> str:
    """The subject of the request named by exactly one of ``contact``, ``id`` (DID), ``internalId``."""
    given = [
        name
        for name, value in (("contact", contact), ("id", did), ("internalId", internal_id))
        if value is not None
    ]
    if len(given) != 1:
        raise ApiError(400, "Give exactly one of the query parameters contact, id or internalId")
    if contact is not None:
        try:
            wanted, _ = normalize_contact(contact)
        except ValueError as exc:
            raise ApiError(400, str(exc)) from exc
        found = [s.id for _, s in bundle.subjects if s.contact == wanted]
    elif did is not None:
        found = [s.id for _, s in bundle.subjects if s.id == queries.subject_id_from_did(did)]
    else:
        found = [s.id for link, s in bundle.subjects if link.internal_id == internal_id]
    if not found:
        raise ApiError(404, f"Request {bundle.request.id} has no subject with that {given[0]}")
    return found[0]


@router.patch("/request/resend/{requestId}", response_model=Success, responses=ERRORS)
async def resend_code(
    requestId: str,
    caller: CallerDep,
    services: ServicesDep,
    temporal: TemporalDep,
    contact: str | None = None,
    id: str | None = None,
    internalId: str | None = None,
) -> Any:
    """Send the subject a fresh one-time code (CONTRACT 4): at most 5 codes per subject, at least
    60 seconds apart (429 with `Retry-After`). A new code replaces the old one and unlocks it; the
    subject confirms the new code before deciding. 422 when the contact cannot receive it (an
    `otp.failed` event reports it too); 409 when the request is closed or the subject has decided."""
    _check_id(requestId)
    bundle = await asyncio.to_thread(queries.get_request, services.engine, caller.organization_id, requestId)
    if bundle is None:
        raise ApiError(404, f"Request {requestId} not found")
    subject_id = _subject_of(bundle, contact, id, internalId)
    await _ensure_started(bundle, services, temporal)
    try:
        sent = await run_update(
            temporal, requestId, "resend_otp", ResendOtpInput(subject_id=subject_id), SendOtpResult
        )
    except Refused as exc:
        if exc.kind == "too_soon":
            seconds = str(exc.details[0]) if exc.details else str(RESEND_INTERVAL_SECONDS)
            raise ApiError(429, exc.message, headers={"Retry-After": seconds}) from exc
        if exc.kind == "too_many_sends":
            raise ApiError(429, exc.message) from exc
        raise ApiError(409, exc.message) from exc
    except Unavailable as exc:
        raise ApiError(
            503, "The code was not confirmed sent yet; retry shortly", headers={"Retry-After": "5"}
        ) from exc
    if not sent.delivered:
        raise ApiError(
            422,
            f"The code could not be delivered: {sent.error_message or sent.error_code}",
            code=sent.error_code,
        )
    return Success()


@router.get("/request/link/{requestId}", responses=ERRORS)
async def approval_link(
    requestId: str,
    caller: CallerDep,
    services: ServicesDep,
    contact: str | None = None,
    id: str | None = None,
    internalId: str | None = None,
    parent: str | None = None,
) -> Any:
    """The subject's approval page (`url`, the link their message carries), to open it for them or
    embed it: with `parent` (one of the organization's allowed iframe origins) also `iframeUrl`,
    the same flow for an iframe in a page of that origin. The link works while the request is open;
    the subject still confirms the code sent to them."""
    _check_id(requestId)
    bundle = await asyncio.to_thread(queries.get_request, services.engine, caller.organization_id, requestId)
    if bundle is None:
        raise ApiError(404, f"Request {requestId} not found")
    subject_id = _subject_of(bundle, contact, id, internalId)
    url = approval_url(services.settings.public_url, services.journey, requestId, subject_id)
    data: dict[str, str] = {"url": url}
    if parent is not None:
        stored = (
            await asyncio.to_thread(orgs.get_organization, services.engine, caller.organization_id)
        ).frame_origins
        local = services.settings.dev_pages
        try:
            origin = check_origin(parent, local)
        except BadOrigin:
            origin = None
        if origin is None or origin not in header_origins(stored, local):
            raise ApiError(
                400,
                f"parent {quote_input(parent)} is not one of the organization's allowed "
                "iframe origins (mandatum org set-frame-origins)",
            )
        data["iframeUrl"] = f"{url}?{urlencode({'surface': 'iframe', 'parent': origin})}"
    return {"data": data}
