"""Test-side client of the API, written from CONTRACT sections 1 and 2 (not the server's code): an
organization's credentials, calls signed the way an integrator's SDK signs them, a valid
``POST /request`` body, and the error shape every non-2xx answer has."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

# For a client of a real server (uvicorn on a port): idle connections dropped after 2 s. uvicorn
# closes them after 5 s (its timeout_keep_alive) and httpx keeps them 5 s too, so a request sent
# on a connection the server is closing at that moment fails with a ReadError (seen under load in
# tests/scale/test_limits_two_processes.py, between its presentations and its verifications).
LIVE_LIMITS = httpx.Limits(keepalive_expiry=2.0)

# the example action every test organization has published (cli.devstack.publish_example_action)
ACTION_ID = "urn:via:action:0b1e4c1a-7f1d-4a7e-9a55-1f2b3c4d5e6f"


@dataclass
class Credentials:
    organization_id: str
    key_id: str
    api_key: str
    secret: str
    did: str


def hmac_hex(secret: str, content: bytes) -> str:
    return hmac.new(secret.encode("utf-8"), content, hashlib.sha256).hexdigest()


def now_ms(offset_ms: int = 0) -> str:
    """An ``X-Timestamp``: now, or ``offset_ms`` from now, in milliseconds."""
    return str(int(time.time() * 1000) + offset_ms)


class SignedClient:
    """Signs every call the way an integrator's SDK does; every part can be overridden."""

    def __init__(self, http: httpx.AsyncClient, creds: Credentials) -> None:
        self.http = http
        self.creds = creds

    def headers(
        self,
        body: bytes,
        *,
        timestamp: str | None = None,
        secret: str | None = None,
        api_key: str | None = None,
    ) -> dict[str, str]:
        ts = timestamp or now_ms()
        content = ts.encode() if not body or body.strip() == b"{}" else ts.encode() + b"." + body
        return {
            "Authorization": f"Bearer {api_key or self.creds.api_key}",
            "X-Timestamp": ts,
            "X-Signature": hmac_hex(secret or self.creds.secret, content),
        }

    async def request(
        self,
        method: str,
        path: str,
        json_body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        params: Any = None,
        **sign: Any,
    ) -> httpx.Response:
        body = (
            raw
            if raw is not None
            else (json.dumps(json_body, separators=(",", ":")).encode() if json_body is not None else b"")
        )
        h = self.headers(body, **sign)
        if body:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        return await self.http.request(method, path, content=body, headers=h, params=params)

    async def get(self, path: str, **kw: Any) -> httpx.Response:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, json_body: Any = None, **kw: Any) -> httpx.Response:
        return await self.request("POST", path, json_body, **kw)

    async def delete(self, path: str, **kw: Any) -> httpx.Response:
        return await self.request("DELETE", path, **kw)


def policy_request(**overrides: Any) -> dict[str, Any]:
    """A valid POST /request body; keyword arguments replace top-level fields."""
    body: dict[str, Any] = {
        "contacts": ["ana@example.com"],
        "securityLevel": "CONTACT",
        "name": "Pay the rent",
        "credentials": [
            {
                "type": "POLICY",
                "name": "Rent payments",
                "scope": "payments",
                "action": {
                    "id": ACTION_ID,
                    "userParams": {"maxAmount": 1200},
                },
            }
        ],
    }
    body.update(overrides)
    return body


def assert_error_shape(resp: httpx.Response, status: int) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["statusCode"] == status
    assert isinstance(body["message"], str | list)
    assert isinstance(body["error"], str) and body["error"]
    return dict(body)


def error_messages(resp: httpx.Response, status: int = 400) -> list[str]:
    """The message lines of an error answer (``message`` is a string or a list of them)."""
    body = assert_error_shape(resp, status)
    msg = body["message"]
    return [msg] if isinstance(msg, str) else list(msg)


def assert_message(resp: httpx.Response, *fragments: str) -> None:
    """A 400 with a message line containing every fragment (it names the field / contact)."""
    lines = error_messages(resp)
    assert any(all(f in line for f in fragments) for line in lines), (fragments, lines)
