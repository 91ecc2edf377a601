"""The dashboard's request pages from a test's side (the organizations' and the operators'): the
app on the time-skipping server's worker (``ts_app``), requests created over the signed API and
closed after the test, and an operator logged in."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest_asyncio
from fastapi import FastAPI
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from api.app import create_app
from core.actors import Actor
from core.settings import Settings
from orchestration.temporal import request_handle
from services import operators
from services.context import Context
from tests.support.api_client import Credentials, SignedClient, policy_request
from tests.support.dashboard import PASSWORD, csrf_of
from tests.support.second_factor import ENROL, factor_on_by_pages


@contextlib.asynccontextmanager
async def ts_app(ts_env: WorkflowEnvironment, ts_queue: str, settings: Settings) -> AsyncIterator[FastAPI]:
    """The app on the time-skipping server's worker; requests expire 30 days after its virtual now,
    and those a test created are closed after it (none left open to stop time from skipping)."""
    ahead = await ts_env.get_current_time() - datetime.now(UTC)
    expiry = max(ahead, timedelta(0)) + timedelta(days=30)
    made = create_app(
        settings.model_copy(update={"task_queue": ts_queue, "request_expiry": expiry}), temporal=ts_env.client
    )
    made.state.created_requests = []
    try:
        yield made
    finally:
        for request_id in made.state.created_requests:
            with contextlib.suppress(RPCError):
                await request_handle(ts_env.client, request_id).terminate("the test is over")


@pytest_asyncio.fixture
async def ts_api(
    ts_env: WorkflowEnvironment, ts_queue: str, settings: Settings, org: Credentials
) -> AsyncIterator[SignedClient]:
    """``org``'s signed client of ``ts_app`` (a fixture, registered by tests/conftest.py). Rows are
    stamped with the wall clock while earlier tests may have moved the server's virtual clock
    ahead, so the requests' expiry is 30 days after the *virtual* now."""
    async with ts_app(ts_env, ts_queue, settings) as app:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
            yield SignedClient(client, org)


def api_of(app: FastAPI, org: Credentials) -> tuple[httpx.AsyncClient, SignedClient]:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://mandatum.test")
    return client, SignedClient(client, org)


async def create_request(app: FastAPI, org: Credentials, **overrides: Any) -> dict[str, Any]:
    client, api = api_of(app, org)
    async with client:
        created = await api.post("/request", policy_request(**overrides))
    assert created.status_code == 201, created.text
    data: dict[str, Any] = created.json()["data"]
    app.state.created_requests.append(data["id"])
    return data


async def log_in_as_operator(browser: httpx.AsyncClient, ctx: Context, name: str) -> tuple[str, str]:
    """``browser`` logged in as a new operator, who sets up the second factor operators must have:
    their member id and the session's CSRF token."""
    made = operators.create(
        ctx, Actor.shell_operator("tests"), f"{name}-{datetime.now(UTC).timestamp()}@ops.example.com"
    )
    path = "/dashboard/" + made.link.split("/dashboard/", 1)[1]
    assert (await browser.post(path, data={"password": PASSWORD, "again": PASSWORD})).status_code == 303
    login = await browser.post("/dashboard/login", data={"email": made.member.email, "password": PASSWORD})
    assert login.status_code == 303
    first = await browser.get("/dashboard")  # operators set up a second factor before anything else
    assert (first.status_code, first.headers["location"]) == (303, ENROL)
    await factor_on_by_pages(browser, csrf_of((await browser.get(ENROL)).text))
    landing = await browser.get("/dashboard")  # then land in the operators' area
    assert (landing.status_code, landing.headers["location"]) == (303, "/dashboard/operators")
    return made.member.id, csrf_of((await browser.get("/dashboard/operators")).text)
