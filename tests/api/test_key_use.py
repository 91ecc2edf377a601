"""When each API key last signed an accepted call (``api.key_use``), through the real app: the time
is kept to the minute, written off the call's path at most once a minute per key, never moved back,
and a write that fails never fails the call (it is logged, and tried again on the key's next use)."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine, event, update

from api.app import create_app
from api.key_use import KeyUse
from core.settings import Settings
from store import orgs
from store.db import write_connection
from store.tables import ApiKey
from tests.support.api_client import Credentials, SignedClient
from tests.support.dashboard import page_client

T0 = datetime(2026, 11, 24, 18, 41, 37, 250_000, tzinfo=UTC)
MINUTE = datetime(2026, 11, 24, 18, 41, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def key_use(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> tuple[KeyUse, Clock]:
    """The app's own recorder on a clock the test moves, writing only when the test flushes."""
    found: KeyUse = app.state.authenticator.key_use
    clock = Clock()
    monkeypatch.setattr(found, "clock", clock)
    monkeypatch.setattr(found, "delay", 3600)
    return found, clock


@pytest.fixture
def updates(app: FastAPI) -> Iterator[list[str]]:
    """Every statement that writes ``api_key.last_used_at`` on the app's engine."""
    seen: list[str] = []
    engine = app.state.ctx.engine

    def spy(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("UPDATE API_KEY") and "last_used_at" in statement:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", spy)
    yield seen
    event.remove(engine, "before_cursor_execute", spy)


@pytest_asyncio.fixture
async def signed(app: FastAPI, org: Credentials) -> AsyncIterator[SignedClient]:
    async with page_client(app) as http:
        yield SignedClient(http, org)


def _last_used(engine: Engine, org: Credentials) -> datetime | None:
    (key,) = [k for k in orgs.list_keys(engine, org.organization_id) if k.id == org.key_id]
    return key.last_used_at


async def _call(signed: SignedClient) -> httpx.Response:
    resp = await signed.get("/me")
    assert resp.status_code == 200, resp.text
    return resp


async def test_a_signed_call_sets_the_minute_once_off_its_path(
    key_use: tuple[KeyUse, Clock], updates: list[str], signed: SignedClient, engine: Engine, org: Credentials
) -> None:
    recorder, clock = key_use
    assert _last_used(engine, org) is None
    await _call(signed)
    assert _last_used(engine, org) is None and updates == []  # the call did not write it
    await recorder.flush()
    assert _last_used(engine, org) == MINUTE and len(updates) == 1

    clock.now = T0 + timedelta(seconds=22)  # 18:41:59: the same minute
    await _call(signed)
    await _call(signed)
    await recorder.flush()
    assert _last_used(engine, org) == MINUTE and len(updates) == 1  # not written again

    clock.now = T0 + timedelta(seconds=23)  # 18:42:00.25
    await _call(signed)
    await recorder.flush()
    assert _last_used(engine, org) == MINUTE + timedelta(minutes=1) and len(updates) == 2


async def test_a_known_recent_value_is_not_written_again_nor_moved_back(
    key_use: tuple[KeyUse, Clock], updates: list[str], signed: SignedClient, engine: Engine, org: Credentials
) -> None:
    """What another API process wrote counts: a minute already stored is not written again, and a
    later one stored is never replaced by an earlier one."""
    recorder, clock = key_use
    with write_connection(engine) as conn:
        conn.execute(update(ApiKey).where(ApiKey.id == org.key_id).values(last_used_at=MINUTE))  # type: ignore[arg-type]
    await _call(signed)
    await recorder.flush()
    assert updates == [] and _last_used(engine, org) == MINUTE  # read with the key: nothing to write

    later = MINUTE + timedelta(hours=1)
    with write_connection(engine) as conn:
        conn.execute(update(ApiKey).where(ApiKey.id == org.key_id).values(last_used_at=later))  # type: ignore[arg-type]
    clock.now = T0 + timedelta(minutes=5)  # this process's use is earlier than the stored one
    recorder.used(org.key_id, MINUTE)  # as if its key cache still held the older value
    await recorder.flush()
    assert len(updates) == 1 and _last_used(engine, org) == later  # tried, and kept the later one


async def test_a_failing_write_never_fails_the_call(
    key_use: tuple[KeyUse, Clock],
    signed: SignedClient,
    engine: Engine,
    org: Credentials,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder, _ = key_use
    real = recorder._write

    def broken(*_: Any) -> None:
        raise RuntimeError("database unavailable")

    # this app's writer only: a recorder of another app in this process (its timer due now) must
    # neither fail nor log here
    monkeypatch.setattr(recorder, "_write", broken)
    with caplog.at_level(logging.WARNING, logger="mandatum.api.key_use"):
        await _call(signed)
        await recorder.flush()  # the failure stays in the log
    assert {r.getMessage() for r in caplog.records if r.name == "mandatum.api.key_use"} == {
        "last use of 1 API key(s) not recorded: RuntimeError('database unavailable')"
    }
    assert _last_used(engine, org) is None

    monkeypatch.setattr(recorder, "_write", real)
    await _call(signed)  # the same minute: the lost write is tried again
    await recorder.flush()
    assert _last_used(engine, org) == MINUTE


async def test_the_write_happens_by_itself_moments_after_the_call(
    app: FastAPI, signed: SignedClient, engine: Engine, org: Credentials
) -> None:
    app.state.authenticator.key_use.delay = 0.05
    await _call(signed)
    for _ in range(100):
        if _last_used(engine, org) is not None:
            break
        await asyncio.sleep(0.05)
    used = _last_used(engine, org)
    assert used is not None and used.second == 0 and used.microsecond == 0
    assert datetime.now(UTC) - used < timedelta(minutes=2)


async def test_the_app_writes_what_is_pending_when_it_stops(
    settings: Settings, engine: Engine, org: Credentials
) -> None:
    app = create_app(settings)
    app.state.authenticator.key_use.delay = 3600
    async with app.router.lifespan_context(app), page_client(app) as http:
        await _call(SignedClient(http, org))
        assert _last_used(engine, org) is None
    assert _last_used(engine, org) is not None


async def test_the_app_freezes_its_startup_objects_when_it_starts(settings: Settings) -> None:
    """The startup objects leave the garbage collector's generations (api.app.freeze_startup_objects),
    so a full collection no longer walks them."""
    app = create_app(settings)
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    async with app.router.lifespan_context(app):
        assert gc.get_freeze_count() > 10_000
