"""What each operation can answer, as its route declares it for the OpenAPI document.

A route lists only the statuses it can really send (docs/api.md says how each was found):
``errors(400, 401, 404)`` for the plain error shape, with this module's words for each, and
``answer(...)`` where a status has its own model, words or headers. ``api.openapi`` then adds
what every operation shares (the signature, ``API-Version``, ``X-Request-Id``, ``Retry-After`` on
429 and 503) and drops the 422 FastAPI would otherwise list everywhere.
"""

from __future__ import annotations

from typing import Any

from fastapi import Path
from pydantic import BaseModel

from wire.models import ErrorOut
from wire.signed import COMPONENTS

Responses = dict[int | str, dict[str, Any]]

STATUS_WORDS: dict[int, str] = {
    400: (
        "Invalid input, each problem named in `message`: a path or query parameter, the body, a query "
        "parameter this operation does not take, a malformed or future `API-Version`"
    ),
    401: (
        "Not authenticated: no API key, a missing or stale `X-Timestamp`, a signature that does not "
        "match (`Invalid signature`, also for an unknown, expired or revoked key), or one already used"
    ),
    403: "Not allowed for the caller's organization",
    404: "Not found, or another organization's (never told apart)",
    409: "In conflict with the resource's state",
    413: "Body larger than 1 MiB",
    422: "Understood, but it could not be done",
    429: "Too many: try again after `Retry-After` seconds",
    503: "A service this call needs is busy or unreachable: try again after `Retry-After` seconds",
}


def answer(
    status: int,
    description: str | None = None,
    model: type[BaseModel] = ErrorOut,
    headers: dict[str, Any] | None = None,
) -> Responses:
    """One documented answer: its model (the error shape unless given), words and headers."""
    declared: dict[str, Any] = {"model": model, "description": description or STATUS_WORDS[status]}
    if headers:
        declared["headers"] = headers
    return {status: declared}


def errors(*statuses: int, **words: str) -> Responses:
    """The error shape for each status, with this module's words unless ``s404="..."`` gives others."""
    found: Responses = {}
    for status in statuses:
        found.update(answer(status, words.get(f"s{status}")))
    return found


def retry_after_header(required: bool = True) -> dict[str, Any]:
    """``Retry-After``: whole seconds to wait before trying again."""
    return {
        "description": "Seconds to wait before trying again",
        "required": required,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    }


def json_document_responses(media_type: str, model: type[BaseModel], public_cache: bool = False) -> Responses:
    """A public JSON document (``api.conditional.json_document``): 200 with it, or 304 when
    ``If-None-Match`` names its ETag; both with ``ETag`` and ``Cache-Control``."""
    caching = "public, max-age=<seconds>" if public_cache else "no-cache"
    headers = {
        "ETag": {
            "description": "The document's version: send it back as If-None-Match",
            "required": True,
            "schema": {"type": "string"},
        },
        "Cache-Control": {"description": caching, "required": True, "schema": {"type": "string"}},
    }
    return {
        200: {
            "description": (model.__doc__ or model.__name__).strip().splitlines()[0],
            "content": {media_type: {"schema": {"$ref": COMPONENTS + model.__name__}}},
            "headers": headers,
        },
        304: {"description": "Not modified: If-None-Match names the current ETag", "headers": headers},
    }


def path_param(pattern: str, description: str, max_length: int | None = None) -> Any:
    """A path parameter whose schema declares ``pattern`` without FastAPI checking it: the route's
    own check answers a mismatch with the service's own 400 message (``wire.patterns`` says why
    each pattern is exactly what that check takes)."""
    schema: dict[str, Any] = {"pattern": pattern}
    if max_length is not None:
        schema["maxLength"] = max_length
    return Path(description=description, json_schema_extra=schema)
