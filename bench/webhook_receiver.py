"""The webhook benchmark's receiver: HTTP/1.1 on 127.0.0.1, in the benchmark's own event loop.

It notes when each POST arrived (the moment its whole body has been read, on ``time.perf_counter``,
the clock the decision was started on), then checks it as an integrator would (docs/webhooks.md):
the signature over the raw body, then AES-256-GCM under the PBKDF2 key, derived once here rather
than per event. A ``credential`` event is matched to the request whose decision waits for it by
the decrypted ``requestId``, and hands that waiter its arrival. Checking and decrypting come after
the arrival is noted, so they are not counted.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

REASONS = {200: b"OK", 400: b"Bad Request", 401: b"Unauthorized"}


@dataclass(frozen=True)
class WebhookSecrets:
    signature: str
    encryption: str  # base64
    salt: str

    @classmethod
    def generate(cls) -> WebhookSecrets:
        encryption = base64.b64encode(secrets.token_bytes(32)).decode()
        return cls(secrets.token_urlsafe(32), encryption, secrets.token_hex(16))

    def key(self) -> bytes:
        return hashlib.pbkdf2_hmac(
            "sha256", base64.b64decode(self.encryption), self.salt.encode(), 10_000, dklen=32
        )


@dataclass(frozen=True)
class Arrival:
    """A request's ``credential`` event as it arrived."""

    at: float  # time.perf_counter()
    wall: float  # time.time(), to place it among the workflows' history events
    event: dict[str, Any]


@dataclass
class Tally:
    received: int = 0
    matched: int = 0
    bad_signature: int = 0
    undecryptable: int = 0
    duplicates: int = 0  # a Webhook-Id seen before (delivery is at least once)
    unexpected: int = 0  # another event type, or a request nobody waits for


@dataclass
class Receiver:
    webhook_secrets: WebhookSecrets
    tally: Tally = field(default_factory=Tally)
    url: str = ""
    _key: bytes = b""
    _waiting: dict[str, asyncio.Future[Arrival]] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)
    _server: asyncio.Server | None = None
    _open: set[asyncio.StreamWriter] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._key = self.webhook_secrets.key()

    def expect(self, request_id: str) -> asyncio.Future[Arrival]:
        """The arrival of ``request_id``'s ``credential`` event (ask before deciding)."""
        return self._waiting.setdefault(request_id, asyncio.get_running_loop().create_future())

    def forget(self, request_id: str) -> None:
        self._waiting.pop(request_id, None)

    def accept(self, headers: dict[str, str], body: bytes, arrived: float, wall: float) -> int:
        """Check one POST (``headers`` named in lower case) and hand its arrival over: the status
        to answer."""
        self.tally.received += 1
        timestamp = headers.get("x-timestamp", "")
        expected = hmac.new(
            self.webhook_secrets.signature.encode(), timestamp.encode() + b"." + body, hashlib.sha256
        ).hexdigest()
        if not hmac.compare_digest(expected, headers.get("x-signature", "")):
            self.tally.bad_signature += 1
            return 401
        try:
            envelope = json.loads(body)
            iv, data, tag = (base64.b64decode(envelope[k]) for k in ("iv", "data", "tag"))
            event = json.loads(AESGCM(self._key).decrypt(iv, data + tag, None))
        except Exception:  # any tampering or malformed body: what an integrator refuses
            self.tally.undecryptable += 1
            return 400
        webhook_id = headers.get("webhook-id", "")
        if webhook_id in self._seen:
            self.tally.duplicates += 1
            return 200
        self._seen.add(webhook_id)
        waiter = self._waiting.get(str(event.get("requestId")))
        if event.get("eventType") != "credential" or waiter is None or waiter.done():
            self.tally.unexpected += 1
            return 200
        del self._waiting[str(event["requestId"])]
        waiter.set_result(Arrival(arrived, wall, event))
        self.tally.matched += 1
        return 200

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                headers = parse_head(head)
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status = self.accept(headers, body, time.perf_counter(), time.time())
                close = headers.get("connection", "").lower() == "close"
                writer.write(
                    b"HTTP/1.1 %d %s\r\ncontent-length: 0\r\n%s\r\n"
                    % (status, REASONS[status], b"connection: close\r\n" if close else b"")
                )
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            pass
        finally:
            self._open.discard(writer)
            writer.close()

    async def __aenter__(self) -> Receiver:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/hooks/bench"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._open):  # idle keep-alive connections (wait_closed waits on them)
                writer.close()
            await self._server.wait_closed()


def parse_head(head: bytes) -> dict[str, str]:
    """The header fields of a request head, names in lower case."""
    lines = head.decode("latin-1").split("\r\n")[1:]
    fields = (line.split(":", 1) for line in lines if ":" in line)
    return {name.strip().lower(): value.strip() for name, value in fields}
