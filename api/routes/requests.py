"""Credential requests: create, list, read, cancel (SPEC.md and CONTRACT section 4)."""

from __future__ import annotations

import logging
import math
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query
from fastapi.responses import JSONResponse

from api import pdf
from api.deps import CallerDep, ContextDep, RequestDep, RequestId, TemporalDep
from api.errors import ApiError
from api.responses import answer, errors, retry_after_header
from api.routes.mandates import draft_sheet
from api.versions import VersionedRoute
from core.kinds import SecurityLevel
from core.settings import Settings
from services import requests
from wire.models import (
    ApprovalLinkEnvelope,
    CodeUndelivered,
    CreateRequestIn,
    CredentialIn,
    RequestEnvelope,
    RequestListItem,
    RequestOut,
    RequestPage,
    Success,
)
from wire.views import request_list_item, request_out

log = logging.getLogger("mandatum.api.requests")
router = APIRouter(tags=["requests"], route_class=VersionedRoute)
NO_REQUEST = "No request of the caller's organization has this id"
# which subject: exactly one of contact, id and internalId (400 otherwise; 404 for none of the request's)
Contact = Annotated[str | None, Query(description="The subject's e-mail address or E.164 phone number")]
SubjectDid = Annotated[str | None, Query(description="The subject's DID")]
SubjectRef = Annotated[str | None, Query(description="The subject's internalId in this request")]


@router.post(
    "/request",
    status_code=201,
    response_model=RequestEnvelope,
    responses={
        **errors(400, 401, 413),
        **answer(409, "Idempotency-Key already used with another body"),
        **answer(429, "Too many requests created this minute (the organization's rate)"),
        **answer(503, "With placements: every PDF renderer is busy (`Retry-After`)"),
    },
)
async def create_request(
    body: CreateRequestIn,
    caller: CallerDep,
    ctx: ContextDep,
    temporal: TemporalDep,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=255)] = None,
) -> Any:
    """Create a credential request; its workflow starts at once and waits for decisions."""
    created = await requests.create(
        ctx,
        caller.actor,
        caller.organization_id,
        body,
        rate_per_minute=caller.key.request_rate_per_minute,
        idempotency_key=idempotency_key,
        page_count=partial(_page_count, ctx.settings, caller.organization_id),
    )
    return JSONResponse(created.response, status_code=created.status_code)


async def _page_count(settings: Settings, org_id: str, org_name: str, cred: CredentialIn) -> int:
    """The page count of a DOCUMENT credential's PDF as first rendered, for its placements."""
    try:
        return await pdf.RENDERER.page_count(draft_sheet(settings, org_id, org_name, cred))
    except pdf.Busy as exc:
        raise ApiError(
            503, "PDF rendering is busy; retry shortly", headers={"Retry-After": str(exc.retry_after)}
        ) from exc


@router.get("/request", response_model=RequestPage, responses=errors(400, 401))
async def list_requests(
    caller: CallerDep,
    ctx: ContextDep,
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
    query = requests.RequestQuery(
        page_index=pageIndex,
        page_size=pageSize,
        search=search,
        contact=contact,
        did=did,
        subject_internal_id=subjectInternalId,
        internal_id=internalId,
        credential_internal_id=credentialInternalId,
        security_levels=tuple(s.value for s in [*(securityLevel or ()), *(securityLevelBrackets or ())]),
        date_from=dateFrom,
        date_to=dateTo,
    )
    filters = requests.request_filter(ctx, query)
    if filters is None:
        return JSONResponse({"data": [], "totalPages": 0})
    bundles, total = await requests.find(ctx, caller.organization_id, filters)
    items: list[RequestListItem] = [request_list_item(ctx.settings, b) for b in bundles]
    # JSONResponse: the body is in the caller's version's shape, not re-validated as the newest
    return JSONResponse(
        {
            "data": [i.model_dump(mode="json") for i in items],
            "totalPages": math.ceil(total / pageSize),
        }
    )


@router.get(
    "/request/{requestId}", response_model=RequestOut, responses=errors(400, 401, 404, s404=NO_REQUEST)
)
async def get_request(bundle: RequestDep, caller: CallerDep, ctx: ContextDep) -> Any:
    """A request with its subjects, credentials and decisions: the record itself (SPEC.md), not
    wrapped in `data` as `POST /request` wraps it."""
    return JSONResponse(request_out(ctx.settings, bundle).model_dump(mode="json"))


@router.delete(
    "/request/{requestId}",
    response_model=Success,
    responses={
        **errors(400, 401, 404, s404=NO_REQUEST),
        **answer(409, "A subject has decided, or the request is closed or already canceled"),
        **answer(
            503,
            "Temporal is unreachable, or no worker confirmed the cancel within 15 s (it may still "
            "apply: check with GET before retrying)",
        ),
    },
)
async def cancel_request(
    requestId: RequestId, caller: CallerDep, ctx: ContextDep, temporal: TemporalDep
) -> Any:
    """Cancel a request before any subject decided; its workflow ends and `canceledAt` is set."""
    await requests.cancel(ctx, caller.actor, caller.organization_id, requestId)
    return Success()


@router.patch(
    "/request/resend/{requestId}",
    response_model=Success,
    responses={
        **errors(400, 401, 404, s404="No such request of the caller's, or no such subject in it"),
        **answer(409, "The request is closed, or the subject has decided on every credential"),
        **answer(422, "The code could not be delivered to the contact", CodeUndelivered),
        **answer(
            429,
            "A code was sent less than 60 s ago (`Retry-After` says how long to wait), or the subject "
            "has had 5 codes (final: no `Retry-After`)",
            headers={"Retry-After": retry_after_header(required=False)},
        ),
        **answer(503, "Temporal is unreachable, or the send was not confirmed in time"),
    },
)
async def resend_code(
    bundle: RequestDep,
    caller: CallerDep,
    ctx: ContextDep,
    temporal: TemporalDep,
    contact: Contact = None,
    id: SubjectDid = None,
    internalId: SubjectRef = None,
) -> Any:
    """Send the subject a fresh one-time code (CONTRACT 4): at most 5 codes per subject, at least
    60 seconds apart (429 with `Retry-After`). A new code replaces the old one and unlocks it; the
    subject confirms the new code before deciding. 422 when the contact cannot receive it (an
    `otp.failed` event reports it too); 409 when the request is closed or the subject has decided."""
    subject_id = requests.subject_of(bundle, contact, id, internalId)
    sent = await requests.resend_to(ctx, caller.actor, bundle, subject_id)
    if not sent.delivered:
        raise ApiError(
            422,
            f"The code could not be delivered: {sent.error_message or sent.error_code}",
            code=sent.error_code,
        )
    return Success()


@router.get(
    "/request/link/{requestId}",
    response_model=ApprovalLinkEnvelope,
    responses=errors(400, 401, 404, s404="No such request of the caller's, or no such subject in it"),
)
async def approval_link(
    bundle: RequestDep,
    caller: CallerDep,
    ctx: ContextDep,
    contact: Contact = None,
    id: SubjectDid = None,
    internalId: SubjectRef = None,
    parent: Annotated[
        str | None, Query(description="An origin the organization allows to frame the page")
    ] = None,
) -> Any:
    """The subject's approval page (`url`, the link their message carries), to open it for them or
    embed it: with `parent` (one of the organization's allowed iframe origins) also `iframeUrl`,
    the same flow for an iframe in a page of that origin. The link works while the request is open;
    the subject still confirms the code sent to them."""
    subject_id = requests.subject_of(bundle, contact, id, internalId)
    link = await requests.subject_link(
        ctx, caller.actor, caller.organization_id, bundle.request.id, subject_id, parent
    )
    return JSONResponse({"data": link})  # iframeUrl absent without a parent, never null
