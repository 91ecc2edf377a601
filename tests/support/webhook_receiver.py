"""A webhook receiver for the tests: a real HTTP server on 127.0.0.1 that checks what it gets the
way an integrator would, written from CONTRACT section 7 (not with the sender's code).

- ``X-Signature`` must be the lower-case hex HMAC-SHA256, keyed with the UTF-8 signature secret,
  of ``"<X-Timestamp>.<raw body>"`` over the bytes as received.
- The body is ``{"iv","data","tag"}`` (base64, in that order); the key is PBKDF2-HMAC-SHA256 of
  the base64-decoded encryption secret with the UTF-8 salt, 10,000 iterations, 32 bytes; AES-256-GCM
  with no associated data over ``data`` followed by ``tag``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SIGNATURE_SECRET = "whsig-test-secret-ünïcode"
ENCRYPTION_SECRET = base64.b64encode(b"an encryption password, 32 bytes").decode()
SALT = "salt-of-the-test"


@dataclass
class Delivery:
    """One POST as received, checked."""

    webhook_id: str
    timestamp_ms: int
    received_at: float
    raw_body: bytes
    signature_ok: bool
    content_type: str
    event: dict[str, Any] | None  # None when the body did not decrypt
    key_order: list[str]
    host: str = ""  # the Host header
    headers: dict[str, str] = field(default_factory=dict)  # every header, as an SDK's reader takes them


def decrypt(
    raw_body: bytes, encryption_secret: str = ENCRYPTION_SECRET, salt: str = SALT
) -> tuple[dict[str, Any], list[str]]:
    envelope = json.loads(raw_body)
    key = hashlib.pbkdf2_hmac(
        "sha256", base64.b64decode(encryption_secret), salt.encode("utf-8"), 10_000, dklen=32
    )
    iv, data, tag = (base64.b64decode(envelope[name]) for name in ("iv", "data", "tag"))
    assert len(iv) == 12 and len(tag) == 16
    plain = AESGCM(key).decrypt(iv, data + tag, None)
    return json.loads(plain.decode("utf-8")), list(envelope)


def signature_ok(raw_body: bytes, timestamp: str, received: str, secret: str = SIGNATURE_SECRET) -> bool:
    expected = hmac.new(
        secret.encode("utf-8"), timestamp.encode() + b"." + raw_body, hashlib.sha256
    ).hexdigest()
    return hmac.compare_digest(expected, received) and received == received.lower()


@dataclass
class Receiver:
    """``answer(n)`` gives the status of the n-th POST (1-based); ``hang`` seconds of delay too."""

    answer: Callable[[int], int]
    url: str = ""
    deliveries: list[Delivery] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, headers: Any, raw: bytes) -> int:
        try:
            event, order = decrypt(raw)
        except Exception:
            event, order = None, []
        timestamp = headers.get("X-Timestamp", "")
        with self.lock:
            self.deliveries.append(
                Delivery(
                    webhook_id=headers.get("Webhook-Id", ""),
                    timestamp_ms=int(timestamp or 0),
                    received_at=time.time(),
                    raw_body=raw,
                    signature_ok=signature_ok(raw, timestamp, headers.get("X-Signature", "")),
                    content_type=headers.get("Content-Type", ""),
                    event=event,
                    key_order=order,
                    host=headers.get("Host", ""),
                    headers=dict(headers.items()),
                )
            )
            return self.answer(len(self.deliveries))

    def count(self) -> int:
        with self.lock:
            return len(self.deliveries)


@contextmanager
def receiving(answer: Callable[[int], int], body: bytes = b"") -> Iterator[Receiver]:
    """A receiver answering each delivery with ``answer(n)`` (n from 1) and ``body``."""
    receiver = Receiver(answer)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the http.server API names it so
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status = receiver.handle(self.headers, raw)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            if body:
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("X-Receiver", "tests")
            self.end_headers()
            if body:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/mandatum"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
