"""``DELETE /subject/sessions``: the organization ends every trusted browser session of one of its
subjects (issue 36, ``iframe.cookie``; docs/adr/0019-trusted-browser-session.md). The subject's
next approval, in any browser, asks for the code again. Each session ended is a
``TRUSTED_SESSION_REVOKED`` record naming the API key."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from api.deps import CallerDep, ContextDep
from api.responses import errors
from api.versions import VersionedRoute
from services import trusted_sessions

router = APIRouter(tags=["subjects"], route_class=VersionedRoute)


class SessionsRevokedOut(BaseModel):
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    success: Literal[True] = True
    revoked: list[str] = Field(
        description="The ids of the trusted browser sessions ended (none when none was open)"
    )


@router.delete(
    "/subject/sessions",
    response_model=SessionsRevokedOut,
    responses=errors(400, 401, 404, s404="No subject of the caller's organization has this contact or DID"),
)
async def revoke_trusted_sessions(
    caller: CallerDep,
    ctx: ContextDep,
    contact: Annotated[str | None, Query(max_length=320, description="The subject's contact")] = None,
    id: Annotated[str | None, Query(max_length=300, description="The subject's DID")] = None,
) -> Any:
    """End every trusted browser session (`iframe.cookie`) of a subject, named by `contact` or
    `id`: their next approval asks for the code again."""
    revoked = await trusted_sessions.revoke(
        ctx, caller.actor, caller.organization_id, contact=contact, did=id
    )
    return SessionsRevokedOut(revoked=revoked)
