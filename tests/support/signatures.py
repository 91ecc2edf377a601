"""Calls signed by hand, for the authentication tests (CONTRACT section 1): the compact JSON an SDK
signs, the one 401 every bad signature gets, a client for another key of an organization, and a
request to act on."""

from __future__ import annotations

import json
from typing import Any

import httpx

from store import orgs
from tests.support.api_client import Credentials, SignedClient, assert_error_shape, policy_request


def compact_json(body: Any, ascii_only: bool = True) -> bytes:
    """``body`` as an SDK sends and signs it: no spaces, non-ASCII escaped unless ``ascii_only`` is off."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=ascii_only).encode()


def assert_invalid_signature(resp: httpx.Response) -> None:
    """The 401 that never says which part of the call was wrong."""
    body = assert_error_shape(resp, 401)
    assert body["message"] == "Invalid signature"
    assert body["error"] == "Unauthorized"


def client_for_key(http: httpx.AsyncClient, creds: Credentials, key: orgs.IssuedKey) -> SignedClient:
    """A client of the organization of ``creds`` signing with ``key``."""
    return SignedClient(
        http, Credentials(creds.organization_id, key.key_id, key.api_key, key.signature_secret, creds.did)
    )


async def create_request_id(api: SignedClient) -> str:
    """The id of a new request of the example action."""
    resp = await api.post("/request", policy_request())
    assert resp.status_code == 201, resp.text
    return str(resp.json()["data"]["id"])
