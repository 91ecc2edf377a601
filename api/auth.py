"""Authentication as pure ASGI middleware, so it runs before any body parsing or routing.

It buffers the body (refusing more than the limit with 413), checks the key, timestamp and
signature, records the signature against replays, resolves the API version, notes the key's use
(``api.key_use``: written later, in batches, to the minute), and hands the request on with the
caller in ``scope["state"]`` and the version on the response.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import replace
from datetime import timedelta
from typing import Any

from api.deps import Caller
from api.errors import ApiError, error_response
from api.key_use import KeyUse
from api.signing import signature_matches
from core.actors import Actor
from services import access
from services.context import Context, run_blocking
from wire import versioning

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The identity documents (api/routes/identity.py) and the status list credentials
# (api/routes/mandates.py) are public too: verifiers fetch them unsigned. "/orgs/", "/subjects/"
# and "/credentials/status/" hold only those documents; tests/api/test_identity.py fails if a
# route of any other kind appears under a public prefix. "/r/" holds the subject's approval pages
# (the unguessable link is their credential), "/dev/" the development outbox (development only) and
# "/dashboard" the members' pages (their session cookie is their credential: api/routes/dashboard/),
# "/portal" the subject's portal (a one-time code, then its session cookie: api/routes/portal.py).
PUBLIC_PREFIXES = (
    "/docs",
    "/redoc",
    "/openapi.json",
    "/healthz",
    "/readyz",
    "/favicon.ico",
    "/.well-known/did.json",
    "/orgs/",
    "/subjects/",
    "/ns/",
    "/credentials/status/",
    "/r/",
    "/dev/",
    "/dashboard",
    "/portal",
)
READ_METHODS = {"GET", "HEAD", "OPTIONS"}
# Operations that record their signature in their own write transaction, with what they write
# (``Caller.signature``), instead of a transaction of its own here: the hot path of verification.
# A replay is then refused by that transaction (401, nothing written); until it runs, the
# operation has written nothing, so a replayed request refused earlier (a 400) changes nothing.
DEFERRED_SIGNATURE = frozenset({("POST", "/credential/verify")})
TIMESTAMP_RE = re.compile(r"[0-9]{1,16}")
HEX64_RE = re.compile(r"[0-9a-fA-F]{64}")
INVALID_SIGNATURE = "Invalid signature"


class BodyTooLarge(Exception):
    pass


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    for name, value in scope.get("headers", []):
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            raise BodyTooLarge()
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge()
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class Authenticator:
    """Resolves API keys (with a short in-process cache), checks signatures, and notes each
    accepted call's key in ``key_use``."""

    def __init__(self, ctx: Context, key_use: KeyUse) -> None:
        self._s = ctx
        self._cache: dict[str, tuple[float, access.ActiveKey | None]] = {}
        self.key_use = key_use

    async def _resolve(self, api_key: str, *, fresh: bool = False) -> tuple[access.ActiveKey | None, bool]:
        """The key and whether it came from the cache."""
        ttl = self._s.settings.auth_cache_seconds
        hit = self._cache.get(api_key)
        if not fresh and hit is not None and hit[0] > time.monotonic():
            return hit[1], True
        key = await run_blocking(self._s, access.resolve_key, self._s, api_key)
        if ttl > 0:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[api_key] = (time.monotonic() + ttl, key)
        return key, False

    async def _verified_key(
        self, api_key: str, timestamp: str, body: bytes, signature: str
    ) -> access.ActiveKey | None:
        """The key when the signature matches one of its secrets, else None.

        A mismatch against a cached entry is checked again against the database: the key may
        have been created or rotated since, and the new secret must work at once.
        """
        if not HEX64_RE.fullmatch(signature):
            return None
        key, cached = await self._resolve(api_key)
        if key is not None and signature_matches(key.secrets, timestamp, body, signature):
            return key
        if not cached:
            return None
        key, _ = await self._resolve(api_key, fresh=True)
        if key is not None and signature_matches(key.secrets, timestamp, body, signature):
            return key
        return None

    def _remember_pin(self, api_key: str, key: access.ActiveKey, version: str) -> None:
        hit = self._cache.get(api_key)
        if hit is not None and hit[1] is not None:
            self._cache[api_key] = (hit[0], replace(key, api_version=version))

    async def authenticate(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Caller:
        settings = self._s.settings
        scheme, _, api_key = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not api_key.strip():
            raise ApiError(401, "Missing API key: send Authorization: Bearer <apiKey>")
        api_key = api_key.strip()
        timestamp = headers.get("x-timestamp", "").strip()
        if not TIMESTAMP_RE.fullmatch(timestamp):
            raise ApiError(401, "Missing or invalid X-Timestamp: send Unix time in milliseconds")
        window_ms = settings.signature_window.total_seconds() * 1000
        if abs(time.time() * 1000 - int(timestamp)) > window_ms:
            minutes = f"{settings.signature_window.total_seconds() / 60:g}"
            raise ApiError(401, f"Stale X-Timestamp: more than {minutes} minutes from the server clock")
        signature = headers.get("x-signature", "").strip()
        key = await self._verified_key(api_key, timestamp, body, signature)
        # an unknown, expired or revoked key reads exactly like a bad signature, so a leaked API
        # key alone never tells whether it is still live (CONTRACT section 1)
        if key is None:
            raise ApiError(401, INVALID_SIGNATURE)
        # a bad API-Version is refused before the signature is spent, so the client can resend
        try:
            version = versioning.resolve(headers.get("api-version"), key.api_version)
        except versioning.BadVersion as bad:
            raise ApiError(bad.status, str(bad)) from bad
        # remembered until the timestamp leaves the acceptance window, plus a margin
        keep = timedelta(milliseconds=int(timestamp) + window_ms - time.time() * 1000)
        use = access.SignatureUse(
            key.key_id, signature.lower(), method not in READ_METHODS, keep + timedelta(minutes=1)
        )
        deferred = (method, path) in DEFERRED_SIGNATURE
        if not deferred and not await run_blocking(self._s, access.use_signature, self._s, use):
            raise ApiError(401, access.SIGNATURE_USED)
        if key.api_version is None:
            await run_blocking(
                self._s,
                access.pin_api_version,
                self._s,
                Actor.api_key(key.key_id),
                key.organization_id,
                versioning.newest(),
            )
            self._remember_pin(api_key, key, versioning.newest())
        self.key_use.used(key.key_id, key.last_used_at)  # in memory; written off this path
        return Caller(key=key, api_version=version, signature=use if deferred else None)


class SignedRequestMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ctx: Context = scope["app"].state.ctx
        try:
            body = await read_body(scope, receive, ctx.settings.max_body_bytes)
        except BodyTooLarge:
            limit = ctx.settings.max_body_bytes
            await error_response(413, f"Body larger than {limit} bytes")(scope, receive, send)
            return
        replay = replay_body(body, receive)
        path: str = scope["path"]
        if path == "/" or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, replay, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        authenticator: Authenticator = scope["app"].state.authenticator
        try:
            caller = await authenticator.authenticate(scope["method"], path, headers, body)
        except ApiError as exc:
            await error_response(exc.status, exc.message)(scope, receive, send)
            return
        scope.setdefault("state", {})["caller"] = caller
        version_header = (b"api-version", caller.api_version.encode())

        async def send_with_version(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), version_header]
            await send(message)

        await self.app(scope, replay, send_with_version)


def replay_body(body: bytes, downstream: Receive) -> Receive:
    """The buffered body once, then the real channel (which only reports a disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await downstream()

    return receive
