"""The request id: what ties an HTTP request to the lines it logs, in the API and in the worker.

An incoming ``X-Request-Id`` is taken only when it is 1 to 64 characters of ``[A-Za-z0-9._-]``
(``accepted``); anything else (CR/LF, spaces, a long value, another alphabet) is replaced by one
of ours, so a header can neither forge a log line nor flood one. The id lives in a context
variable: asyncio tasks and the worker's activity threads (the SDK copies the context) see it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

REQUEST_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
_request_id: ContextVar[str | None] = ContextVar("mandatum_request_id", default=None)


def accepted(value: object) -> str | None:
    """``value`` when it is a request id we take as it is, else None."""
    return value if isinstance(value, str) and REQUEST_ID_RE.fullmatch(value) else None


def new_request_id() -> str:
    """A fresh id: 32 hex characters."""
    return secrets.token_hex(16)


def current_request_id() -> str | None:
    return _request_id.get()


@contextmanager
def request_id_bound(value: str | None) -> Iterator[None]:
    """``value`` (when accepted) is the current request id inside the block."""
    token = _request_id.set(accepted(value))
    try:
        yield
    finally:
        _request_id.reset(token)


def set_request_id(value: str | None) -> None:
    """Make ``value`` the request id of the current context for the rest of it (a workflow task's
    context ends with its task, so it needs no reset)."""
    _request_id.set(accepted(value))
