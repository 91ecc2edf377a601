"""JSON documents served with an ETag and answered 304 when the client already has them
(the public DID documents, the JSON-LD context, the status lists)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from fastapi import Request, Response


def etag_matches(request: Request, etag: str) -> bool:
    """``If-None-Match`` against ``etag`` with the weak comparison RFC 9110 asks for (``W/`` is
    ignored), ``*`` matching anything."""
    wanted = {t.strip().removeprefix("W/") for t in request.headers.get("if-none-match", "").split(",")}
    return etag.removeprefix("W/") in wanted or "*" in wanted


def json_document(
    request: Request, document: dict[str, Any], media_type: str, cache_control: str, etag: str | None = None
) -> Response:
    """``document`` as compact JSON with ``etag`` (by default a strong one from its bytes), or
    304 when the request's ``If-None-Match`` names it."""
    body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
    etag = etag or '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"ETag": etag, "Cache-Control": cache_control}
    if etag_matches(request, etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)
