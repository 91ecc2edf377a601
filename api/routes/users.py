"""Users: ``POST /user`` imports 1 to 100 of the organization's users, ``GET /user`` reads one
(issue 36; ``services.users``). Each item of an import is read here on its own: an invalid one is
answered in its place (status 400 and why), the others go on."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from api.deps import CallerDep, ContextDep
from api.errors import describe_validation_error
from api.responses import answer, errors
from api.versions import VersionedRoute
from services import users
from wire.signed import COMPONENTS
from wire.users import MAX_USERS, CreateSubjectIn, CreateSubjectOut, UserOut

router = APIRouter(tags=["users"], route_class=VersionedRoute)
NO_USER = "No user of the caller's organization has this contact, id or internalId"
ITEMS_SCHEMA = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_USERS,
    "items": {"$ref": f"{COMPONENTS}CreateSubjectIn"},
}


def _echo(item: dict[str, Any], name: str, limit: int) -> str | None:
    """A member of an invalid item echoed back: only a short one-line string."""
    value = item.get(name)
    if isinstance(value, str) and len(value) <= limit and value.isprintable():
        return value
    return None


def _read(item: dict[str, Any]) -> CreateSubjectIn | users.Refusal:
    try:
        return CreateSubjectIn.model_validate(item)
    except ValidationError as exc:
        messages = list(dict.fromkeys(describe_validation_error(dict(e)) for e in exc.errors()))
        return users.Refusal("; ".join(messages), _echo(item, "contact", 320), _echo(item, "internalId", 255))


@router.post(
    "/user",
    status_code=201,
    response_model=list[CreateSubjectOut],
    openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"schema": ITEMS_SCHEMA}}}
    },
    responses={
        **errors(400, 401, 413),
        **answer(409, "Idempotency-Key already used with another body"),
        **answer(429, "Too many imports this minute (the organization's request rate)"),
    },
)
async def create_users(
    body: Annotated[list[dict[str, Any]], Body(min_length=1, max_length=MAX_USERS)],
    caller: CallerDep,
    ctx: ContextDep,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=255)] = None,
) -> Any:
    """Import users: each answered in its place (201 created, updated or unchanged; 400 invalid;
    409 its contact twice in the body; 410 its internalId names another user). The identity is
    kept encrypted, matched against identity checks, and never answered."""
    imported = await users.import_users(
        ctx,
        caller.actor,
        caller.organization_id,
        [_read(item) for item in body],
        body,
        rate_per_minute=caller.key.request_rate_per_minute,
        idempotency_key=idempotency_key,
    )
    return JSONResponse(imported.response, status_code=imported.status_code)


@router.get("/user", response_model=UserOut, responses=errors(400, 401, 404, s404=NO_USER))
async def get_user(
    caller: CallerDep,
    ctx: ContextDep,
    contact: Annotated[str | None, Query(max_length=320, description="The user's contact")] = None,
    id: Annotated[str | None, Query(max_length=500, description="The user's DID")] = None,
    internalId: Annotated[
        str | None, Query(max_length=255, description="The organization's reference")
    ] = None,
) -> Any:
    """A user of the organization, named by exactly one of `contact`, `id` and `internalId`."""
    found = await users.get_user(
        ctx, caller.actor, caller.organization_id, contact=contact, did=id, internal_id=internalId
    )
    return JSONResponse(found.model_dump(mode="json"))
