"""The OpenAPI document (``/openapi.json``, ``/docs``): FastAPI's, made as exact as the code.

FastAPI builds it from the routes, which declare what each operation answers (``api.responses``);
``document`` then adds what is true of every operation, from the same sources the code uses:

- the signature as security schemes (``Authorization: Bearer``, ``X-Timestamp``, ``X-Signature``)
  on every operation outside ``api.auth.PUBLIC_PREFIXES``, and none on the public documents;
- the request headers ``API-Version`` (signed operations), ``X-Request-Id`` (every operation) and
  ``If-None-Match`` (operations that can answer 304);
- the response headers ``X-Request-Id`` (every answer), ``API-Version`` (a signed operation's
  answers once the signature passed: not 401 or 413, and not a 400 for the header itself) and
  ``Retry-After`` (429 and 503, unless the route said otherwise);
- the signed documents' schemas (``wire.signed``) and the 405 answer, as components; FastAPI's
  422, which this service never sends (validation failures are 400), is dropped: the one 422 left
  is the one a route declares;
- an example for every operation, recorded from real answers (``api/openapi_examples.json``,
  written by ``tests/api/test_openapi_examples.py``; docs/api.md);
- the webhooks (OpenAPI 3.1 ``webhooks``): what the service POSTs to an organization's URL, its
  headers and encrypted body, what each answer does to the delivery, and the event each body
  decrypts to (``wire.webhook_models``), with events recorded from real deliveries
  (``tests/api/test_openapi_webhooks.py``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from api.auth import PUBLIC_PREFIXES
from api.responses import retry_after_header
from wire import versioning
from wire.signed import COMPONENTS, DOCUMENTED
from wire.users import DOCUMENTED_INPUTS
from wire.webhook_models import EVENT_ID, EVENTS, WebhookBody, component

EXAMPLES_FILE = Path(__file__).with_name("openapi_examples.json")
FASTAPI_VALIDATION = COMPONENTS + "HTTPValidationError"
SIGNED: list[dict[str, list[str]]] = [{"ApiKey": [], "Timestamp": [], "Signature": []}]
JSON = "application/json"

DESCRIPTION = f"""
Mandatum asks people to approve credentials and mandates before software acts for them.

**Signing.** Every call outside the public documents is signed (security schemes `ApiKey`,
`Timestamp` and `Signature`, all three together): `Authorization: Bearer <apiKey>`,
`X-Timestamp: <unix ms>` and `X-Signature: hex(HMAC-SHA256(secret, "<timestamp>.<body>"))`, over the
exact body bytes sent (the timestamp alone when the body is empty; `{{}}` counts as empty).
Timestamps more than 5 minutes off are refused, and a signature is accepted once (a body-less GET
signature may repeat among GETs only). An unknown, expired or revoked key answers `Invalid
signature`, exactly like a wrong signature. `api/signing.py` is a reference implementation.

**Versions.** Send `API-Version: YYYY-MM-DD` to pin a version; without it the organization's pinned
version applies, and every signed answer says which version served it (`API-Version`). This
document describes the newest version, `{versioning.newest()}`; the older versions
({", ".join(versioning.VERSIONS[:-1])}) keep their own shapes, listed in docs/sdk.md.

**Errors** are `{{statusCode, message, error}}` (some add members); validation failures are 400,
never 422. Each operation lists the statuses it can send. Besides those, any path: 404 for a path
no operation serves, 405 (`#/components/responses/MethodNotAllowed`, with `Allow`) for a method the
path does not take, 307 from a path with an extra trailing slash to the path without it, and 500
for an internal error (logged; its body never holds a trace). A signed path checks the signature first
(401). 429 and 503 say when to retry (`Retry-After`, seconds). Every answer carries
`X-Request-Id`: the caller's own (1 to 64 of `A-Z a-z 0-9 . _ -`) or a fresh one, to quote when
asking about a call.

**Identifiers.** Requests, credential entities and organizations: 24 lower-case hex characters.
Mandates `urn:via:credential:<uuid>`, actions `urn:via:action:<uuid>`, decisions (evidence)
`urn:via:decision:<uuid>`. URNs in a path may be percent-encoded; each path parameter's `pattern` is
exactly what the operation takes.

**Webhooks.** Each event type is a POST to the organization's webhook URL (`webhooks` below): a
body encrypted with AES-256-GCM, signed like a call (`X-Timestamp`, `X-Signature` with the webhook's
signature secret), with the event id as `Webhook-Id`; decrypted, it is the event's schema. A 2xx
answer ends the delivery; see docs/webhooks.md for the key, the retries and a receiver.

**Examples** are real answers and real events, recorded by the test suite.
"""

API_VERSION = {"type": "string", "pattern": versioning.VERSION_RE.pattern}
# as sent: empty is as if absent (wire.versioning.resolve)
API_VERSION_SENT = {"type": "string", "pattern": "^(?:[0-9]{4}-[0-9]{2}-[0-9]{2})?$"}
REQUEST_ID = {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}
SECURITY_SCHEMES = {
    "ApiKey": {
        "type": "http",
        "scheme": "bearer",
        "description": "`Authorization: Bearer <apiKey>`: the API key from the dashboard",
    },
    "Timestamp": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Timestamp",
        "description": "Unix time in milliseconds, within 5 minutes of the server's clock",
    },
    "Signature": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Signature",
        "description": (
            "64 hex characters: HMAC-SHA256 keyed with the signature secret (UTF-8) of "
            '`"<X-Timestamp>.<raw body>"`, or of the timestamp alone for an empty body or `{}`. '
            "Accepted once (a body-less GET's may repeat among GETs)."
        ),
    },
}
PARAMETERS: dict[str, dict[str, Any]] = {
    "API-Version": {
        "name": "API-Version",
        "in": "header",
        "required": False,
        "description": (
            f"The version to serve this call in (`YYYY-MM-DD`; a date resolves to the newest version not "
            f"after it; a date before the first version, or in the future, is a 400). Without it (or "
            f"empty): the organization's pinned version. This document describes {versioning.newest()}."
        ),
        "schema": API_VERSION_SENT,
        "example": versioning.newest(),
    },
    "X-Request-Id": {
        "name": "X-Request-Id",
        "in": "header",
        "required": False,
        "description": (
            "Your id for this call, echoed back when it is 1 to 64 of `A-Z a-z 0-9 . _ -` "
            "(anything else is replaced by a fresh id)"
        ),
        "schema": {"type": "string"},
    },
    "If-None-Match": {
        "name": "If-None-Match",
        "in": "header",
        "required": False,
        "description": "The ETag of the copy you hold: 304 without a body while it is current",
        "schema": {"type": "string"},
    },
}
METHOD_NOT_ALLOWED = {
    "description": "The path exists, but not with this method (any path)",
    "headers": {
        "Allow": {
            "description": "The methods the path takes",
            "required": True,
            "schema": {"type": "string"},
        },
        "X-Request-Id": {"description": "As on every answer", "required": True, "schema": REQUEST_ID},
    },
    "content": {JSON: {"schema": {"$ref": COMPONENTS + "ErrorOut"}}},
}


WEBHOOK_HEADERS = [
    {
        "name": "X-Timestamp",
        "in": "header",
        "required": True,
        "description": "Unix time in milliseconds when this attempt was sent: refuse one far from your clock",
        "schema": {"type": "string", "pattern": "^[0-9]{13}$"},
    },
    {
        "name": "X-Signature",
        "in": "header",
        "required": True,
        "description": (
            "HMAC-SHA256, keyed with the webhook's signature secret (UTF-8), of `\"<X-Timestamp>.<raw "
            'body>"`, in lower-case hex: check it over the body as received, before parsing it'
        ),
        "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    },
    {
        "name": "Webhook-Id",
        "in": "header",
        "required": True,
        "description": (
            "The event's id, the same on every attempt: deliveries are at least once, so deduplicate on it"
        ),
        "schema": {"type": "string", "pattern": EVENT_ID},
    },
]
WEBHOOK_RESPONSES = {
    "2XX": {"description": "Delivered: the event is not sent again"},
    "410": {"description": "Gone: the delivery stops at once and the event is failed (no further attempt)"},
    "default": {
        "description": (
            "Anything else (a 3xx included: redirects are not followed), or no answer within 10 s: tried "
            "again after about 5 s, 10 s, 20 s, ... doubling up to 4 hours apart, for 3 days"
        )
    },
}


def _webhook(event_type: str) -> dict[str, Any]:
    """The POST that delivers one ``event_type`` event (CONTRACT 7)."""
    model = EVENTS[event_type]
    summary = (model.__doc__ or "").split("\n\n")[0]
    return {
        "post": {
            "operationId": "webhook_" + event_type.replace(".", "_"),
            "summary": f"The {event_type} event",
            "description": (
                " ".join(summary.split())
                + f" The body decrypts to a `{model.__name__}` (`{component(event_type)}`): AES-256-GCM with "
                "the key PBKDF2-HMAC-SHA256(base64-decoded encryption secret, UTF-8 salt, 10,000 "
                "iterations, 32 bytes), the tag appended to `data` (docs/webhooks.md)."
            ),
            "parameters": copy.deepcopy(WEBHOOK_HEADERS),
            "requestBody": {
                "required": True,
                "content": {JSON: {"schema": {"$ref": COMPONENTS + WebhookBody.__name__}}},
            },
            "responses": copy.deepcopy(WEBHOOK_RESPONSES),
            "security": [],
        }
    }


def webhook_schemas() -> dict[str, Any]:
    """The components of the webhook body and events (``wire.webhook_models``)."""
    return _components([WebhookBody, *EVENTS.values()])


def operation_id(route: APIRoute) -> str:
    """An operation's id is its handler's name (``create_request``): the names generated clients use."""
    return route.name


def is_signed(path: str) -> bool:
    return not (path == "/" or path.startswith(PUBLIC_PREFIXES))


def _response_headers(status: str, signed: bool) -> dict[str, Any]:
    headers: dict[str, Any] = {
        "X-Request-Id": {
            "description": "The caller's X-Request-Id when it was taken, else a fresh one",
            "required": True,
            "schema": REQUEST_ID,
        }
    }
    if signed and status not in ("401", "413"):
        headers["API-Version"] = {
            "description": "The version this call was served in",
            "required": status != "400",  # a 400 for API-Version itself comes before it is known
            "schema": API_VERSION,
        }
    if status in ("429", "503"):
        headers["Retry-After"] = retry_after_header()
    return headers


def _shape(operation: dict[str, Any], signed: bool) -> None:
    """Security, the shared headers, and no 422 but a declared one."""
    operation["security"] = copy.deepcopy(SIGNED) if signed else []
    responses: dict[str, Any] = operation["responses"]
    unsent = responses.get("422", {}).get("content", {}).get(JSON, {}).get("schema", {})
    if unsent.get("$ref") == FASTAPI_VALIDATION:
        del responses["422"]
    names = (
        (["API-Version"] if signed else [])
        + ["X-Request-Id"]
        + (["If-None-Match"] if "304" in responses else [])
    )
    operation.setdefault("parameters", []).extend(copy.deepcopy(PARAMETERS[name]) for name in names)
    for status, response in responses.items():
        headers = _response_headers(status, signed)
        headers.update(response.get("headers", {}))  # what the route declared wins
        response["headers"] = headers


def _attach_examples(doc: dict[str, Any], examples: dict[str, Any]) -> None:
    """Each operation's recorded request body, parameters and answers, where the document has them."""
    for methods in doc["paths"].values():
        for operation in methods.values():
            recorded = examples.get(operation["operationId"], {})
            for parameter in operation.get("parameters", []):
                if parameter["name"] in recorded.get("parameters", {}):
                    parameter["example"] = recorded["parameters"][parameter["name"]]
            body = operation.get("requestBody", {}).get("content", {}).get(JSON)
            if body is not None and "request" in recorded:
                body["example"] = recorded["request"]
            for status, value in recorded.get("responses", {}).items():
                content = operation["responses"].get(status, {}).get("content", {})
                for media in content.values():
                    media["example"] = value


def _attach_event_examples(doc: dict[str, Any], examples: dict[str, Any]) -> None:
    """Each webhook's recorded delivery: its headers and encrypted body on the POST, and the event it
    decrypted to on the event's schema."""
    for event_type, item in doc["webhooks"].items():
        recorded = examples.get(f"webhook:{event_type}")
        if recorded is None:
            continue
        operation = item["post"]
        for parameter in operation["parameters"]:
            if parameter["name"] in recorded["headers"]:
                parameter["example"] = recorded["headers"][parameter["name"]]
        operation["requestBody"]["content"][JSON]["example"] = recorded["body"]
        doc["components"]["schemas"][EVENTS[event_type].__name__]["examples"] = [recorded["event"]]


def _components(models: Sequence[type[BaseModel]]) -> dict[str, Any]:
    """The components of ``models`` as they serialize, and of the models they use."""
    _, found = models_json_schema(
        [(model, "serialization") for model in models], ref_template=COMPONENTS + "{model}"
    )
    return dict(found.get("$defs", {}))


def signed_schemas() -> dict[str, Any]:
    """The components of ``wire.signed.DOCUMENTED`` (and the models they use)."""
    return _components(DOCUMENTED)


def load_examples() -> dict[str, Any]:
    if not EXAMPLES_FILE.is_file():
        return {}
    found: dict[str, Any] = json.loads(EXAMPLES_FILE.read_text(encoding="utf-8"))
    return found


def document(app: FastAPI, examples: dict[str, Any] | None = None) -> dict[str, Any]:
    """The OpenAPI document of ``app`` (see the module's docstring)."""
    doc = get_openapi(
        title=app.title,
        version=app.version,
        openapi_version=app.openapi_version,
        description=app.description,
        routes=app.routes,
    )
    components = doc.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas.update(signed_schemas())
    # POST /user reads each item itself (an invalid one is answered in its place): its item model
    schemas.update({k: v for k, v in _components(DOCUMENTED_INPUTS).items() if k not in schemas})
    # the events' schemas use the answers' models (a request's credential): FastAPI's stay
    schemas.update({k: v for k, v in webhook_schemas().items() if k not in schemas})
    components["securitySchemes"] = copy.deepcopy(SECURITY_SCHEMES)
    components["responses"] = {"MethodNotAllowed": copy.deepcopy(METHOD_NOT_ALLOWED)}
    for path, methods in doc["paths"].items():
        for operation in methods.values():
            _shape(operation, is_signed(path))
    doc["webhooks"] = {event_type: _webhook(event_type) for event_type in EVENTS}
    recorded = load_examples() if examples is None else examples
    _attach_examples(doc, recorded)
    _attach_event_examples(doc, recorded)
    return doc


def install(app: FastAPI) -> None:
    """Serve ``document(app)`` as the app's OpenAPI document, built once."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
