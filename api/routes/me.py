"""``GET /me``: who the caller is, as the signature middleware authenticated it.

Integrators call it to check their signing set-up (API key, secret, clock) without side effects;
the verify benchmark (bench/verify.py) uses it as the baseline of a signed call. It passes the same
middleware as every route: key lookup, signature, timestamp window, replay guard, API version.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from api.deps import CallerDep, ContextDep
from api.responses import errors
from api.versions import VersionedRoute
from trust.did import web_organization_did

router = APIRouter(tags=["organization"], route_class=VersionedRoute)


class MeOut(BaseModel):
    organizationId: str
    did: str = Field(description="The organization's DID (did:web)")
    apiVersion: str = Field(description="The version this call was served in")


@router.get(
    "/me",
    response_model=MeOut,
    responses=errors(400, 401),
    summary="The calling organization (checks a signing set-up)",
)
async def me(caller: CallerDep, ctx: ContextDep) -> MeOut:
    """The organization behind the API key, its DID, and the API version this call is served in
    (the `API-Version` header if sent, else the organization's pinned version)."""
    org_id = caller.organization_id
    return MeOut(
        organizationId=org_id,
        did=web_organization_did(ctx.settings.public_url, org_id),
        apiVersion=caller.api_version,
    )
