"""CONTRACT section 1, replay protection: a signed write is accepted once, per key, whatever the
method; reads may repeat a signature, which never authorizes a write."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from store import orgs
from tests.support.api_client import Credentials, SignedClient, assert_error_shape, now_ms, policy_request
from tests.support.signatures import client_for_key, compact_json, create_request_id

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = pytest.mark.both_databases


async def test_same_signed_post_twice_is_refused(api: SignedClient) -> None:
    body = compact_json(policy_request())
    headers = {**api.headers(body), "Content-Type": "application/json"}
    first = await api.http.post("/request", content=body, headers=headers)
    assert first.status_code == 201, first.text
    second = await api.http.post("/request", content=body, headers=headers)
    assert_error_shape(second, 401)
    assert len((await api.get("/request")).json()["data"]) == 1


async def test_refused_replay_of_a_write_with_a_different_method_is_refused(api: SignedClient) -> None:
    body = compact_json(policy_request())
    headers = {**api.headers(body), "Content-Type": "application/json"}
    assert (await api.http.post("/request", content=body, headers=headers)).status_code == 201
    assert_error_shape(await api.http.request("PATCH", "/request", content=body, headers=headers), 401)


async def test_parallel_reads_may_repeat_a_get_signature(api: SignedClient) -> None:
    request_id = await create_request_id(api)
    headers = api.headers(b"")
    first = await api.http.get("/request", headers=headers)
    second = await api.http.get(f"/request/{request_id}", headers=headers)
    assert first.status_code == 200 and second.status_code == 200
    results = await asyncio.gather(*(api.http.get("/request", headers=headers) for _ in range(5)))
    assert [r.status_code for r in results] == [200] * 5


async def test_get_signature_never_authorizes_a_cancel(api: SignedClient) -> None:
    request_id = await create_request_id(api)
    headers = api.headers(b"")
    assert (await api.http.get(f"/request/{request_id}", headers=headers)).status_code == 200
    assert_error_shape(await api.http.delete(f"/request/{request_id}", headers=headers), 401)
    after = (await api.get(f"/request/{request_id}")).json()
    assert after["canceledAt"] is None and after["status"] != "CANCELED"
    # and the read signature keeps working for reads
    assert (await api.http.get(f"/request/{request_id}", headers=headers)).status_code == 200


async def test_cancel_signature_is_not_reusable_for_a_read(api: SignedClient) -> None:
    request_id = await create_request_id(api)
    headers = api.headers(b"")
    assert (await api.http.delete(f"/request/{request_id}", headers=headers)).status_code == 200
    assert_error_shape(await api.http.get(f"/request/{request_id}", headers=headers), 401)
    assert_error_shape(await api.http.delete(f"/request/{request_id}", headers=headers), 401)


async def test_replay_is_per_key(
    http: httpx.AsyncClient, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    """Two keys of one organization signing the same timestamp do not collide."""
    second = orgs.create_key(engine, cipher, org.organization_id, actor="operator:tests")
    ts = now_ms()
    a = SignedClient(http, org)
    b = client_for_key(http, org, second)
    assert (await a.delete("/request/" + "0" * 24, timestamp=ts)).status_code == 404
    assert (await b.delete("/request/" + "0" * 24, timestamp=ts)).status_code == 404


async def test_concurrent_identical_posts_create_exactly_one(api: SignedClient) -> None:
    body = compact_json(policy_request(name="Concurrent"))
    headers = {**api.headers(body), "Content-Type": "application/json"}
    results = await asyncio.gather(
        *(api.http.post("/request", content=body, headers=headers) for _ in range(20))
    )
    statuses = sorted(r.status_code for r in results)
    assert statuses == [201] + [401] * 19, [r.text for r in results if r.status_code != 401]
    for r in results:
        if r.status_code == 401:
            assert_error_shape(r, 401)
    assert len((await api.get("/request")).json()["data"]) == 1
