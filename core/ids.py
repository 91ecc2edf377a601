"""Identifiers of CONTRACT section 3.

ObjectId-shaped ids are 4 bytes of big-endian seconds, 5 random bytes fixed per process and a
3-byte counter starting at a random value, as MongoDB makes them. It is a dozen lines, so it is
written here rather than pulling in a MongoDB driver for it.
"""

from __future__ import annotations

import itertools
import os
import re
import secrets
import threading
import time
import uuid

OBJECT_ID_RE = re.compile(r"[0-9a-f]{24}")
UUID_PATTERN = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # as str(uuid.UUID) writes it
ENCODED_COLON_RE = re.compile("%3a", re.IGNORECASE)

_process_random = secrets.token_bytes(5)
_process_pid = os.getpid()
_counter = itertools.count(secrets.randbelow(0xFFFFFF))
_lock = threading.Lock()


def new_object_id(now: float | None = None) -> str:
    global _process_random, _process_pid
    with _lock:
        if os.getpid() != _process_pid:  # forked: never share random bytes with the parent
            _process_pid, _process_random = os.getpid(), secrets.token_bytes(5)
        count = next(_counter) & 0xFFFFFF
    seconds = int(time.time() if now is None else now) & 0xFFFFFFFF
    return (seconds.to_bytes(4, "big") + _process_random + count.to_bytes(3, "big")).hex()


def is_object_id(value: str) -> bool:
    return OBJECT_ID_RE.fullmatch(value) is not None


def colons_decoded(raw: str) -> str:
    """A URN of a path whose client percent-encoded it twice (``urn%253Avia…`` arrives as
    ``urn%3Avia…``), with its colons decoded. Only the colons: a URN holds nothing else a client
    encodes, and so the OpenAPI document (``wire.patterns``) can say exactly what a path takes."""
    return ENCODED_COLON_RE.sub(":", raw)


def urn(kind: str) -> str:
    """``urn:via:<kind>:<uuid v4>`` for credentials, decisions, receipts, events, ..."""
    return f"urn:via:{kind}:{uuid.uuid4()}"


def new_subject_uuid() -> str:
    return str(uuid.uuid4())
