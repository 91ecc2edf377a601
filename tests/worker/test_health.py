"""The worker's health endpoint (issue 15, item 6): ``/healthz`` while the process answers,
``/readyz`` 200 while it polls its task queue and Temporal answers, 503 naming what does not; served
by ``python -m worker`` from its start when ``MANDATUM_WORKER_HEALTH_PORT`` is set."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy import Engine
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

import worker
from cli.stack import StartupError, check_ports_free, child_env, stack_addresses, worker_health_url
from core.settings import Settings
from orchestration.temporal import build_client, connect_with_backoff
from tests.support.ports import free_port
from tests.support.workflow import start_dev_server
from worker import build_worker
from worker.health import HealthServer, WorkerHealth


@asynccontextmanager
async def _serving(health: WorkerHealth) -> AsyncIterator[httpx.AsyncClient]:
    server = HealthServer(health)
    await server.start("127.0.0.1", 0)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", timeout=10) as http:
            yield http
    finally:
        await server.close()


async def _readyz(http: httpx.AsyncClient, status: int) -> dict[str, Any]:
    answer = await http.get("/readyz")
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["cache-control"] == "no-store"
    body: dict[str, Any] = answer.json()
    assert body["status"] == ("ready" if status == 200 else "not ready")
    return body


async def _raw(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await reader.read()  # the server closes after one answer
    writer.close()
    await writer.wait_closed()
    return answer


async def test_ready_while_polling_and_not_once_temporal_is_gone(
    temporal: Client, engine: Engine, settings: Settings
) -> None:
    health = WorkerHealth()
    async with _serving(health) as http:
        assert (await http.get("/healthz")).json() == {"status": "ok"}
        before = await _readyz(http, 503)
        assert before["checks"] == {
            "worker": "not polling: connecting to Temporal",
            "temporal": "not connected: this process has no Temporal client (yet)",
        }
        queue = f"mandatum-health-{uuid.uuid4().hex[:8]}"
        with ThreadPoolExecutor(max_workers=2) as executor:
            running = build_worker(temporal, engine, queue, executor, settings)
            health.client, health.worker = temporal, running
            assert await _readyz(http, 503) == {
                "status": "not ready",
                "checks": {"worker": "not polling: starting", "temporal": "ok"},
            }
            async with running:
                deadline = time.monotonic() + 30
                while not running.is_running:  # it polls once the server has checked its namespace
                    assert time.monotonic() < deadline, "the worker never started"
                    await asyncio.sleep(0.01)
                assert await _readyz(http, 200) == {
                    "status": "ready",
                    "checks": {"worker": "ok", "temporal": "ok"},
                }
                # its Temporal goes away (a client towards a port nobody serves)
                health.client = await build_client(
                    settings.model_copy(update={"temporal_address": f"127.0.0.1:{free_port()}"}), lazy=True
                )
                gone = await _readyz(http, 503)
                assert gone["checks"]["worker"] == "ok"
                assert gone["checks"]["temporal"].startswith(
                    "unreachable: RuntimeError: Failed client connect"
                )
                health.stop.set()  # SIGTERM: stopping, before the pollers have stopped
                assert (await _readyz(http, 503))["checks"]["worker"] == "stopping"
            health.client = temporal
            assert (await _readyz(http, 503))["checks"]["worker"] == "stopping"


async def test_only_get_and_head_of_the_two_paths() -> None:
    health = WorkerHealth()
    server = HealthServer(health)
    await server.start("127.0.0.1", 0)
    try:
        head = await _raw(server.port, b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")  # no body
        assert b"Content-Length: 16\r\n" in head
        assert (await _raw(server.port, b"GET /readyz?verbose=1 HTTP/1.0\r\n\r\n")).startswith(
            b"HTTP/1.1 503 Service Unavailable\r\n"
        )
        assert (await _raw(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404 ")
        refused = await _raw(server.port, b"POST /readyz HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        assert refused.startswith(b"HTTP/1.1 405 ") and b"Allow: GET, HEAD\r\n" in refused
        assert (await _raw(server.port, b"\x16\x03\x01 not http\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
        assert (await _raw(server.port, b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\n\r\n")).startswith(
            b"HTTP/1.1 400 "
        )
    finally:
        await server.close()


async def test_python_m_worker_serves_its_health_from_the_start(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``worker.main`` with a health port, while Temporal is not there yet, then once it is."""
    monkeypatch.setattr(worker, "connect_with_backoff", partial(connect_with_backoff, backoff=(0.1, 0.2)))

    async def no_reconciler(*_: object) -> None:  # it would start other tests' stored requests
        return None

    monkeypatch.setattr(worker, "reconcile_forever", no_reconciler)
    temporal_port, health_port = free_port(), free_port()
    configured = settings.model_copy(
        update={
            "temporal_address": f"127.0.0.1:{temporal_port}",  # nobody serves it yet
            "task_queue": f"mandatum-health-{uuid.uuid4().hex[:8]}",
            "worker_health_port": health_port,
        }
    )
    stop = asyncio.Event()
    running = asyncio.create_task(worker.main(configured, stop))
    env: WorkflowEnvironment | None = None
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{health_port}", timeout=10) as http:
            await _until(http, "/healthz", 200, running)
            waiting = await _readyz(http, 503)
            assert waiting["checks"]["worker"] == "not polling: connecting to Temporal"
            env = await start_dev_server(temporal_port)
            await _until(http, "/readyz", 200, running)
            stop.set()
            await asyncio.wait_for(running, 30)
            with pytest.raises(httpx.ConnectError):  # the endpoint goes with the process
                await http.get("/healthz")
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)
        if env is not None:
            await env.shutdown()


async def _until(http: httpx.AsyncClient, path: str, status: int, running: asyncio.Task[None]) -> None:
    """Until ``path`` answers ``status`` (the worker connects on its own schedule)."""
    deadline = time.monotonic() + 30
    while True:
        assert not running.done(), running.exception() if not running.cancelled() else "cancelled"
        try:
            if (await http.get(path)).status_code == status:
                return
        except httpx.TransportError:
            pass  # not listening yet
        assert time.monotonic() < deadline, f"{path} never answered {status}"
        await asyncio.sleep(0.05)


# --- configuration and `make run` -----------------------------------------------------------------


def test_the_port_is_off_unless_set_and_a_port_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MANDATUM_WORKER_HEALTH_PORT", "MANDATUM_WORKER_HEALTH_HOST"):
        monkeypatch.delenv(name, raising=False)
    assert Settings().worker_health_port is None
    monkeypatch.setenv("MANDATUM_WORKER_HEALTH_PORT", " ")
    assert Settings().worker_health_port is None
    monkeypatch.setenv("MANDATUM_WORKER_HEALTH_PORT", "8001")
    assert (Settings().worker_health_host, Settings().worker_health_port) == ("127.0.0.1", 8001)
    for bad in ("0", "65536", "http"):
        monkeypatch.setenv("MANDATUM_WORKER_HEALTH_PORT", bad)
        with pytest.raises(ValidationError):
            Settings()


def test_make_run_gives_the_worker_its_port_and_checks_it_is_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MANDATUM_WORKER_HEALTH_PORT", "9999")  # inherited, but not what was resolved
    without = Settings(
        temporal_address=f"127.0.0.1:{free_port()}",
        temporal_ui_port=free_port(),
        api_port=free_port(),
        worker_health_port=None,
    )
    assert "MANDATUM_WORKER_HEALTH_PORT" not in child_env(without)
    assert "MANDATUM_WORKER_HEALTH_PORT" not in stack_addresses(without)
    assert worker_health_url(without) is None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        with_port = without.model_copy(update={"worker_health_port": port})
        assert child_env(with_port)["MANDATUM_WORKER_HEALTH_PORT"] == str(port)
        assert worker_health_url(with_port) == f"http://127.0.0.1:{port}"
        with pytest.raises(
            StartupError, match=f"127.0.0.1:{port} is already in use.*MANDATUM_WORKER_HEALTH_PORT"
        ):
            check_ports_free(with_port)
