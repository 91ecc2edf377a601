"""Every non-2xx answer in CONTRACT section 2's shape: {statusCode, message, error}.

FastAPI's own validation errors become 400 with one readable line per problem
(``credentials.0.name is required``); unknown routes, wrong methods, oversized bodies and
unexpected exceptions get the same shape, and an internal error never leaks its stack trace.

Messages quote at most about 100 characters of any input (``core.text.quote_input`` where a value
is named, each segment of a field path likewise); as a last guard every message line is cut at
``MAX_LINE`` characters and a list at ``MAX_LINES`` lines, so no input comes back whole.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from temporalio.service import RPCError

from api.headers import security_headers
from api.pages import render_page
from api.telemetry import route_of
from core.kinds import UpdateRefusal
from core.text import ELLIPSIS, QUOTE_LIMIT, quote_input
from orchestration.temporal import temporal_unavailable
from services.errors import (
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    Refused,
    Replayed,
    ServiceError,
    TooMany,
    Unavailable,
)
from wire import version_changes, versioning  # noqa: F401 (version_changes registers them)

log = logging.getLogger("mandatum.api")
BODY_PARSE_DETAIL = "There was an error parsing the body"
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
MAX_LINE = 400
MAX_LINES = 100
TEMPORAL_UNAVAILABLE = "The workflow service is unreachable at the moment; retry shortly"
TEMPORAL_RETRY_AFTER = "5"


class ApiError(Exception):
    """A failure with a status, a message (or several) and optional extra body fields."""

    def __init__(
        self,
        status: int,
        message: str | list[str],
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message if isinstance(message, str) else "; ".join(message))
        self.status = status
        self.message = message
        self.headers = headers
        self.extra = extra


def _capped(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + ELLIPSIS


def error_body(status: int, message: str | list[str], **extra: Any) -> dict[str, Any]:
    if isinstance(message, str):
        message = _capped(message)
    else:
        more = len(message) - MAX_LINES
        message = [_capped(m) for m in message[:MAX_LINES]] + ([f"and {more} more"] if more > 0 else [])
    return {"statusCode": status, "message": message, "error": HTTPStatus(status).phrase, **extra}


def error_response(
    status: int,
    message: str | list[str],
    headers: dict[str, str] | None = None,
    *,
    scope: Any = None,
    **extra: Any,
) -> JSONResponse:
    """The error answer; with the request's ``scope``, in the authenticated caller's API version
    (``wire.versioning.ERROR_BODY``: older versions read ``message`` as one string)."""
    body = error_body(status, message, **extra)
    caller = scope.get("state", {}).get("caller") if scope is not None else None
    if caller is not None:
        body = versioning.render(versioning.ERROR_BODY, body, caller.api_version)
    return JSONResponse(body, status_code=status, headers=headers)


def _path(loc: tuple[Any, ...]) -> str:
    # a member name is input too (an unknown field, a userParams key): quoted and cut when long
    parts = [
        str(p) if len(str(p)) <= QUOTE_LIMIT else quote_input(p)
        for p in loc
        if p not in ("body", "query", "path", "header")
    ]
    return ".".join(parts) or "body"


def describe_validation_error(err: dict[str, Any]) -> str:
    """One pydantic error as words an integrator can act on."""
    loc = tuple(err.get("loc", ()))
    kind = err.get("type", "")
    # union members add their type name to the location; drop those tags
    loc = tuple(
        p
        for p in loc
        if not (isinstance(p, str) and (p in {"str", "ContactIn"} or p.startswith("function-")))
    )
    path = _path(loc)
    if kind == "missing":
        return f"{path} is required"
    if kind == "json_invalid":
        return f"body is not valid JSON: {err.get('ctx', {}).get('error', 'malformed')}"
    if kind == "extra_forbidden":
        return f"{path} is not a known field"
    msg = str(err.get("msg", "is invalid"))
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    elif msg.startswith("Assertion failed, "):
        msg = msg[len("Assertion failed, ") :]
    else:
        msg = msg[0].lower() + msg[1:] if msg else msg
    return f"{path}: {msg}" if path != "body" else msg


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette's 405 names only the first route's).

    Each method is probed through the routes' public ``matches``, which also sees into included
    routers.
    """
    allowed = []
    for method in HTTP_METHODS:
        probe = {**request.scope, "method": method}
        if any(route.matches(probe)[0] is Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return allowed


# the HTTP status of each kind of service refusal
STATUS_OF: dict[type[ServiceError], int] = {
    Invalid: 400,
    Replayed: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    TooMany: 429,
    Unavailable: 503,
}

# the HTTP status of each refusal of a request workflow's update, for every route that runs one;
# a refusal not listed is 409
REFUSAL_STATUS: dict[UpdateRefusal, int] = {
    UpdateRefusal.TOO_MANY_SENDS: 429,
    UpdateRefusal.TOO_SOON: 429,
}


def service_error_status(exc: ServiceError) -> int:
    if isinstance(exc, Refused):
        return REFUSAL_STATUS.get(exc.refusal, 409)
    return next((status for kind, status in STATUS_OF.items() if isinstance(exc, kind)), 400)


def service_error_response(exc: ServiceError, scope: Any = None) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return error_response(service_error_status(exc), exc.message, headers, scope=scope, **exc.extra)


# the dashboard's own pages for what no route of it answers: a person reads them, never JSON
DASHBOARD_ERRORS = {
    404: ("Not found", "There is no such page in the dashboard."),
    405: ("Not allowed", "This page cannot be used that way."),
    500: ("Something went wrong", "The error has been logged. Try again, or go back to the dashboard."),
}


def for_a_person(request: Request) -> bool:
    """A dashboard address asked for by a browser (a page, never the API)."""
    path = request.url.path
    return path == "/dashboard" or path.startswith("/dashboard/")


def dashboard_error(status: int, headers: dict[str, str] | None = None) -> Any:
    title, message = DASHBOARD_ERRORS[status]
    own = {"Referrer-Policy": "same-origin", **(headers or {})}
    return render_page("dashboard/message.html", status=status, headers=own, title=title, message=message)


def install_error_handlers(app: FastAPI, hsts: bool = False) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.headers, scope=request.scope, **exc.extra)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return service_error_response(exc, request.scope)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        messages: list[str] = []
        for err in exc.errors():
            text = describe_validation_error(dict(err))
            if text not in messages:
                messages.append(text)
        return error_response(400, messages, scope=request.scope)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Any:
        if for_a_person(request) and exc.status_code in (404, 405):
            allow = {"Allow": ", ".join(allowed_methods(request))} if exc.status_code == 405 else {}
            return dashboard_error(exc.status_code, allow)
        message: str | list[str] = (
            exc.detail if isinstance(exc.detail, str | list) else HTTPStatus(exc.status_code).phrase
        )
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 400 and message == BODY_PARSE_DETAIL:
            # FastAPI's words for a body it could not decode (bad UTF-8, nesting too deep):
            # the same message as any other malformed JSON
            message = ["body is not valid JSON"]
        if exc.status_code == 404 and message == "Not Found":
            message = "No such resource"
        if exc.status_code == 405:
            if message == "Method Not Allowed":
                message = "Method not allowed on this resource"
            headers["Allow"] = ", ".join(allowed_methods(request)) or headers.get("Allow", "")
        return error_response(exc.status_code, message, headers or None, scope=request.scope)

    # Temporal unreachable (a lazy client that cannot connect raises RuntimeError, a lost server
    # RPCError UNAVAILABLE): 503 with Retry-After, handled inside the app; anything else of those
    # types is an internal error like any other
    @app.exception_handler(RPCError)
    @app.exception_handler(RuntimeError)
    async def _temporal(request: Request, exc: Exception) -> JSONResponse:
        if not temporal_unavailable(exc):
            return await _internal(request, exc)
        # the route's template, never the path: a subject's link token is in /r/<token>
        route = route_of(request.scope)
        log.warning("Temporal unreachable on %s %s: %s", request.method, route, str(exc)[:300])
        retry = {"Retry-After": TEMPORAL_RETRY_AFTER}
        return error_response(503, TEMPORAL_UNAVAILABLE, retry, scope=request.scope)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> Any:
        log.exception("unhandled error on %s %s", request.method, route_of(request.scope))
        if for_a_person(request):
            return dashboard_error(500, security_headers(hsts))
        # answered by Starlette's outermost middleware, past api.headers: add its headers here
        return error_response(500, "Internal error; it has been logged", security_headers(hsts))
