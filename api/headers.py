"""Headers every answer carries (pure ASGI middleware, outermost, so it also covers the signature
middleware's refusals): ``X-Content-Type-Options: nosniff``; ``Cache-Control: no-store`` unless the
route chose its own caching (the public documents: DID documents, the JSON-LD context, the status
lists); ``Strict-Transport-Security`` in production; and never a ``Server`` banner (uvicorn's own is
turned off where it is started, with ``server_header=False`` / ``--no-server-header``).
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NOSNIFF = ("X-Content-Type-Options", "nosniff")
NO_STORE = ("Cache-Control", "no-store")
HSTS = ("Strict-Transport-Security", "max-age=31536000; includeSubDomains")


def security_headers(hsts: bool) -> dict[str, str]:
    """The headers to add to an answer built outside the middleware (the 500 handler)."""
    return dict([NOSNIFF, NO_STORE, *([HSTS] if hsts else [])])


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp, hsts: bool) -> None:
        self.app = app
        self.hsts = hsts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                del headers["server"]
                headers[NOSNIFF[0]] = NOSNIFF[1]
                if "cache-control" not in headers:
                    headers[NO_STORE[0]] = NO_STORE[1]
                if self.hsts:
                    headers[HSTS[0]] = HSTS[1]
            await send(message)

        await self.app(scope, receive, send_with_headers)
