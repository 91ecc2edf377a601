"""Limits on what a JSON body may hold: its nesting, checked where it enters, before FastAPI decodes
it or pydantic sees it. (Numbers the signed forms cannot hold are refused by the wire models:
``wire.numbers.reject_non_jcs``.)

``JsonDepthMiddleware`` sits right inside the signature middleware (which has buffered the body,
refused more than 1 MiB and authenticated the caller): a body nested more than ``MAX_JSON_DEPTH``
levels is a 400 before any route runs, so nothing is stored, started or sent for it. The depth
of a value is the number of arrays and objects around its innermost part: ``{}`` and ``[1]`` are
1, ``{"a": [{}]}`` is 3; the request body itself counts (``wire.json_depth`` measures it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from api.auth import replay_body
from api.errors import error_response
from wire.json_depth import MAX_JSON_DEPTH, json_depth_exceeds

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _is_form(scope: Scope) -> bool:
    """HTML form posts (the approval pages) are not JSON; FastAPI reads every other body as JSON."""
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            return value.lower().startswith((b"application/x-www-form-urlencoded", b"multipart/"))
    return False


class JsonDepthMiddleware:
    def __init__(self, app: ASGIApp, limit: int = MAX_JSON_DEPTH) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS") or _is_form(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if json_depth_exceeds(body, self.limit):
            await error_response(400, [f"body is nested more than {self.limit} levels deep"], scope=scope)(
                scope, receive, send
            )
            return
        await self.app(scope, replay_body(body, receive), send)
