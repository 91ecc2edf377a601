"""Older API versions spoken around each handler, and query parameters checked against the route.

``VersionedRoute`` is the route class of the integrators' API routers. The signature middleware
has already authenticated the caller and resolved the version it is served in (CONTRACT 10); the
route then:

1. walks the query parameters and the JSON body of an older version forward to the newest shape
   (``wire.versioning.upgrade_query`` / ``upgrade_request``), so handlers know only the newest;
2. refuses, with a 400 naming them, query parameters the route does not take: a filter the
   service does not know is never silently ignored (a list would otherwise answer everything);
3. walks a JSON answer back to the caller's version's shape and status code
   (``wire.versioning.render`` / ``status_in``). An answer is a success, or a verification's
   denial (a 403 carrying its ``decision``); error bodies are walked back by ``api.errors``.

The resource a change names is the route's name (its handler's function name), so both paths of
an aliased route (``/credential/vp/{id}`` and ``/credential/{id}/presentation``) share changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from api.auth import replay_body
from api.deps import Caller
from api.errors import ApiError
from core.text import quote_input
from wire import version_changes, versioning  # noqa: F401 (version_changes registers them)
from wire.json_depth import MAX_JSON_DEPTH, json_depth_exceeds

MAX_QUERY_PARAMETERS = 50
Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def query_names(dependant: Dependant) -> frozenset[str]:
    """The query parameters a route takes, under the names a client sends (aliases)."""
    found: set[str] = set()
    pending = [dependant]
    while pending:
        current = pending.pop()
        found.update(p.alias for p in current.query_params)
        pending.extend(current.dependencies)
    return frozenset(found)


class VersionedRoute(APIRoute):
    def get_route_handler(self) -> Handler:
        handle = super().get_route_handler()
        resource = self.name
        known = query_names(self.dependant)

        async def versioned(request: Request) -> Response:
            caller: Caller | None = request.scope.get("state", {}).get("caller")
            if caller is None:  # a public route (DID documents, status lists)
                return await handle(request)
            version = caller.api_version
            changes = versioning.newer_than(resource, version)
            query = parse_qsl(
                request.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True
            )
            if len(query) > MAX_QUERY_PARAMETERS:
                raise ApiError(400, f"At most {MAX_QUERY_PARAMETERS} query parameters")
            if changes:
                request = await _upgraded(request, resource, version, changes, query)
                query = _query(request.scope["query_string"])
            unknown = sorted({name for name, _ in query if name not in known})
            if unknown:
                takes = ", ".join(sorted(known)) or "none"
                named = ", ".join(quote_input(name) for name in unknown)
                raise ApiError(400, f"Unknown query parameter(s) {named}: this operation takes {takes}")
            response = await handle(request)
            if not any(c.to_previous or c.status_to_previous for c in changes):
                return response
            return _downgraded(response, resource, version, changes)

        return versioned


async def _upgraded(
    request: Request,
    resource: str,
    version: str,
    changes: list[versioning.VersionChange],
    query: versioning.Query,
) -> Request:
    """The request in the newest shape: its query string, and its JSON body when it has one."""
    scope = dict(request.scope)
    upgraded = versioning.upgrade_query(resource, query, version, changes)
    scope["query_string"] = urlencode(upgraded).encode()
    body = await request.body()
    if body and any(c.request_from_previous for c in changes):
        parsed = _json(body)
        if isinstance(parsed, dict):
            try:
                body = _encode(versioning.upgrade_request(resource, parsed, version, changes))
            except versioning.BadBody as exc:
                raise ApiError(exc.status, [str(exc)]) from None
            if json_depth_exceeds(body):  # a change may have unpacked what the first check saw as text
                raise ApiError(400, [f"body is nested more than {MAX_JSON_DEPTH} levels deep"])
            scope["headers"] = [
                (k, str(len(body)).encode() if k == b"content-length" else v) for k, v in scope["headers"]
            ]
    return Request(scope, replay_body(body, request.receive))


def _downgraded(
    response: Response, resource: str, version: str, changes: list[versioning.VersionChange]
) -> Response:
    if not response.headers.get("content-type", "").startswith("application/json"):
        return response
    parsed = _json(bytes(response.body))
    denial = response.status_code == 403 and isinstance(parsed, dict) and "decision" in parsed
    # an answer is an object, or a list (POST /user's item results)
    if not isinstance(parsed, dict | list) or not (response.status_code < 300 or denial):
        return response
    headers = {k: v for k, v in response.headers.items() if k not in ("content-length", "content-type")}
    return JSONResponse(
        versioning.render(resource, parsed, version, changes),  # type: ignore[arg-type]
        status_code=versioning.status_in(resource, response.status_code, version, changes),
        headers=headers,
        background=response.background,
    )


def _query(raw: bytes) -> versioning.Query:
    return parse_qsl(raw.decode("latin-1"), keep_blank_values=True)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None  # not JSON: left for FastAPI to refuse as such


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
