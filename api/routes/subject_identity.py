"""``POST /subject/identity``: the organization reports its own identity check of one of its
subjects (CONTRACT 8, ``ORGANIZATION_KYC``). Open requests of that level waiting for the subject
take the result at once (an ``identity`` event each); later requests reuse a success."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from api.deps import CallerDep, ContextDep, TemporalDep
from api.responses import answer, errors
from api.versions import VersionedRoute
from core.actors import ORGANIZATION
from core.kinds import SubjectIdentity
from services import journey
from wire.models import Strict

router = APIRouter(tags=["subjects"], route_class=VersionedRoute)


class IdentityReportIn(Strict):
    contact: str | None = None
    id: str | None = Field(default=None, description="The subject's DID")
    success: StrictBool  # true or false: 0 is no answer to whether the check passed
    message: Annotated[str, Field(max_length=500)] | None = None


class IdentityReportOut(BaseModel):
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    success: Literal[True] = True
    identityStatus: Literal[SubjectIdentity.VERIFIED, SubjectIdentity.FAILED]
    requests: list[str] = Field(description="Open ORGANIZATION_KYC requests that took the result")


@router.post(
    "/subject/identity",
    response_model=IdentityReportOut,
    responses={
        **errors(400, 401, 404, 413, s404="No subject of the caller's organization has this contact or DID"),
        **answer(503, "Temporal is unreachable while open requests wait for the result"),
    },
)
async def report_identity(
    body: IdentityReportIn, caller: CallerDep, ctx: ContextDep, temporal: TemporalDep
) -> Any:
    """Report the organization's own identity check of a subject, named by `contact` or `id`."""
    applied = await journey.report_organization_check(
        ctx,
        ORGANIZATION,
        caller.organization_id,
        contact=body.contact,
        did=body.id,
        success=body.success,
        message=body.message,
    )
    status = SubjectIdentity.VERIFIED if body.success else SubjectIdentity.FAILED
    return IdentityReportOut(identityStatus=status, requests=applied)
