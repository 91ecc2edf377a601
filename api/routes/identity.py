"""Public identity documents (CONTRACT section 3), unsigned: anyone verifying our credentials,
presentations and receipts must be able to fetch them.

- ``GET /.well-known/did.json``: the service (issuer) DID document, every key, the active first.
- ``GET /orgs/{orgId}/did.json``: an organization's DID document (its key is made on first use).
- ``GET /subjects/{uuid}/did.json``: a subject's minimal document (subjects hold no keys).
- ``GET /ns/v1``: the JSON-LD context of our terms.

DID documents are served as ``application/did+json`` (the DID representation media type; every
JSON client reads it, since it ends in ``+json``) with ``Cache-Control: no-cache`` and an ETag:
caches revalidate cheaply, and a rotation is visible at once. The context is immutable per
version path, so it may be cached for a day.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request, Response

from api.conditional import json_document
from api.deps import ContextDep
from api.errors import ApiError
from api.responses import errors, json_document_responses, path_param
from api.versions import VersionedRoute
from core.ids import is_object_id
from core.text import shown
from services import did_documents
from trust.context import CONTEXT_PATH, context_document
from trust.did import UnknownVerificationMethod, did_key_document, web_organization_did, web_subject_did
from wire import patterns
from wire.models import DID_RE
from wire.signed import DidDocument, JsonLdContext

router = APIRouter(tags=["identity"], route_class=VersionedRoute)
DID_MEDIA_TYPE = "application/did+json"
JSON_LD_MEDIA_TYPE = "application/ld+json"
DID_CACHE_CONTROL = "no-cache"
CONTEXT_CACHE_CONTROL = "public, max-age=86400"
MAX_DID_LENGTH = patterns.MAX_DID_LENGTH
DID_DOCUMENT = json_document_responses(DID_MEDIA_TYPE, DidDocument)


@router.get(
    "/.well-known/did.json",
    summary="The service's DID document (issuer keys)",
    response_class=Response,
    responses=DID_DOCUMENT,
)
async def service_did_document(request: Request, ctx: ContextDep) -> Response:
    document = await did_documents.service_document(ctx)
    return json_document(request, document, DID_MEDIA_TYPE, DID_CACHE_CONTROL)


@router.get(
    "/orgs/{org_id}/did.json",
    summary="An organization's DID document",
    response_class=Response,
    responses={**DID_DOCUMENT, **errors(404, s404="No organization has this id (24 lower-case hex)")},
)
async def organization_did_document(
    org_id: Annotated[str, path_param(patterns.OBJECT_ID, "The organization id")],
    request: Request,
    ctx: ContextDep,
) -> Response:
    document = None
    if is_object_id(org_id):
        document = await did_documents.organization_document(ctx, org_id)
    if document is None:
        raise ApiError(404, f"Organization {shown(org_id)} not found")
    return json_document(request, document, DID_MEDIA_TYPE, DID_CACHE_CONTROL)


@router.get(
    "/subjects/{subject_id}/did.json",
    summary="A subject's DID document",
    response_class=Response,
    responses={**DID_DOCUMENT, **errors(404, s404="No subject has this id")},
)
async def subject_did_document(
    subject_id: Annotated[str, path_param(patterns.CANONICAL_UUID, "The subject's UUID")],
    request: Request,
    ctx: ContextDep,
) -> Response:
    settings = ctx.settings
    document = await did_documents.document_of(ctx, web_subject_did(settings.public_url, subject_id))
    if document is None:
        raise ApiError(404, f"Subject {shown(subject_id)} not found")
    return json_document(request, document, DID_MEDIA_TYPE, DID_CACHE_CONTROL)


def _organization_of(public_url: str, did: str) -> str | None:
    """The organization id of one of our organization DIDs, else None."""
    org_id = did.rpartition(":")[2]
    return org_id if is_object_id(org_id) and did == web_organization_did(public_url, org_id) else None


@router.get(
    "/did/resolve/{did}",
    summary="Resolve a DID this service can: its own did:web DIDs, or any Ed25519 did:key",
    response_class=Response,
    responses={
        **DID_DOCUMENT,
        **errors(
            400,
            401,
            404,
            s400="Not a DID (at most 500 characters), a did:key that is not Ed25519, or other invalid input",
            s404="Not a DID this service resolves: its own did:web DIDs and Ed25519 did:key",
        ),
    },
)
async def resolve_did(
    did: Annotated[str, path_param(patterns.DID, "The DID, percent-encoded or not", patterns.MAX_DID_LENGTH)],
    request: Request,
    ctx: ContextDep,
) -> Response:
    """The DID document, as each DID's own route serves it. Another DID method or host is a 404
    naming what this service resolves: it never fetches a document from elsewhere."""
    if len(did) > MAX_DID_LENGTH or not DID_RE.fullmatch(did):
        raise ApiError(400, f"{shown(did)} is not a DID")
    document: dict[str, Any] | None
    if did.startswith("did:key:"):
        try:
            document = did_key_document(did)
        except UnknownVerificationMethod as exc:
            raise ApiError(400, str(exc)) from exc
    elif (org_id := _organization_of(ctx.settings.public_url, did)) is not None:
        # as its own route: the key is made on first use
        document = await did_documents.organization_document(ctx, org_id)
    else:
        document = await did_documents.document_of(ctx, did, fresh=True)
    if document is None:
        raise ApiError(
            404,
            f"DID {shown(did)} not found: this service resolves its own did:web DIDs and Ed25519 did:key",
        )
    return json_document(request, document, DID_MEDIA_TYPE, DID_CACHE_CONTROL)


@router.get(
    CONTEXT_PATH,
    summary="The JSON-LD context of Mandatum's terms",
    response_class=Response,
    responses=json_document_responses(JSON_LD_MEDIA_TYPE, JsonLdContext, public_cache=True),
)
async def json_ld_context(request: Request) -> Response:
    return json_document(request, context_document(), JSON_LD_MEDIA_TYPE, CONTEXT_CACHE_CONTROL)
