"""``POST /subject/identity``: the organization reports its own identity check of one of its
subjects (CONTRACT 8, ``ORGANIZATION_KYC``). Open requests of that level waiting for the subject
take the result at once (an ``identity`` event each); later requests reuse a success."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from api.contacts import normalize_contact
from api.deps import CallerDep, ServicesDep, TemporalDep
from api.errors import ApiError
from api.kyc import report_organization_check
from api.models import ErrorOut, Strict
from store import kyc as kyc_store
from store import request_queries as queries
from store.db import run_db

router = APIRouter(tags=["subjects"])


class IdentityReportIn(Strict):
    contact: str | None = None
    id: str | None = Field(default=None, description="The subject's DID")
    success: bool
    message: Annotated[str, Field(max_length=500)] | None = None


class IdentityReportOut(BaseModel):
    success: bool = True
    identityStatus: str
    requests: list[str] = Field(description="Open ORGANIZATION_KYC requests that took the result")


@router.post(
    "/subject/identity",
    response_model=IdentityReportOut,
    responses={code: {"model": ErrorOut} for code in (400, 401, 404)},
)
async def report_identity(
    body: IdentityReportIn, caller: CallerDep, services: ServicesDep, temporal: TemporalDep
) -> Any:
    """Report the organization's own identity check of a subject, named by `contact` or `id`."""
    if (body.contact is None) == (body.id is None):
        raise ApiError(400, "Give exactly one of contact or id")
    contact = None
    if body.contact is not None:
        try:
            contact, _ = normalize_contact(body.contact)
        except ValueError as exc:
            raise ApiError(400, str(exc)) from exc
    subject_id = queries.subject_id_from_did(body.id) if body.id is not None else None
    subject = await run_db(
        services.engine,
        kyc_store.find_subject,
        services.engine,
        caller.organization_id,
        contact=contact,
        subject_id=subject_id,
    )
    if subject is None:
        raise ApiError(404, f"No subject of this organization with that {'contact' if contact else 'id'}")
    applied = await report_organization_check(
        services.engine, temporal, caller.organization_id, subject.id, body.success, body.message
    )
    return IdentityReportOut(identityStatus="VERIFIED" if body.success else "FAILED", requests=applied)
