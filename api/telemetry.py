"""What the API says about each HTTP request: its request id, one access line, its metrics, its span.

``RequestTelemetry`` is the outermost layer of the app (outside Starlette's error middleware too,
``ObservedFastAPI``), so every answer counts, 500s and the signature middleware's refusals included:

- the request id: the client's ``X-Request-Id`` when ``core.observe.context.accepted`` takes it (1 to
  64 of ``[A-Za-z0-9._-]``), else a fresh one; bound for the request's work (and carried into
  Temporal by ``core.observe.temporal``) and sent back as ``X-Request-Id`` on every answer;
- one access line (``mandatum.api.access``): method, route template, status, duration, client
  address, the calling organization. Never the path or the query, which hold the subjects' link
  tokens (``/r/<token>``), one-time links and contacts (``?contact=``); the probes ``/healthz`` and
  ``/readyz`` at DEBUG;
- ``mandatum_http_requests_total`` and ``mandatum_http_request_duration_seconds`` by route
  template: the route that answered, else the first route whose pattern matches (a request refused
  before routing), else ``unmatched``; so a label never holds what a client typed.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig
from starlette.datastructures import MutableHeaders
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from temporalio.client import Client

from core.observe import metrics, tracing
from core.observe.context import accepted, new_request_id, request_id_bound
from core.observe.temporal import RequestIdClientInterceptor

log = logging.getLogger("mandatum.api.access")
HEADER = "X-Request-Id"
PROBES = frozenset({"/healthz", "/readyz"})


def incoming_request_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"x-request-id":
            return accepted(value.decode("latin-1"))
    return None


def _leaves(container: Any) -> Iterator[BaseRoute]:
    for route in getattr(container, "routes", []):
        included = getattr(route, "original_router", None)  # FastAPI's included router
        if included is not None:
            yield from _leaves(included)
        else:
            yield route


_ROUTES: weakref.WeakKeyDictionary[Any, list[BaseRoute]] = weakref.WeakKeyDictionary()


def route_of(scope: Scope) -> str:
    """The template of the route that answers (or would answer) this request, else ``unmatched``."""
    route = scope.get("route")
    if route is None:  # refused before routing (a signature, a body too large) or no such path
        app = scope.get("app")
        routes = _ROUTES.get(app) if app is not None else None
        if routes is None and app is not None:
            routes = _ROUTES[app] = list(_leaves(getattr(app, "router", None)))
        probe = {**scope, "path_params": {}}
        for candidate in routes or []:
            if candidate.matches(probe)[0] is not Match.NONE:
                route = candidate
                break
    path = getattr(route, "path", None)
    return path if isinstance(path, str) and path else metrics.UNMATCHED


class RequestTelemetry:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = incoming_request_id(scope) or new_request_id()
        status = 500  # unless an answer starts: an exception no handler answered
        began = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message)[HEADER] = request_id
            await send(message)

        with request_id_bound(request_id):
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                self._record(scope, request_id, status, time.perf_counter() - began)

    @staticmethod
    def _record(scope: Scope, request_id: str, status: int, seconds: float) -> None:
        method = metrics.method_label(str(scope.get("method", "")))
        route = route_of(scope)
        metrics.HTTP_REQUESTS.labels(method, route, str(status)).inc()
        metrics.HTTP_DURATION.labels(method, route).observe(seconds)
        caller = scope.get("state", {}).get("caller")
        client = scope.get("client")
        fields: dict[str, Any] = {
            "event": "http.request",
            "method": method,
            "route": route,
            "status": status,
            "duration_ms": round(seconds * 1000, 1),
            "x_request_id": request_id,
        }
        if client:
            fields["client"] = str(client[0])
        if caller is not None:
            fields["organization_id"] = caller.organization_id
        level = logging.DEBUG if route in PROBES and status < 500 else logging.INFO
        log.log(level, "%s %s %d", method, route, status, extra=fields)


class ObservedFastAPI(FastAPI):
    """FastAPI with ``RequestTelemetry`` around everything it builds (its error middleware too)."""

    def build_middleware_stack(self) -> ASGIApp:
        return RequestTelemetry(super().build_middleware_stack())


def observed_client(client: Client) -> Client:
    """The same connection, with the interceptors that carry the request id (and, when tracing,
    the trace) into every workflow start, update and signal."""
    config = client.config()
    config["interceptors"] = [
        *config.get("interceptors", []),
        RequestIdClientInterceptor(),
        *tracing.temporal_interceptors(),
    ]
    return Client(**config)


def telemetry_config() -> TelemetryConfig:
    """FastAPI's own OpenTelemetry (``FastAPI(telemetry=...)``): with tracing on, a span per request
    named by its route, through our tracer provider; otherwise off, whatever global provider
    something else in the process may have set. Never its metrics (Prometheus has ours) nor its
    logs (they hold exception messages)."""
    provider = tracing.provider()
    return TelemetryConfig(
        tracer_provider=provider,
        tracing=provider is not None,
        metrics=False,
        logs=False,
        operation_spans=False,
        auto_configure=False,
    )
