"""CONTRACT section 1: which bytes a client may have signed, and how a signature is checked.

Pure functions, shared by the server and by anyone writing a client.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator


def sign(secret: str, timestamp: str, body: bytes = b"") -> str:
    """What a client sends as X-Signature for this timestamp and body."""
    content = timestamp.encode() if _is_empty(body) else timestamp.encode() + b"." + body
    return hmac.new(secret.encode(), content, hashlib.sha256).hexdigest()


def _is_empty(body: bytes) -> bool:
    """No body, or an empty JSON object (``{}``, however a client spaced it)."""
    stripped = body.strip()
    return not stripped or (stripped[:1] == b"{" and stripped[-1:] == b"}" and not stripped[1:-1].strip())


def signed_contents(timestamp: str, body: bytes) -> Iterator[bytes]:
    """Every accepted form of the signed content, cheapest first.

    The timestamp alone for an empty body (``{}`` counts as empty); otherwise the raw body, then
    the compact re-serialization of the parsed JSON (key order kept) with non-ASCII escaped, then
    the same unescaped.
    """
    ts = timestamp.encode()
    if _is_empty(body):
        yield ts
        if not body.strip():
            return
    yield ts + b"." + body
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return
    seen = {body}
    for ascii_only in (True, False):
        try:
            form = json.dumps(parsed, separators=(",", ":"), ensure_ascii=ascii_only).encode()
        except UnicodeEncodeError:  # a lone surrogate (\ud800) has no UTF-8 form: no client signs one
            continue
        if form not in seen:
            seen.add(form)
            yield ts + b"." + form


def signature_matches(secrets: tuple[str, ...], timestamp: str, body: bytes, signature: str) -> bool:
    """Constant-time comparison against every accepted secret and content form."""
    given = signature.strip().lower().encode()
    ok = False
    for content in signed_contents(timestamp, body):
        for secret in secrets:
            expected = hmac.new(secret.encode(), content, hashlib.sha256).hexdigest().encode()
            ok |= hmac.compare_digest(expected, given)
        if ok:
            return True
    return False
