"""How a service function refuses: one exception per kind, rendered by each surface (the API as
``{statusCode, message, error}`` with the status ``api.errors`` gives the kind; the command line
as a message and exit code 1; the dashboard in place)."""

from __future__ import annotations

from typing import Any

from core.kinds import UpdateRefusal


class ServiceError(Exception):
    """An operation refused. ``message`` is one sentence or several; ``retry_after`` (seconds) when
    trying again later may succeed; ``extra`` are further members of the API's error body."""

    def __init__(self, message: str | list[str], *, retry_after: int | None = None, **extra: Any) -> None:
        super().__init__(message if isinstance(message, str) else "; ".join(message))
        self.message = message  # one sentence, or a list (rendered as a list even of one)
        self.retry_after = retry_after
        self.extra = extra


class Invalid(ServiceError):
    """The input is wrong (400)."""


class Replayed(ServiceError):
    """The request's signature was used before (401, CONTRACT 1): nothing was done."""


class Forbidden(ServiceError):
    """The actor may not do this at all (403): the operators' operations for anyone but platform
    operators, in the dashboard or from a shell."""


class NotFound(ServiceError):
    """No such thing for this actor (404): another organization's things are not found either."""


class Conflict(ServiceError):
    """The thing is not in a state that allows it (409)."""


class TooMany(ServiceError):
    """A limit was reached (429)."""


class Unavailable(ServiceError):
    """A dependency (Temporal) is not answering: try again (503)."""


class Refused(ServiceError):
    """The request's workflow refused an update; ``refusal`` says why (its HTTP status is in
    ``api.errors.REFUSAL_STATUS``)."""

    def __init__(self, refusal: UpdateRefusal, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.refusal = refusal
