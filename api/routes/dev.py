"""Development pages: the outbox of messages the worker wrote instead of sending them
(``MANDATUM_EMAIL_TRANSPORT=outbox``, the default outside production), so a newcomer can finish a
flow on one machine. Not served in production."""

from __future__ import annotations

import asyncio
import re
import secrets
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse

from api.deps import ServicesDep
from api.errors import ApiError
from api.routes.journey import TEMPLATES
from core.delivery import outbox_of

router = APIRouter(include_in_schema=False)
URL_RE = re.compile(r"(https?://\S+)")


def _parts(text: str) -> list[dict[str, Any]]:
    """The text with its URLs marked, so the page makes them links without trusting any HTML."""
    return [{"text": piece, "link": i % 2 == 1} for i, piece in enumerate(URL_RE.split(text)) if piece]


def _check(services: ServicesDep) -> None:
    if not services.settings.dev_pages:
        raise ApiError(404, "Not found")


@router.get("/dev/outbox.json")
async def outbox_json(services: ServicesDep, to: str | None = None) -> JSONResponse:
    _check(services)
    entries = await asyncio.to_thread(outbox_of(services.settings).entries, to)
    return JSONResponse({"data": [asdict(e) for e in entries]}, headers={"Cache-Control": "no-store"})


@router.get("/dev/outbox", response_class=HTMLResponse)
async def outbox_page(services: ServicesDep, to: str | None = None) -> HTMLResponse:
    _check(services)
    entries = await asyncio.to_thread(outbox_of(services.settings).entries, to)
    nonce = secrets.token_urlsafe(16)
    html = TEMPLATES.get_template("outbox.html").render(
        html_lang="en", title="Development outbox", nonce=nonce,
        entries=[{**asdict(e), "parts": _parts(e.text)} for e in entries])
    return HTMLResponse(html, headers={
        "Content-Security-Policy": f"default-src 'none'; style-src 'nonce-{nonce}'; frame-ancestors 'none'",
        "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})
