"""What a browser asks of any site on its own: ``/favicon.ico`` (every page's tab shows it; without
a route each page view was a 404 counted under ``unmatched``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import Response

router = APIRouter()
FAVICON = Path(__file__).resolve().parent.parent / "static" / "favicon.ico"


@cache
def favicon_bytes() -> bytes:
    return FAVICON.read_bytes()


@router.api_route("/favicon.ico", methods=["GET", "HEAD"], include_in_schema=False)
async def favicon() -> Response:
    return Response(
        favicon_bytes(),
        media_type="image/vnd.microsoft.icon",
        headers={"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"},
    )
