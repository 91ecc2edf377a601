"""``/readyz`` (issue 15, item 6): 200 while the database, Temporal and the migrations answer, 503
naming the part that does not, with a short reason that never shows a password or a stack trace;
every call checks anew, so a recovery shows at once. ``/healthz`` stays the bare liveness answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
from alembic import command
from alembic.script import ScriptDirectory
from fastapi import FastAPI
from temporalio.client import Client

from api.app import create_app
from core.settings import Environment, Settings
from orchestration import health
from orchestration.temporal import build_client
from store.db import alembic_config, migrate
from tests.conftest import MASTER_KEY, _postgres_database
from tests.support.ports import free_port
from tests.support.workflow import start_dev_server

EVERYTHING_OK = {"status": "ready", "checks": {"database": "ok", "temporal": "ok", "migrations": "ok"}}
PASSWORD = "s3cr=t/Pa55"  # URL-special characters: percent-encoded in the URL, plain in the driver


@asynccontextmanager
async def _client_of(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The app in process, without its lifespan (the client it was given is the one it uses)."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as http:
            yield http
    finally:
        app.state.ctx.engine.dispose()


async def _ready(http: httpx.AsyncClient, status: int) -> dict[str, Any]:
    answer = await http.get("/readyz")  # never signed
    assert answer.status_code == status, answer.text
    assert answer.headers["cache-control"] == "no-store"
    body: dict[str, Any] = answer.json()
    assert set(body) == {"status", "checks"} and set(body["checks"]) == {"database", "temporal", "migrations"}
    assert body["status"] == ("ready" if status == 200 else "not ready")
    assert "Traceback" not in answer.text
    return body


async def test_ready_when_everything_answers(http: httpx.AsyncClient) -> None:
    assert await _ready(http, 200) == EVERYTHING_OK
    assert (await http.get("/healthz")).json() == {"status": "ok"}
    paths = (await http.get("/openapi.json")).json()["paths"]
    assert "/readyz" not in paths and "/healthz" not in paths


async def test_temporal_down_names_temporal_and_recovery_shows_at_once(settings: Settings) -> None:
    """A lazy client (as the lifespan makes) towards a port nobody serves; then a server comes up
    there, then goes away again: each call says what is true now."""
    port = free_port()
    down = settings.model_copy(update={"temporal_address": f"127.0.0.1:{port}"})
    async with _client_of(create_app(down, temporal=await build_client(down, lazy=True))) as http:
        body = await _ready(http, 503)
        assert body["checks"]["temporal"].startswith("unreachable: "), body
        assert body["checks"]["database"] == body["checks"]["migrations"] == "ok"
        env = await start_dev_server(port)
        try:
            assert await _ready(http, 200) == EVERYTHING_OK
        finally:
            await env.shutdown()
        gone = await _ready(http, 503)
        assert gone["checks"]["temporal"].startswith("unreachable: "), gone


async def test_an_app_without_a_temporal_client_is_not_ready(settings: Settings) -> None:
    async with _client_of(create_app(settings)) as http:  # its lifespan has not run
        body = await _ready(http, 503)
    assert body["checks"]["temporal"].startswith("not connected"), body
    assert body["checks"]["database"] == body["checks"]["migrations"] == "ok"


@contextmanager
def _scratch_database(like: str, tmp_path: Path) -> Iterator[str]:
    """An empty database of the same kind as ``like`` (the session's, so both kinds are covered)."""
    if like.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'behind.db'}"
        return
    with _postgres_database() as url:
        yield url


async def test_migrations_behind_names_migrations(
    settings: Settings, temporal: Client, tmp_path: Path
) -> None:
    with _scratch_database(settings.database_url, tmp_path) as url:
        scripts = ScriptDirectory.from_config(alembic_config(url))
        head = scripts.get_current_head()
        assert head is not None
        previous = scripts.get_revision(head).down_revision
        assert isinstance(previous, str)
        command.upgrade(alembic_config(url), previous)
        app = create_app(settings.model_copy(update={"database_url": url}), temporal=temporal)
        async with _client_of(app) as http:
            # each check is bounded by 2 s of wall clock: on a machine loaded by the rest of the
            # suite Temporal's health check can miss it once, so ask again (a few times at most)
            for _ in range(5):
                body = await _ready(http, 503)
                if body["checks"]["database"] == body["checks"]["temporal"] == "ok":
                    break
            assert body["checks"]["migrations"] == (
                f"not current: the database is at revision {previous}, the code at {head}"
            )
            assert body["checks"]["database"] == body["checks"]["temporal"] == "ok"
            await asyncio.to_thread(migrate, url)  # the operator runs `mandatum db upgrade`
            assert await _ready(http, 200) == EVERYTHING_OK


async def test_a_database_that_refuses_is_named_without_its_password(
    tmp_path: Path, temporal: Client
) -> None:
    encoded = PASSWORD.replace("=", "%3D").replace("/", "%2F")
    settings = Settings(
        environment=Environment.TEST,
        var_dir=tmp_path / "var",
        master_key=MASTER_KEY,
        database_url=f"postgresql://leaky_user:{encoded}@127.0.0.1:1/nowhere",  # nothing listens
    )
    async with _client_of(create_app(settings, temporal=temporal)) as http:
        answer = await http.get("/readyz")
    assert answer.status_code == 503
    checks = answer.json()["checks"]
    assert checks["temporal"] == "ok"
    for name in ("database", "migrations"):
        assert checks[name].startswith("unreachable: OperationalError: "), checks
        assert len(checks[name]) <= len("unreachable: ") + health.REASON_LIMIT
    for leak in (PASSWORD, encoded, "s3cr", "Pa55", "sqlalche.me", "Traceback", "SELECT"):
        assert leak not in answer.text
