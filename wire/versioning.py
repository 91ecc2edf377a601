"""CONTRACT section 10: date-based API versions.

A version change is a named transformation of a response body from the newer shape to the
previous version's shape, registered on the version that introduced it. Responses are built in
the newest shape and walked back through every change newer than the caller's version.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any


class BadVersion(ValueError):
    """An API-Version header that cannot be served: the API answers 400 with this message."""

    status = 400


VERSION_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
VERSIONS: list[str] = ["2026-11-01"]  # ascending; the last is the newest


@dataclass(frozen=True)
class VersionChange:
    version: str  # the version that introduced the change
    name: str
    resource: str  # e.g. "request"
    to_previous: Callable[[dict[str, Any]], dict[str, Any]]


CHANGES: list[VersionChange] = []


def newest() -> str:
    return VERSIONS[-1]


def resolve(header: str | None, pinned: str | None, today: date | None = None) -> str:
    """The version a call is served in; BadVersion (400) for a malformed or future date."""
    if header is None or not header.strip():
        return pinned or newest()
    value = header.strip()
    if not VERSION_RE.fullmatch(value):
        raise BadVersion("API-Version must be a date in the form YYYY-MM-DD")
    try:
        asked = date.fromisoformat(value)
    except ValueError as exc:
        raise BadVersion(f"API-Version {value} is not a valid date") from exc
    if asked > (today or datetime.now(UTC).date()):
        raise BadVersion(f"API-Version {value} is in the future")
    known = [v for v in VERSIONS if v <= value]
    if not known:
        raise BadVersion(f"API-Version {value} is older than the first version {VERSIONS[0]}")
    return known[-1]


def render(
    resource: str, body: dict[str, Any], version: str, changes: list[VersionChange] | None = None
) -> dict[str, Any]:
    """The body in the shape of ``version``: newest changes undone first.

    Changes of one version are undone in the reverse of their registration order, as they were
    applied in that order going forward.
    """
    registered = changes if changes is not None else CHANGES
    for change in reversed(sorted(registered, key=lambda c: c.version)):  # sorted() is stable
        if change.resource == resource and change.version > version:
            body = change.to_previous(body)
    return body
