"""CONTRACT section 2: every non-2xx answer is {statusCode, message, error}."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from http import HTTPStatus
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from api.errors import ApiError, describe_validation_error, error_body
from core.secretbox import SecretCipher
from core.settings import Settings
from tests.conftest import new_org
from tests.support.api_client import Credentials, SignedClient, assert_error_shape, policy_request

MIB = 1024 * 1024


def _shape(resp: httpx.Response, status: int) -> dict[str, Any]:
    body = assert_error_shape(resp, status)
    assert body["error"] == HTTPStatus(status).phrase
    assert resp.headers["content-type"].startswith("application/json")
    return body


async def _create(api: SignedClient) -> str:
    resp = await api.post("/request", policy_request())
    assert resp.status_code == 201, resp.text
    return str(resp.json()["data"]["id"])


# --- 400 -----------------------------------------------------------------------------------------


async def test_malformed_json_is_400(api: SignedClient) -> None:
    for raw in (b'{"contacts": [', b"not json", b'{"a": 1,}', b"\xff\xfe\x00"):
        body = _shape(await api.post("/request", raw=raw), 400)
        text = json.dumps(body["message"]).lower()
        assert "not valid json" in text, body
    assert (await api.get("/request")).json()["data"] == []


async def test_deeply_nested_json_is_400_not_500(api: SignedClient) -> None:
    raw = b'{"contacts": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    _shape(await api.post("/request", raw=raw), 400)


async def test_validation_is_400_with_readable_messages(api: SignedClient) -> None:
    body = policy_request(securityLevel="SOMETIMES")
    del body["contacts"]
    body["credentials"] = [
        {
            "type": "POLICY",
            "scope": "payments",
            "action": {"id": "urn:via:action:0b1e4c1a-7f1d-4a7e-9a55-1f2b3c4d5e6f"},
        }
    ]
    body["unexpected"] = True
    resp = await api.post("/request", body)
    assert resp.status_code == 400 and resp.status_code != 422
    err = _shape(resp, 400)
    messages = err["message"]
    assert isinstance(messages, list) and all(isinstance(m, str) for m in messages)
    assert "credentials.0.name is required" in messages
    assert "contacts is required" in messages
    assert "unexpected is not a known field" in messages
    assert any(m.startswith("securityLevel") for m in messages), messages
    assert not any("{" in m or "loc" in m for m in messages), messages  # words, not pydantic dumps
    assert len(messages) == len(set(messages))


async def test_business_validation_messages(api: SignedClient) -> None:
    resp = await api.post("/request", policy_request(contacts=["ana@example.com", "not a contact"]))
    messages = _shape(resp, 400)["message"]
    assert isinstance(messages, list) and any(m.startswith("contacts.1") for m in messages)
    resp = await api.post(
        "/request",
        policy_request(
            credentials=[
                {
                    "type": "DOCUMENT",
                    "name": "Passport",
                }
            ]
        ),
    )
    messages = _shape(resp, 400)["message"]
    assert any("DOCUMENT credential needs data" in m for m in messages), messages


async def test_query_validation_is_400(api: SignedClient) -> None:
    messages = _shape(await api.get("/request", params={"pageSize": "1000"}), 400)["message"]
    assert isinstance(messages, list) and any(m.startswith("pageSize") for m in messages)
    _shape(await api.get("/request", params={"pageIndex": "first"}), 400)
    body = _shape(await api.get("/request", params={"dateTo": "2026-01-01"}), 400)
    assert body["message"] == "dateTo requires dateFrom"


async def test_bad_object_id_is_400(api: SignedClient) -> None:
    for bad in (
        "xyz",
        "0" * 23,
        "0" * 25,
        "g" * 24,
        "A" * 24,
        "0" * 24 + "%0A",
        "urn%3Avia%3Acredential%3Ax",
    ):
        _shape(await api.get(f"/request/{bad}"), 400)
        _shape(await api.delete(f"/request/{bad}"), 400)


# --- 404 / 405 -----------------------------------------------------------------------------------


async def test_unknown_route_is_404(api: SignedClient) -> None:
    body = _shape(await api.get("/no/such/route"), 404)
    assert isinstance(body["message"], str) and body["message"]
    _shape(await api.post("/nothing-here", {"a": 1}), 404)


async def test_missing_request_is_404(api: SignedClient) -> None:
    _shape(await api.get("/request/" + "a" * 24), 404)
    _shape(await api.delete("/request/" + "a" * 24), 404)


async def test_unauthenticated_unknown_route_is_401(http: httpx.AsyncClient) -> None:
    _shape(await http.get("/no/such/route"), 401)


async def test_wrong_method_is_405(api: SignedClient) -> None:
    resp = await api.request("PUT", "/request", policy_request())
    _shape(resp, 405)
    # every method served at the path, not only the first route's (RFC 9110 section 15.5.6)
    assert set(resp.headers["allow"].split(", ")) == {"GET", "POST"}
    resp = await api.request("PATCH", "/request/" + "a" * 24, {"name": "x"})
    _shape(resp, 405)
    assert set(resp.headers["allow"].split(", ")) == {"GET", "DELETE"}


async def test_another_organizations_request_is_404(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    request_id = await _create(api)
    other = SignedClient(http, new_org(engine, cipher, settings))
    missing = _shape(await other.get("/request/" + "b" * 24), 404)
    foreign = _shape(await other.get(f"/request/{request_id}"), 404)
    # the answer does not tell "exists elsewhere" from "does not exist"
    assert foreign["message"] == str(missing["message"]).replace("b" * 24, request_id)
    _shape(await other.delete(f"/request/{request_id}"), 404)
    assert (await other.get("/request")).json()["data"] == []
    mine = (await api.get(f"/request/{request_id}")).json()
    assert mine["canceledAt"] is None


# --- 413 -----------------------------------------------------------------------------------------


def _padded(size: int) -> bytes:
    """A JSON body of exactly ``size`` bytes."""
    head = b'{"pad": "'
    tail = b'"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


async def test_body_over_1_mib_with_content_length_is_413(api: SignedClient) -> None:
    raw = _padded(MIB + 1)
    resp = await api.post("/request", raw=raw)
    assert resp.request.headers["content-length"] == str(MIB + 1)
    body = _shape(resp, 413)
    assert "1048576" in str(body["message"])


async def test_body_over_1_mib_is_413_even_unsigned(http: httpx.AsyncClient) -> None:
    _shape(await http.post("/request", content=_padded(2 * MIB)), 413)


async def test_lying_content_length_does_not_bypass_the_limit(api: SignedClient) -> None:
    raw = _padded(MIB + 10)
    headers = {**api.headers(raw), "Content-Type": "application/json"}

    async def chunks() -> AsyncIterator[bytes]:
        yield raw

    # a small declared length with a larger streamed body: the bytes count, not the header
    resp = await api.http.post("/request", content=chunks(), headers={**headers, "Content-Length": "10"})
    _shape(resp, 413)


async def test_chunked_body_over_1_mib_is_413(api: SignedClient) -> None:
    raw = _padded(MIB + 1)
    headers = {**api.headers(raw), "Content-Type": "application/json"}

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(raw), 64 * 1024):
            yield raw[i : i + 64 * 1024]

    resp = await api.http.post("/request", content=chunks(), headers=headers)
    assert "content-length" not in resp.request.headers
    assert resp.request.headers.get("transfer-encoding") == "chunked"
    _shape(resp, 413)


async def test_body_of_exactly_1_mib_is_not_413(api: SignedClient) -> None:
    raw = _padded(MIB)
    body = _shape(await api.post("/request", raw=raw), 400)  # authenticated, then validated
    assert "pad is not a known field" in body["message"]

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(raw), 100_000):
            yield raw[i : i + 100_000]

    headers = {**api.headers(raw), "Content-Type": "application/json"}
    _shape(await api.http.post("/request", content=chunks(), headers=headers), 400)


# --- 500 -----------------------------------------------------------------------------------------


@pytest.fixture
async def failing_client(
    settings: Settings, temporal: Client, org: Credentials
) -> AsyncIterator[SignedClient]:
    app = create_app(settings, temporal=temporal)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret-detail: connection string postgres://admin:hunter2@db")

    @app.post("/boom-sync")
    def boom_sync() -> None:
        raise KeyError("another-secret-detail")

    @app.get("/dashboard/boom-page")
    async def boom_page() -> None:
        raise RuntimeError("secret-detail of a page")

    @app.get("/teapot")
    async def teapot() -> None:
        raise ApiError(418, ["first problem", "second problem"], headers={"X-Extra": "1"}, hint="h")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        yield SignedClient(client, org)


async def test_internal_error_is_500_without_leaking(
    failing_client: SignedClient, caplog: pytest.LogCaptureFixture
) -> None:
    for resp in (await failing_client.get("/boom"), await failing_client.post("/boom-sync", {"a": 1})):
        body = _shape(resp, 500)
        assert set(body) == {"statusCode", "message", "error"}
        for leak in ("secret-detail", "hunter2", "Traceback", "RuntimeError", "KeyError", 'File "'):
            assert leak not in resp.text
    assert any("secret-detail" in (r.exc_text or "") or r.exc_info for r in caplog.records)


async def test_the_dashboard_answers_its_own_pages_for_errors(
    failing_client: SignedClient, http: httpx.AsyncClient
) -> None:
    """Issue 34: a person who mistypes a dashboard address, or meets a bug, reads a page of the
    dashboard (with its strict CSP), never the API's JSON; the API's answers stay JSON."""
    for path, method, status, title in (
        ("/dashboard/no-such-page", "GET", 404, "Not found"),
        ("/dashboard/keys/x/y/z", "GET", 404, "Not found"),
        ("/dashboard/login", "DELETE", 405, "Not allowed"),
    ):
        resp = await http.request(method, path)
        assert resp.status_code == status, (path, resp.text[:200])
        assert resp.headers["content-type"].startswith("text/html")
        assert f"<h1>{title}</h1>" in resp.text and 'href="/dashboard"' in resp.text
        assert "default-src 'none'" in resp.headers["content-security-policy"]
    assert "GET" in resp.headers["allow"]
    boom = await failing_client.http.get("/dashboard/boom-page")
    assert boom.status_code == 500 and boom.headers["content-type"].startswith("text/html")
    assert "Something went wrong" in boom.text and "secret-detail" not in boom.text
    assert boom.headers["x-content-type-options"] == "nosniff"
    _shape(await http.get("/dashboardx"), 404)  # not a dashboard address: the API's answer


async def test_internal_error_still_needs_authentication(failing_client: SignedClient) -> None:
    _shape(await failing_client.http.get("/boom"), 401)


async def test_api_error_keeps_its_messages_headers_and_extra_fields(failing_client: SignedClient) -> None:
    resp = await failing_client.get("/teapot")
    assert resp.status_code == 418
    assert resp.json() == {
        "statusCode": 418,
        "message": ["first problem", "second problem"],
        "error": "I'm a Teapot",
        "hint": "h",
    }
    assert resp.headers["X-Extra"] == "1"


async def test_database_down_is_500_without_leaking(
    settings: Settings, temporal: Client, org: Credentials
) -> None:
    """A failure inside the authentication middleware gets the same shape, and hides its cause."""
    url = "postgresql+psycopg://leaky_user:leaky_password@127.0.0.1:1/nowhere"
    app = create_app(settings.model_copy(update={"database_url": url}), temporal=temporal)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        resp = await SignedClient(client, org).get("/request")
    body = _shape(resp, 500)
    assert set(body) == {"statusCode", "message", "error"}
    for leak in ("leaky", "psycopg", "OperationalError", "127.0.0.1", "Traceback"):
        assert leak not in resp.text


# --- unit: message wording -----------------------------------------------------------------------


def test_error_body_uses_the_reason_phrase() -> None:
    assert error_body(404, "gone") == {"statusCode": 404, "message": "gone", "error": "Not Found"}
    assert error_body(429, "slow")["error"] == "Too Many Requests"
    assert error_body(403, "no", decision="deny")["decision"] == "deny"


def test_describe_validation_error() -> None:
    assert (
        describe_validation_error(
            {"type": "missing", "loc": ("body", "credentials", 0, "name"), "msg": "Field required"}
        )
        == "credentials.0.name is required"
    )
    assert (
        describe_validation_error(
            {"type": "extra_forbidden", "loc": ("body", "foo"), "msg": "Extra inputs are not permitted"}
        )
        == "foo is not a known field"
    )
    assert (
        describe_validation_error(
            {"type": "value_error", "loc": ("body", "contacts", 0, "str"), "msg": "Value error, bad contact"}
        )
        == "contacts.0: bad contact"
    )
    assert (
        describe_validation_error(
            {"type": "string_too_long", "loc": ("query", "search"), "msg": "String should have at most 100"}
        )
        == "search: string should have at most 100"
    )
    assert (
        describe_validation_error(
            {"type": "value_error", "loc": ("body",), "msg": "Value error, whole body is wrong"}
        )
        == "whole body is wrong"
    )
