"""Post, redirect, get for a form whose answer shows a secret (a new API key, a webhook's secrets):
the secret travels to the page the redirect leads to once, sealed under the service's key
(``core.secretbox``) in a short-lived HttpOnly, ``SameSite=Strict`` cookie on that page's path,
bound to the member who made it; that page reads it and clears it, so a reload shows nothing and
repeats nothing (issue 34)."""

from __future__ import annotations

import base64
import json
from typing import Any

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from api.routes.dashboard.common import secure
from services.context import Context, utcnow
from store.tables import Member

SECONDS = 120  # long enough for the redirect, short enough to be gone soon after
MAX_COOKIE = 4096


def redirect_showing(
    ctx: Context, member: Member, where: str, cookie: str, shown: dict[str, Any]
) -> Response:
    """303 to ``where`` (a path, maybe with a query), carrying ``shown`` for this member once."""
    path = where.split("?", 1)[0]
    sealed = ctx.cipher.encrypt(json.dumps({"member": member.id, "at": utcnow().timestamp(), "shown": shown}))
    answer = RedirectResponse(where, status_code=303)
    answer.set_cookie(
        cookie,
        base64.urlsafe_b64encode(sealed).decode(),
        max_age=SECONDS,
        path=path,
        httponly=True,
        samesite="strict",
        secure=secure(ctx),
    )
    return answer


def taken(ctx: Context, member: Member, request: Request, cookie: str) -> dict[str, Any] | None:
    """What ``redirect_showing`` sealed, when it is this member's and fresh; else None."""
    raw = request.cookies.get(cookie)
    if not raw or len(raw) > MAX_COOKIE:
        return None
    try:
        found = json.loads(ctx.cipher.decrypt(base64.urlsafe_b64decode(raw.encode())))
        age = utcnow().timestamp() - float(found["at"])
        shown = found["shown"]
    except Exception:  # tampered, sealed under another key, or garbage: nothing is shown
        return None
    if found.get("member") != member.id or not 0 <= age <= SECONDS or not isinstance(shown, dict):
        return None
    return shown


def cleared(ctx: Context, request: Request, answer: Response, cookie: str, path: str) -> Response:
    """``answer`` with the cookie cleared when the browser sent one: shown once."""
    if cookie in request.cookies:
        answer.delete_cookie(cookie, path=path, httponly=True, samesite="strict", secure=secure(ctx))
    return answer
