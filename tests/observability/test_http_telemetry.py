"""Every HTTP answer: its request id (taken only when it is safe, else ours), one access line without
the path, and the HTTP metrics by route template whatever a client sends (bounded labels)."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from api.app import create_app
from core.observe.metrics import HTTP_REQUESTS, REGISTRY
from core.settings import Settings

OURS = re.compile(r"[0-9a-f]{32}")


@pytest_asyncio.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    made = create_app(settings)

    @made.get("/dev/observability-boom", include_in_schema=False)
    async def boom() -> None:
        raise KeyError("not answered by any handler but the last one")

    yield made
    made.state.ctx.engine.dispose()


async def call(
    app: FastAPI, path: str, method: str = "GET", headers: list[tuple[bytes, bytes]] | None = None
) -> Any:
    """One raw ASGI call (a client library would refuse to send some of these headers): the status
    and the response headers as sent."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"mandatum.test"), *(headers or [])],
        "client": ("127.0.0.1", 50000),
        "server": ("mandatum.test", 443),
    }
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    try:
        await app(scope, receive, send)
    except KeyError:
        pass  # Starlette re-raises after answering 500, for the server to log
    [start] = [m for m in sent if m["type"] == "http.response.start"]
    return start["status"], [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in start["headers"]]


def request_ids(headers: list[tuple[str, str]]) -> list[str]:
    return [value for name, value in headers if name == "x-request-id"]


def counted(method: str, route: str, status: int) -> float:
    value = REGISTRY.get_sample_value(
        "mandatum_http_requests_total", {"method": method, "route": route, "status": str(status)}
    )
    return value or 0.0


async def test_a_request_id_is_taken_only_when_safe(app: FastAPI) -> None:
    for good in ("abc-DEF_1.2", "x" * 64, "7"):
        status, headers = await call(app, "/healthz", headers=[(b"x-request-id", good.encode())])
        assert (status, request_ids(headers)) == (200, [good])
    attacks = [
        b"abc\r\nX-Injected: 1",
        b"abc\nset-cookie: a=b",
        b"x" * 65,
        b"",
        b"a b",
        b"caf\xe9",
        b'{"json": 1}',
        b"../../etc/passwd",
    ]
    seen = set()
    for bad in attacks:
        status, headers = await call(app, "/healthz", headers=[(b"x-request-id", bad)])
        [given] = request_ids(headers)
        assert status == 200 and OURS.fullmatch(given), (bad, given)
        assert not any(name in ("x-injected", "set-cookie") for name, _ in headers)
        seen.add(given)
    assert len(seen) == len(attacks)  # a fresh one each time
    status, headers = await call(app, "/healthz")
    assert OURS.fullmatch(request_ids(headers)[0])


async def test_every_answer_has_its_id_and_counts_by_template(app: FastAPI) -> None:
    cases = [
        ("GET", "/healthz", 200, "/healthz"),
        ("GET", "/request/6b0250e38402ead89ea995e6", 401, "/request/{requestId}"),  # refused before routing
        ("DELETE", "/request/anything-at-all", 401, "/request/{requestId}"),
        ("GET", "/no/such/path", 401, "unmatched"),  # not public, so not signed: 401 first
        ("GET", "/favicon.ico", 200, "/favicon.ico"),  # every page view asks for it: never unmatched
        ("GET", "/dev/observability-boom", 500, "/dev/observability-boom"),  # past every handler
    ]
    for method, path, status, route in cases:
        before = counted(method, route, status)
        got, headers = await call(app, path, method, [(b"x-request-id", b"case-" + method.encode())])
        assert (got, request_ids(headers)) == (status, [f"case-{method}"]), path
        assert counted(method, route, status) == before + 1, (path, route)


async def test_labels_stay_bounded_whatever_the_paths(app: FastAPI) -> None:
    """Many distinct paths and methods, known and unknown: no new label value but templates."""

    def label_sets() -> set[tuple[str, str, str]]:
        return {
            (s.labels["method"], s.labels["route"], s.labels["status"])
            for family in HTTP_REQUESTS.collect()
            for s in family.samples
            if s.name == "mandatum_http_requests_total"
        }

    before = label_sets()
    for n in range(60):
        await call(app, f"/probe-{n}/{'x' * n}")
        await call(app, f"/request/{n:024x}")
        await call(app, f"/r/token{n}AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
        await call(app, f"/credential/urn%3Avia%3Acredential%3A{n}/presentation", "POST")
        await call(app, "/healthz", f"BREW{n}")
    new = label_sets() - before
    routes = {route for _, route, _ in new}
    assert routes <= {
        "unmatched",
        "/request/{requestId}",
        "/r/{token}",
        "/credential/{mandateId}/presentation",
        "/healthz",
    }, routes
    assert {method for method, _, _ in new} <= {"GET", "POST", "OTHER"}
    assert len(new) <= 8, new


async def test_one_access_line_without_path_or_query(app: FastAPI, caplog: pytest.LogCaptureFixture) -> None:
    token = "SeCrEtLiNkToKeN" + "A" * 44
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    with caplog.at_level(logging.INFO, logger="mandatum.api.access"):
        async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
            answer = await client.get(
                f"/r/{token}", params={"contact": "ana@example.com"}, headers={"X-Request-Id": "line-1"}
            )
    lines = [r for r in caplog.records if r.name == "mandatum.api.access"]
    assert len(lines) == 1 and answer.headers["x-request-id"] == "line-1"
    [line] = lines
    assert line.getMessage() == f"GET /r/{{token}} {answer.status_code}"
    fields = vars(line)
    assert (fields["route"], fields["status"], fields["x_request_id"]) == (
        "/r/{token}",
        answer.status_code,
        "line-1",
    )
    assert fields["method"] == "GET" and fields["duration_ms"] >= 0 and fields["event"] == "http.request"
    everything = repr(fields)
    assert token not in everything and "ana@example.com" not in everything
