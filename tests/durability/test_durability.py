"""The database row and the workflow never disagree, even when a process dies between the two writes.

The API runs as a real process (uvicorn) told to die abruptly at a named crash point
(``MANDATUM_CRASH_AT``); then the worker's reconciler, run here against the same SQLite file and
the same Temporal dev server, must bring the two back together without starting anything twice.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from orchestration.temporal import reconcile_once, request_handle
from store import request_queries as queries
from store import requests as store
from tests.support.api_client import LIVE_LIMITS, Credentials, SignedClient, policy_request
from tests.support.durability import MASTER_KEY, ROOT, Stack, WorkerProcess
from tests.support.ports import free_port
from tests.support.workflow import cancel, db_request, insert_request, result_of, status_of
from worker import build_worker
from workflows.ids import SA_INTERNAL_ID, SA_ORGANIZATION, SA_SECURITY_LEVEL, SA_STATUS, request_workflow_id

NO_GRACE = timedelta(0)


@pytest.fixture(scope="module")
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        yield pool


class ApiProcess:
    def __init__(self, stack: Stack, crash_at: str | None) -> None:
        self.port = free_port()
        self.log = stack.var_dir.parent / f"api-{self.port}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
        env.update(
            {
                "MANDATUM_DATABASE_URL": stack.url,
                "MANDATUM_MASTER_KEY": MASTER_KEY,
                "MANDATUM_TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
                "MANDATUM_TASK_QUEUE": stack.queue,
                "MANDATUM_VAR_DIR": str(stack.var_dir),
                "MANDATUM_ENVIRONMENT": "test",
                "MANDATUM_PUBLIC_URL": f"http://127.0.0.1:{self.port}",
            }
        )
        if crash_at:
            env["MANDATUM_CRASH_AT"] = crash_at
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "api.app:create_app",
                    "--factory",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.base_url = f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    async def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient(base_url=self.base_url, limits=LIVE_LIMITS) as client:
            while time.monotonic() < deadline:
                assert self.proc.poll() is None, f"the API exited at start:\n{self.output()}"
                try:
                    if (await client.get("/healthz", timeout=1)).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        raise AssertionError(f"the API did not start:\n{self.output()}")

    async def exit_code(self) -> int | None:
        for _ in range(100):
            if self.proc.poll() is not None:
                return self.proc.returncode
            await asyncio.sleep(0.05)
        return None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


async def post_until_the_api_dies(stack: Stack, crash_at: str, body: dict[str, Any]) -> store.RequestBundle:
    """POST /request to an API that dies at ``crash_at``; the request row it left behind."""
    api = ApiProcess(stack, crash_at)
    try:
        await api.wait_ready()
        async with httpx.AsyncClient(base_url=api.base_url, timeout=20, limits=LIVE_LIMITS) as http:
            with pytest.raises(httpx.TransportError):  # the connection drops: no answer at all
                await SignedClient(http, stack.org).post("/request", body)
        assert await api.exit_code() == 137, api.output()
    finally:
        api.stop()
    bundles, total = queries.list_requests(stack.engine, stack.org.organization_id, queries.RequestFilter())
    assert total == 1
    return bundles[0]


async def assert_no_workflow(client: Client, request_id: str) -> None:
    with pytest.raises(RPCError) as info:
        await request_handle(client, request_id).describe()
    assert info.value.status == RPCStatusCode.NOT_FOUND


async def runs_of(client: Client, request_id: str) -> list[str]:
    """Run ids of every execution with the request's workflow id (visibility lags: poll a little)."""
    query = f'WorkflowId="{request_workflow_id(request_id)}"'
    runs: list[str] = []
    for _ in range(50):
        runs = [wf.run_id async for wf in client.list_workflows(query=query)]
        if runs:
            return runs
        await asyncio.sleep(0.1)
    return runs


def started_at(stack: Stack, request_id: str) -> Any:
    return db_request(stack.engine, stack.org.organization_id, request_id).request.workflow_started_at


async def test_api_dies_after_the_insert_and_the_reconciler_starts_the_workflow(
    stack: Stack,
    executor: ThreadPoolExecutor,
) -> None:
    body = policy_request(
        internalId="ext-crash-1",
        securityLevel="ORGANIZATION_KYC",
        contacts=["ana@example.com", "bea@example.com"],
    )
    bundle = await post_until_the_api_dies(stack, "after-request-insert", body)
    request_id = bundle.request.id
    assert bundle.request.workflow_started_at is None
    assert bundle.request.status == "PENDING" and len(bundle.subjects) == 2
    await assert_no_workflow(stack.client, request_id)

    async with build_worker(stack.client, stack.engine, stack.queue, executor, stack.settings):
        assert await reconcile_once(stack.client, stack.engine, stack.queue, timedelta(hours=1)) == []
        assert started_at(stack, request_id) is None  # within the grace period: left to the API

        assert await reconcile_once(stack.client, stack.engine, stack.queue, NO_GRACE) == [request_id]

        assert started_at(stack, request_id) is not None
        handle = request_handle(stack.client, request_id)
        desc = await handle.describe()
        assert desc.status == WorkflowExecutionStatus.RUNNING and desc.task_queue == stack.queue
        sa = desc.typed_search_attributes
        assert (
            sa.get(SA_ORGANIZATION),
            sa.get(SA_STATUS),
            sa.get(SA_SECURITY_LEVEL),
            sa.get(SA_INTERNAL_ID),
        ) == (stack.org.organization_id, "PENDING", "ORGANIZATION_KYC", "ext-crash-1")
        view = await status_of(handle)
        assert view.awaiting == 2 and view.expires_at == bundle.request.expires_at

        assert await reconcile_once(stack.client, stack.engine, stack.queue, NO_GRACE) == []
        assert await runs_of(stack.client, request_id) == [desc.run_id]

        canceled = await cancel(handle)  # the recovered workflow works end to end
        assert (await result_of(handle)).status == "CANCELED"
    assert (
        db_request(stack.engine, stack.org.organization_id, request_id).request.canceled_at
        == canceled.canceled_at
    )


async def test_api_dies_after_the_workflow_start_and_the_reconciler_only_marks_it(
    stack: Stack,
    executor: ThreadPoolExecutor,
) -> None:
    bundle = await post_until_the_api_dies(stack, "after-workflow-start", policy_request())
    request_id = bundle.request.id
    assert bundle.request.workflow_started_at is None
    handle = request_handle(stack.client, request_id)
    before = await handle.describe()
    assert before.status == WorkflowExecutionStatus.RUNNING
    assert before.typed_search_attributes.get(SA_ORGANIZATION) == stack.org.organization_id

    async with build_worker(stack.client, stack.engine, stack.queue, executor, stack.settings):
        assert await reconcile_once(stack.client, stack.engine, stack.queue, NO_GRACE) == []
        assert started_at(stack, request_id) is not None
        assert await reconcile_once(stack.client, stack.engine, stack.queue, NO_GRACE) == []
        assert (await handle.describe()).run_id == before.run_id
        assert await runs_of(stack.client, request_id) == [before.run_id]
        await cancel(handle)
        assert (await result_of(handle)).status == "CANCELED"
    # a finished workflow is never started again, even for a row that lost its mark
    with stack.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE credential_request SET workflow_started_at = NULL")
    assert await reconcile_once(stack.client, stack.engine, stack.queue, NO_GRACE) == []
    assert started_at(stack, request_id) is not None
    assert await runs_of(stack.client, request_id) == [before.run_id]


async def test_api_without_crash_point_starts_and_marks(stack: Stack) -> None:
    """The control: the same process, not told to crash, leaves nothing for the reconciler."""
    api = ApiProcess(stack, None)
    try:
        await api.wait_ready()
        async with httpx.AsyncClient(base_url=api.base_url, timeout=20, limits=LIVE_LIMITS) as http:
            resp = await SignedClient(http, stack.org).post("/request", policy_request())
        assert resp.status_code == 201, resp.text + api.output()
    finally:
        api.stop()
    request_id = resp.json()["data"]["id"]
    assert started_at(stack, request_id) is not None
    assert (
        await request_handle(stack.client, request_id).describe()
    ).status == WorkflowExecutionStatus.RUNNING
    assert await reconcile_once(stack.client, stack.engine, stack.queue, NO_GRACE) == []
    await request_handle(stack.client, request_id).terminate("test clean-up")


async def test_delete_of_a_request_whose_workflow_never_started(
    api: SignedClient,
    temporal: Client,
    engine: Engine,
    org: Credentials,
) -> None:
    """DELETE starts the missing workflow, then cancels it (api/routes/requests.py cancel_request)."""
    bundle = insert_request(engine, org.organization_id)
    request_id = bundle.request.id
    await assert_no_workflow(temporal, request_id)

    resp = await api.delete(f"/request/{request_id}")

    assert resp.status_code == 200, resp.text
    handle = request_handle(temporal, request_id)
    assert (await result_of(handle)).status == "CANCELED"
    stored = db_request(engine, org.organization_id, request_id)
    assert stored.request.workflow_started_at is not None
    assert stored.request.status == "CANCELED"
    assert stored.request.canceled_at == (await status_of(handle)).canceled_at
    assert [c.status for c in stored.credentials] == ["CANCELED"]
    assert (await handle.describe()).typed_search_attributes.get(SA_STATUS) == "CANCELED"
    assert (await api.delete(f"/request/{request_id}")).status_code == 409


async def test_worker_process_reconciles_then_dies_with_a_cancel_in_flight(stack: Stack) -> None:
    """The real worker process recovers a lost start; killed (-9) afterwards, a cancel sent while no
    worker runs waits, and a new worker process completes it with the database in agreement."""
    bundle = await post_until_the_api_dies(stack, "after-request-insert", policy_request())
    request_id = bundle.request.id
    handle = request_handle(stack.client, request_id)

    first = WorkerProcess(stack, "first")
    try:
        for _ in range(300):  # the reconciler in the worker process starts and marks it
            if started_at(stack, request_id) is not None or first.proc.poll() is not None:
                break
            await asyncio.sleep(0.05)
        assert started_at(stack, request_id) is not None, first.output()
        assert (await status_of(handle)).status == "PENDING"  # the worker has the workflow cached
    finally:
        first.proc.kill()
        first.proc.wait()
    assert first.proc.returncode == -9

    in_flight = asyncio.create_task(cancel(handle, by="ops"))
    await asyncio.sleep(0.5)
    assert not in_flight.done()
    assert db_request(stack.engine, stack.org.organization_id, request_id).request.canceled_at is None

    second = WorkerProcess(stack, "second")
    try:
        canceled = await in_flight
        assert (await result_of(handle)).status == "CANCELED"
    finally:
        assert second.stop() == 0, second.output()  # SIGTERM: a clean shutdown
    stored = db_request(stack.engine, stack.org.organization_id, request_id)
    assert (stored.request.status, stored.request.canceled_at, stored.request.canceled_by) == (
        "CANCELED",
        canceled.canceled_at,
        "ops",
    )
    assert await runs_of(stack.client, request_id) == [(await handle.describe()).run_id]
