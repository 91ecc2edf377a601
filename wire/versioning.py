"""CONTRACT section 10: date-based API versions.

A version change is a small, named transformation between a version and the one before it,
registered on the version that introduced it. It may change any of four things of one or more
*resources* (an API operation such as ``create_request``, a webhook event such as
``webhook:credential``, or ``ERROR_BODY``, the error body of every operation):

- ``to_previous``: a response body (or webhook payload) from the newer shape to the previous one;
- ``status_to_previous``: a success status code, likewise;
- ``request_from_previous``: a request body from the previous shape to the newer one;
- ``query_from_previous``: the query parameters, likewise.

Responses are built in the newest shape and walked back through every change newer than the
caller's version, newest first; requests are walked forward through the same changes, oldest
first, so the handlers only ever see the newest shape. The changes themselves are in
``wire.version_changes``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any


class BadVersion(ValueError):
    """An API-Version header that cannot be served: the API answers 400 with this message."""

    status = 400


class BadBody(ValueError):
    """A request body that an older version's change cannot bring to the newest shape: the API
    answers 400 with this message."""

    status = 400


VERSION_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
VERSIONS: list[str] = ["2026-05-20", "2026-09-01", "2026-11-01"]  # ascending; the last is the newest

ERROR_BODY = "error"  # the resource of every error answer ({statusCode, message, error})

Body = dict[str, Any]
Query = list[tuple[str, str]]


@dataclass(frozen=True)
class VersionChange:
    version: str  # the version that introduced the change
    name: str
    resource: str | tuple[str, ...]  # route names, "webhook:<eventType>" or ERROR_BODY
    to_previous: Callable[[Body], Body] | None = None
    status_to_previous: Callable[[int], int] | None = None
    request_from_previous: Callable[[Body], Body] | None = None
    query_from_previous: Callable[[Query], Query] | None = None

    def applies_to(self, resource: str) -> bool:
        names = (self.resource,) if isinstance(self.resource, str) else self.resource
        return resource in names


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


def newer_than(
    resource: str, version: str, changes: Iterable[VersionChange] | None = None
) -> list[VersionChange]:
    """The changes of ``resource`` newer than ``version``, oldest first (registration order
    within one version: the order they were applied going forward)."""
    registered = CHANGES if changes is None else changes
    found = [c for c in registered if c.applies_to(resource) and c.version > version]
    return sorted(found, key=lambda c: c.version)  # sorted() is stable


def render(resource: str, body: Body, version: str, changes: Iterable[VersionChange] | None = None) -> Body:
    """The body in the shape of ``version``: newest changes undone first.

    Changes of one version are undone in the reverse of their registration order, as they were
    applied in that order going forward.
    """
    for change in reversed(newer_than(resource, version, changes)):
        if change.to_previous is not None:
            body = change.to_previous(body)
    return body


def status_in(
    resource: str, status: int, version: str, changes: Iterable[VersionChange] | None = None
) -> int:
    """The status code ``version`` answers where the newest answers ``status``."""
    for change in reversed(newer_than(resource, version, changes)):
        if change.status_to_previous is not None:
            status = change.status_to_previous(status)
    return status


def upgrade_request(
    resource: str, body: Body, version: str, changes: Iterable[VersionChange] | None = None
) -> Body:
    """A request body sent in ``version``'s shape, in the newest shape: oldest changes first."""
    for change in newer_than(resource, version, changes):
        if change.request_from_previous is not None:
            body = change.request_from_previous(body)
    return body


def upgrade_query(
    resource: str, query: Query, version: str, changes: Iterable[VersionChange] | None = None
) -> Query:
    """Query parameters sent in ``version``'s shape, in the newest shape: oldest changes first."""
    for change in newer_than(resource, version, changes):
        if change.query_from_previous is not None:
            query = change.query_from_previous(query)
    return query
