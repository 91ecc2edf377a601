"""Idempotency-Key on POST /request (CONTRACT 1) and the per-organization creation rate (CONTRACT 4).

Concurrent calls really run in parallel: the app runs each database transaction in a thread, so on
PostgreSQL they race exactly as they would across API processes.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, update
from sqlmodel import col, func, select

from core.secretbox import SecretCipher
from core.settings import Settings
from store.db import utcnow, write_session
from store.tables import CredentialRequest, IdempotencyRecord
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, policy_request

_last_ts = 0


def unique_ts() -> str:
    """A fresh millisecond timestamp per call, so parallel identical calls get distinct signatures."""
    global _last_ts
    _last_ts = max(int(time.time() * 1000), _last_ts + 1)
    return str(_last_ts)


# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("no_server_errors"), pytest.mark.both_databases]


async def post(
    api: SignedClient, body: dict[str, Any] | None = None, key: str | None = None, raw: bytes | None = None
) -> httpx.Response:
    headers = {"Idempotency-Key": key} if key is not None else {}
    if raw is not None:
        return await api.post("/request", raw=raw, headers=headers, timestamp=unique_ts())
    return await api.post(
        "/request", body if body is not None else policy_request(), headers=headers, timestamp=unique_ts()
    )


async def request_ids(api: SignedClient) -> list[str]:
    resp = await api.get("/request", params={"pageSize": 100})
    assert resp.status_code == 200, resp.text
    return [item["id"] for item in resp.json()["data"]]


@pytest.fixture
def make_client(
    http: httpx.AsyncClient, engine: Engine, cipher: SecretCipher, settings: Settings
) -> Callable[..., SignedClient]:
    """Clients of fresh organizations, with their own creation rate."""

    def make(rate: int = 1000) -> SignedClient:
        return SignedClient(http, new_org(engine, cipher, settings, rate=rate))

    return make


def age_idempotency_records(engine: Engine, org_id: str, by: timedelta) -> None:
    with write_session(engine) as session:
        session.execute(
            update(IdempotencyRecord)
            .where(col(IdempotencyRecord.organization_id) == org_id)
            .values(created_at=utcnow() - by)
        )


def age_requests(engine: Engine, org_id: str, by: timedelta) -> None:
    with write_session(engine) as session:
        session.execute(
            update(CredentialRequest)
            .where(col(CredentialRequest.organization_id) == org_id)
            .values(created_at=utcnow() - by)
        )


# --- Idempotency-Key ----------------------------------------------------------------------------


async def test_repeat_returns_the_original_response_and_creates_nothing(api: SignedClient) -> None:
    first = await post(api, key="order-1")
    assert first.status_code == 201, first.text
    for _ in range(2):
        again = await post(api, key="order-1")
        assert again.status_code == 201, again.text
        assert again.json() == first.json()
        assert again.headers["API-Version"] == first.headers["API-Version"]
    assert await request_ids(api) == [first.json()["data"]["id"]]


async def test_same_body_in_another_key_order_or_spacing_replays(api: SignedClient) -> None:
    body = policy_request()
    first = await post(api, body, key="k")
    reordered = json.dumps(dict(reversed(list(body.items()))), indent=2).encode()
    again = await post(api, raw=reordered, key="k")
    assert again.status_code == 201, again.text
    assert again.json() == first.json()
    assert len(await request_ids(api)) == 1


async def test_replay_is_the_original_even_after_a_cancel(api: SignedClient) -> None:
    first = await post(api, key="k")
    request_id = first.json()["data"]["id"]
    assert (await api.delete(f"/request/{request_id}")).status_code == 200
    again = await post(api, key="k")
    assert again.status_code == 201 and again.json() == first.json()
    assert again.json()["data"]["canceledAt"] is None
    assert (await api.get(f"/request/{request_id}")).json()["canceledAt"] is not None


async def test_same_key_with_another_body_is_a_conflict(api: SignedClient) -> None:
    first = await post(api, key="k")
    body = assert_error_shape(await post(api, policy_request(name="Something else"), key="k"), 409)
    assert "Idempotency-Key" in body["message"]
    assert body["error"] == "Conflict"
    assert await request_ids(api) == [first.json()["data"]["id"]]
    # the original body still replays
    assert (await post(api, key="k")).json() == first.json()


async def test_keys_are_independent(api: SignedClient, make_client: Any) -> None:
    a = (await post(api, key="k1")).json()["data"]["id"]
    b = (await post(api, key="k2")).json()["data"]["id"]
    c = (await post(api)).json()["data"]["id"]
    d = (await post(api)).json()["data"]["id"]  # without a key every call creates
    assert len({a, b, c, d}) == 4
    assert sorted(await request_ids(api)) == sorted([a, b, c, d])


async def test_same_key_in_two_organizations(api: SignedClient, make_client: Any) -> None:
    other = make_client()
    mine = await post(api, key="shared")
    theirs = await post(other, policy_request(name="Theirs"), key="shared")
    assert mine.status_code == theirs.status_code == 201, theirs.text
    assert mine.json()["data"]["id"] != theirs.json()["data"]["id"]
    assert theirs.json()["data"]["name"] == "Theirs"
    assert await request_ids(api) == [mine.json()["data"]["id"]]
    assert await request_ids(other) == [theirs.json()["data"]["id"]]


async def test_invalid_body_is_not_remembered(api: SignedClient) -> None:
    assert_error_shape(await post(api, policy_request(contacts=["bob"]), key="k"), 400)
    created = await post(api, key="k")
    assert created.status_code == 201, created.text


async def test_overlong_key_is_refused(api: SignedClient) -> None:
    body = assert_error_shape(await post(api, key="x" * 256), 400)
    assert "Idempotency-Key" in json.dumps(body["message"])
    assert (await post(api, key="x" * 255)).status_code == 201
    assert_error_shape(await post(api, key="a\x00b"), 400)


async def test_record_expires_after_24_hours(api: SignedClient, engine: Engine) -> None:
    first = (await post(api, key="k")).json()["data"]["id"]
    age_idempotency_records(engine, api.creds.organization_id, timedelta(hours=23, minutes=59))
    assert (await post(api, key="k")).json()["data"]["id"] == first
    age_idempotency_records(engine, api.creds.organization_id, timedelta(hours=24, minutes=1))
    second = await post(api, key="k")
    assert second.status_code == 201, second.text
    assert second.json()["data"]["id"] != first
    # the key now remembers the new request, and another body is a conflict again
    assert (await post(api, key="k")).json()["data"]["id"] == second.json()["data"]["id"]
    assert_error_shape(await post(api, policy_request(name="Other"), key="k"), 409)
    assert len(await request_ids(api)) == 2


async def test_expired_key_may_take_another_body(api: SignedClient, engine: Engine) -> None:
    await post(api, key="k")
    age_idempotency_records(engine, api.creds.organization_id, timedelta(days=2))
    other = await post(api, policy_request(name="Other"), key="k")
    assert other.status_code == 201, other.text
    assert other.json()["data"]["name"] == "Other"


async def test_concurrent_twins_get_one_request(api: SignedClient) -> None:
    """In-flight duplicates wait for the first and answer with its response.

    An integrator retries with the same key because it does not know whether the first call
    landed; answering every twin with the one request (rather than a 409 it must handle) is what
    makes the retry safe.
    """
    answers = await asyncio.gather(*(post(api, key="twin") for _ in range(10)))
    assert [a.status_code for a in answers] == [201] * 10, [a.text for a in answers]
    assert len({a.json()["data"]["id"] for a in answers}) == 1
    assert all(a.json() == answers[0].json() for a in answers)
    assert await request_ids(api) == [answers[0].json()["data"]["id"]]


async def test_concurrent_same_key_different_bodies(api: SignedClient) -> None:
    bodies = [policy_request(name="A" if i % 2 else "B") for i in range(10)]
    answers = await asyncio.gather(*(post(api, b, key="mixed") for b in bodies))
    statuses = Counter(a.status_code for a in answers)
    assert set(statuses) <= {201, 409}, [a.text for a in answers]
    created = {a.json()["data"]["id"] for a in answers if a.status_code == 201}
    assert len(created) == 1
    winner = next(a.json()["data"]["name"] for a in answers if a.status_code == 201)
    assert statuses == {201: 5, 409: 5}
    for body, answer in zip(bodies, answers, strict=True):
        assert answer.status_code == (201 if body["name"] == winner else 409)
    assert await request_ids(api) == list(created)


async def test_concurrent_requests_share_new_subjects(api: SignedClient) -> None:
    body = policy_request(contacts=["new.person@example.com", "+351912345678"])
    answers = await asyncio.gather(*(post(api, body) for _ in range(10)))
    assert [a.status_code for a in answers] == [201] * 10, [a.text for a in answers]
    assert len({a.json()["data"]["id"] for a in answers}) == 10
    dids = {tuple(s["id"] for s in a.json()["data"]["subjects"]) for a in answers}
    assert len(dids) == 1
    assert len(await request_ids(api)) == 10


# --- rate limit ---------------------------------------------------------------------------------


def retry_after(resp: httpx.Response) -> int:
    body = assert_error_shape(resp, 429)
    assert body["error"] == "Too Many Requests"
    value = resp.headers["Retry-After"]
    assert value.isdigit(), value
    assert 1 <= int(value) <= 61
    return int(value)


async def test_fourth_creation_in_a_minute_is_429(make_client: Any) -> None:
    api = make_client(rate=3)
    for i in range(3):
        assert (await post(api, policy_request(name=f"r{i}"))).status_code == 201
    retry_after(await post(api, policy_request(name="r3")))
    retry_after(await post(api, policy_request(name="r4"), key="new-key"))
    assert len(await request_ids(api)) == 3
    # reads are not limited
    assert (await api.get("/request")).status_code == 200


async def test_limit_is_per_organization(make_client: Any) -> None:
    a, b = make_client(rate=3), make_client(rate=3)
    for _ in range(3):
        assert (await post(a)).status_code == 201
    retry_after(await post(a))
    assert (await post(b)).status_code == 201


async def test_replays_do_not_count(make_client: Any) -> None:
    api = make_client(rate=3)
    first = await post(api, key="k")
    for _ in range(4):
        assert (await post(api, key="k")).json() == first.json()
    assert (await post(api, policy_request(name="two"))).status_code == 201
    assert (await post(api, policy_request(name="three"))).status_code == 201
    retry_after(await post(api, policy_request(name="four")))
    # at the limit a replay is still answered, and a conflict is still a conflict
    assert (await post(api, key="k")).json() == first.json()
    assert_error_shape(await post(api, policy_request(name="other"), key="k"), 409)
    assert len(await request_ids(api)) == 3


async def test_retry_after_counts_down_to_the_oldest_leaving_the_window(
    make_client: Any, engine: Engine
) -> None:
    api = make_client(rate=3)
    for _ in range(3):
        assert (await post(api)).status_code == 201
    age_requests(engine, api.creds.organization_id, timedelta(seconds=50))
    assert 9 <= retry_after(await post(api)) <= 12
    age_requests(engine, api.creds.organization_id, timedelta(seconds=61))
    assert (await post(api)).status_code == 201  # the window slid past them


async def test_concurrent_creations_respect_the_limit(make_client: Any) -> None:
    api = make_client(rate=3)
    answers = await asyncio.gather(*(post(api, policy_request(name=f"r{i}")) for i in range(8)))
    statuses = Counter(a.status_code for a in answers)
    assert statuses == {201: 3, 429: 5}, [a.text for a in answers]
    for a in answers:
        if a.status_code == 429:
            retry_after(a)
    assert len(await request_ids(api)) == 3


# --- the store's answer to a twin that commits the same key first ------------------------------


async def test_store_replays_a_twin_that_committed_first(engine: Engine, make_client: Any) -> None:
    """The twin's uncommitted record is invisible to our lookup; its commit must not make us fail."""
    import threading

    from store import guards
    from store import requests as store

    org_id = make_client().creds.organization_id
    digest = guards.body_digest({"name": "twin"})
    planted, release = threading.Event(), threading.Event()

    def plant() -> None:
        with write_session(engine) as session:
            session.add(
                IdempotencyRecord(
                    organization_id=org_id,
                    key="twin",
                    body_hash=digest,
                    status_code=201,
                    response={"data": {"id": "first"}},
                    created_at=utcnow(),
                )
            )
            session.flush()
            planted.set()
            release.wait(5)

    new = store.NewRequest(
        security_level="CONTACT",
        contacts=[store.NewContact("ana@example.com", "email")],
        credentials=[store.NewCredential(resource_type="POLICY", name="x")],
    )

    def create(body_hash: str) -> Any:
        return store.create_request(
            engine,
            org_id,
            new,
            timedelta(days=1),
            100,
            store.Idempotency("twin", body_hash, timedelta(hours=24)),
            lambda b: {"data": {"id": b.request.id}},
        )

    planter = threading.Thread(target=plant)
    planter.start()
    assert planted.wait(5)
    creating = asyncio.create_task(asyncio.to_thread(create, digest))
    await asyncio.sleep(0.3)  # let it reach its own insert of the key (PostgreSQL) or BEGIN (SQLite)
    release.set()
    planter.join()
    result = await creating
    assert result == store.Replayed(201, {"data": {"id": "first"}})
    with pytest.raises(store.IdempotencyConflict):
        await asyncio.to_thread(create, guards.body_digest({"name": "other"}))
    with write_session(engine) as session:
        count = session.exec(
            select(func.count())
            .select_from(CredentialRequest)
            .where(CredentialRequest.organization_id == org_id)
        ).one()
    assert count == 0
