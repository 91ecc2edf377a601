"""``GET /activity``: the organization's audit trail (CONTRACT 4), newest first.

Each item is the stored record as it was signed (``store.audit``): anyone holding the service's
DID document can check its proof, and the chain through ``seq``, ``prevHash`` and ``hash``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from api.deps import CallerDep, ContextDep
from api.errors import ApiError
from api.responses import errors
from api.versions import VersionedRoute
from core.ids import is_object_id
from core.text import shown
from services import audit
from wire.dates import day_range
from wire.signed import SignedRecordProof

router = APIRouter(tags=["activity"], route_class=VersionedRoute)


class ActivityRecord(BaseModel):
    """One audit record, exactly as signed, plus its ``hash``."""

    id: str = Field(description="urn:via:audit:<uuid>")
    type: str = Field(description=", ".join(audit.RECORD_TYPES))
    organizationId: str
    seq: int = Field(description="Position in the organization's chain, from 1 without gaps")
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    requestId: str | SkipJsonSchema[None] = Field(default=None, description="Absent when none")
    credentialId: str | SkipJsonSchema[None] = Field(
        default=None, description="Mandate URN, or a credential id; absent when none"
    )
    actor: str | SkipJsonSchema[None] = Field(
        default=None, description="apiKey:<keyId>, subject:<id>, ...; absent when none"
    )
    data: dict[str, Any]
    prevHash: str | None = Field(description="hash of the record before it (null for the first)")
    proof: SignedRecordProof = Field(description="eddsa-jcs-2022 DataIntegrityProof by the service key")
    hash: str = Field(description="hex SHA-256 of the JCS form of the record, proof included")


class ActivityPage(BaseModel):
    data: list[ActivityRecord]
    totalPages: int


@router.get("/activity", response_model=ActivityPage, responses=errors(400, 401))
async def list_activity(
    caller: CallerDep,
    ctx: ContextDep,
    pageIndex: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    pageSize: Annotated[int, Query(ge=5, le=100)] = 10,
    type: Annotated[list[str] | None, Query(description="One record type, or several repeated")] = None,
    requestId: Annotated[str | None, Query(max_length=24)] = None,
    credentialId: Annotated[
        str | None, Query(max_length=64, description=("A mandate URN or a 24-character credential id"))
    ] = None,
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
    """The organization's audit records, newest first: requests created, decisions, mandates
    issued, canceled and revoked, VPs issued or refused, verifications allowed or denied."""
    unknown = sorted(set(type or ()) - set(audit.RECORD_TYPES))
    if unknown:
        named = ", ".join(shown(t) for t in unknown[:5])
        named += f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ApiError(400, f"type {named} is not one of {', '.join(audit.RECORD_TYPES)}")
    if requestId is not None and not is_object_id(requestId):
        raise ApiError(400, "requestId must be a 24-character lower-case hexadecimal ObjectId")
    if credentialId is not None and "\x00" in credentialId:
        raise ApiError(400, "credentialId must not contain NUL characters")
    try:
        date_from, date_to = day_range(dateFrom, dateTo)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    where = audit.ActivityFilter(
        types=tuple(dict.fromkeys(type or ())),
        request_id=requestId,
        credential_id=credentialId,
        date_from=date_from,
        date_to=date_to,
    )
    rows, pages = await audit.activity(ctx, caller.organization_id, where, pageIndex, pageSize)
    items = [{**audit.document_of(row), "hash": row.hash} for row in rows]
    return JSONResponse(
        {
            "data": items,
            "totalPages": pages,
        }
    )
