"""Development pages, served in development only (``MANDATUM_ENVIRONMENT=development``, what
``make run`` uses; never in test or production): the outbox of messages the worker wrote instead
of sending them (``MANDATUM_EMAIL_TRANSPORT=outbox``, the default outside production), so a
newcomer can finish a flow on one machine, and the development identity provider
(``adapters.kyc.DevelopmentProvider``), whose page simulates a document and a selfie check."""

from __future__ import annotations

import asyncio
import re
import secrets
from dataclasses import asdict
from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from adapters.delivery import outbox_of
from api.deps import ContextDep, TemporalDep
from api.errors import ApiError
from api.pages import TEMPLATES, page_headers
from core.actors import Actor, ActorKind
from core.kinds import IdentityStatus
from core.origins import header_origins
from services import journey
from wire.identity_match import CheckedDocument


def _development_only(request: Request) -> None:
    """Every route here: 404 outside development (in test and in production), as if it did not
    exist."""
    if not request.app.state.ctx.settings.dev_pages:
        raise ApiError(404, "Not found")


router = APIRouter(include_in_schema=False, dependencies=[Depends(_development_only)])
URL_RE = re.compile(r"(https?://\S+)")


def _parts(text: str) -> list[dict[str, Any]]:
    """The text with its URLs marked, so the page makes them links without trusting any HTML."""
    return [{"text": piece, "link": i % 2 == 1} for i, piece in enumerate(URL_RE.split(text)) if piece]


@router.get("/dev/outbox.json")
async def outbox_json(ctx: ContextDep, to: str | None = None) -> JSONResponse:
    entries = await asyncio.to_thread(outbox_of(ctx.settings).entries, to)
    return JSONResponse({"data": [asdict(e) for e in entries]}, headers={"Cache-Control": "no-store"})


@router.get("/dev/outbox", response_class=HTMLResponse)
async def outbox_page(ctx: ContextDep, to: str | None = None) -> HTMLResponse:
    entries = await asyncio.to_thread(outbox_of(ctx.settings).entries, to)
    nonce = secrets.token_urlsafe(16)
    html = TEMPLATES.get_template("outbox.html").render(
        html_lang="en",
        title="Development outbox",
        nonce=nonce,
        entries=[{**asdict(e), "parts": _parts(e.text)} for e in entries],
    )
    return HTMLResponse(html, headers=page_headers(nonce))


RETURN_PATH_RE = re.compile(r"/r/[A-Za-z0-9_-]{1,64}/kyc/return")


def _safe_return(ctx: ContextDep, url: str, check_id: str) -> str:
    """Only back to the return of this check on one of our approval pages (never an open redirect)."""
    public = urlsplit(ctx.settings.public_url)
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if (
        (parts.scheme, parts.netloc) != (public.scheme, public.netloc)
        or parts.fragment
        or not RETURN_PATH_RE.fullmatch(parts.path)
        or query.get("check") != [check_id]
    ):
        raise ApiError(400, "return must be this check's return to an approval page of this service")
    return url


@router.get("/dev/kyc/{check_id}", response_class=HTMLResponse)
async def kyc_page(
    check_id: str, ctx: ContextDep, return_: Annotated[str, Query(alias="return")] = ""
) -> HTMLResponse:
    check = await journey.identity_check(ctx, check_id)
    nonce = secrets.token_urlsafe(16)
    html = TEMPLATES.get_template("dev_kyc.html").render(
        html_lang="en",
        title="Identity check (development)",
        nonce=nonce,
        check_id=check.id,
        return_url=_safe_return(ctx, return_, check.id) if return_ else "",
        done=None if check.status == IdentityStatus.PENDING else check.status.lower(),
    )
    # shown inside the approval iframe too: the same origins may frame it
    origins = await journey.frame_origins(ctx, check.request_id)
    local = ctx.settings.allow_loopback_http
    allowed = header_origins(origins, local)  # checked again for the header
    return HTMLResponse(html, headers=page_headers(nonce, " ".join(allowed) or "'none'"))


PROVIDER = Actor(ActorKind.PROVIDER, "development")


@router.post("/dev/kyc/{check_id}")
async def kyc_result(
    check_id: str,
    ctx: ContextDep,
    temporal: TemporalDep,
    document: str = Form("pass"),
    selfie: str = Form("pass"),
    return_: str = Form("", alias="return"),
    documentNumber: str = Form("", max_length=64),
    fullName: str = Form("", max_length=200),
    birth: str = Form("", max_length=10),
    countryAlpha3: str = Form("", max_length=3),
) -> Response:
    failed = [name for name, value in (("document", document), ("selfie", selfie)) if value != "pass"]
    message = f"The {' and '.join(failed)} check failed" if failed else "Document and selfie verified"
    # what the simulated document says (a real provider reads it from the document): compared with
    # what the organization expects of the subject (services.journey.complete_identity_check)
    read = CheckedDocument(
        document_id=documentNumber.strip() or None,
        full_name=fullName.strip() or None,
        birth=birth.strip() or None,
        country_alpha3=countryAlpha3.strip() or None,
    )
    # the development provider's page stands in for a provider reporting its result
    check = await journey.complete_identity_check(ctx, PROVIDER, check_id, not failed, message, read)
    if return_:
        return RedirectResponse(
            _safe_return(ctx, return_, check_id),
            status_code=303,
            headers={"Referrer-Policy": "no-referrer"},
        )
    return JSONResponse({"id": check.id, "status": check.status, "message": check.message})
