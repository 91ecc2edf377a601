"""A signed schemathesis run over every operation of the OpenAPI document, against the app in
process: calls generated from the document, valid ones and invalid ones (derandomized, a bounded
number of each per operation), each signed as an integrator signs it, and each answer checked: no
5xx, a documented status, content type and headers, a body valid against its schema, and an invalid
input refused (400, or 413 for a body over 1 MiB; 404 for the public documents, whose only input is
the id in the path).

Hypothesis drives the generation in a worker thread (its tests are synchronous); each call is sent
on the test's event loop, where the app, its Temporal client and the worker run."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from temporalio.client import Client

from api.app import create_app
from api.auth import PUBLIC_PREFIXES
from api.signing import sign
from core.settings import Settings
from tests.support.api_client import Credentials
from wire import versioning

MAX_EXAMPLES = 15  # per operation and mode: about 20 s per database on two cores
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,  # a generated invalid input is refused: 400 (a public document: 404)
]
PUBLIC = "^(" + "|".join(re.escape(prefix) for prefix in PUBLIC_PREFIXES) + ")"
CONFIG = schemathesis.Config.from_dict(
    {
        "generation": {"with-security-parameters": False},  # the Signer sends them, right
        # an invalid input is a 400, or a 413 when generated over 1 MiB (one run made a 10 MB string)
        "checks": {"negative_data_rejection": {"expected-statuses": ["400", "413"]}},
        "operations": [
            {
                "include-path-regex": PUBLIC,
                "checks": {"negative_data_rejection": {"expected-statuses": ["404"]}},
            },
            {
                # POST /user reads each item itself: an invalid item is answered in its place (its
                # own status 400 in a 201), only a body that is no list of 1 to 100 objects is a 400;
                # an Idempotency-Key used before with another body is a 409 whatever the items
                "include-operation-id": "create_users",
                "checks": {"negative_data_rejection": {"expected-statuses": ["400", "413", "201", "409"]}},
            },
        ],
    }
)
BASE_URL = "https://mandatum.test"
Send = Callable[[schemathesis.Case], httpx.Response]


class Signer:
    """Each call signed over the exact bytes sent, a fresh millisecond each (a write's signature is
    accepted once)."""

    def __init__(self, creds: Credentials) -> None:
        self.creds = creds
        self.last = 0

    def headers(self, body: bytes) -> dict[str, str]:
        self.last = max(self.last + 1, int(time.time() * 1000))
        timestamp = str(self.last)
        return {
            "Authorization": f"Bearer {self.creds.api_key}",
            "X-Timestamp": timestamp,
            "X-Signature": sign(self.creds.secret, timestamp, body),
        }


def request_of(case: schemathesis.Case, signer: Signer) -> httpx.Request:
    sent = case.as_transport_kwargs(base_url=BASE_URL)
    headers = {k: str(v) for k, v in sent["headers"].items() if k.lower() != "x-schemathesis-testcaseid"}
    body = b""
    if "json" in sent:
        body = json.dumps(sent["json"], separators=(",", ":")).encode()
    elif isinstance(sent.get("data"), bytes | str):  # a negative case's body that is no JSON
        body = sent["data"].encode() if isinstance(sent["data"], str) else sent["data"]
    else:
        headers.pop("Content-Type", None)
    headers.update(signer.headers(body))
    headers["API-Version"] = versioning.newest()
    return httpx.Request(
        sent["method"], sent["url"], params=sent.get("params"), headers=headers, content=body
    )


def fuzzed(document: dict[str, Any]) -> dict[str, Any]:
    """The document without ``API-Version`` among the parameters to generate: every call is made in
    the newest version, the one the document describes (the older ones' shapes are docs/sdk.md's;
    the header's refusals are tests/api/test_versioning.py's), so the generated inputs go to the
    parameters and bodies instead."""
    copied = copy.deepcopy(document)
    for methods in copied["paths"].values():
        for operation in methods.values():
            operation["parameters"] = [p for p in operation["parameters"] if p["name"] != "API-Version"]
    return copied


def explore(operation: Any, mode: GenerationMode, send: Send) -> str | None:
    """Up to ``MAX_EXAMPLES`` generated calls of one operation; the first failure's report, if any."""

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure is reported as found
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def calls(case: schemathesis.Case) -> None:
        case.validate_response(send(case), checks=CHECKS)

    try:
        calls()
    except Unsatisfiable:  # nothing of the operation can be made invalid (only free-form headers)
        return None
    except Exception as exc:  # a failed check (schemathesis' FailureGroup) or a transport error
        return f"{operation.method.upper()} {operation.path} ({mode.value}): {exc}"
    return None


@pytest.mark.usefixtures("worker", "no_server_errors")
async def test_generated_calls_answer_as_documented(
    org: Credentials, temporal: Client, settings: Settings
) -> None:
    app = create_app(settings, temporal=temporal)
    schema = schemathesis.openapi.from_dict(fuzzed(app.openapi()), config=CONFIG)
    loaded = list(schema.get_all_operations())
    assert all(isinstance(f, Ok) for f in loaded), [f for f in loaded if not isinstance(f, Ok)]
    operations = [f.ok() for f in loaded if isinstance(f, Ok)]
    assert len(operations) == len([op for methods in app.openapi()["paths"].values() for op in methods])
    signer = Signer(org)
    loop = asyncio.get_running_loop()
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:

            def send(case: schemathesis.Case) -> httpx.Response:
                call = http.send(request_of(case, signer))
                return asyncio.run_coroutine_threadsafe(call, loop).result(timeout=60)

            failures = [
                await asyncio.to_thread(explore, operation, mode, send)
                for operation in operations
                for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
            ]
    finally:
        app.state.ctx.engine.dispose()
    found = [f for f in failures if f is not None]
    assert not found, "\n\n".join(found)
