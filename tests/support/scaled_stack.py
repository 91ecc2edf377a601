"""The scaled shape on one machine (docs/architecture.md, "Local and scaled operation"): several API
processes and ``python -m worker`` processes on one PostgreSQL database and one Temporal server.

Each process is started and waited for by the supervisor ``make run`` uses (``cli.stack``: its
command lines, its environment, its log under ``var/log/``, its ``/readyz`` checks), one supervisor
per process so that each has its own port, and each can be killed alone. ``Router`` is the client
side: two APIs behind what a load balancer would do, and ``DeadWorkerSweeper`` what an operator
does after a worker died with work in hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from google.protobuf.duration_pb2 import Duration
from google.protobuf.field_mask_pb2 import FieldMask
from temporalio.api.activity.v1 import ActivityOptions
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.workflowservice.v1 import (
    DescribeWorkflowExecutionRequest,
    ResetStickyTaskQueueRequest,
    UpdateActivityOptionsRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from cli.stack import Child, Stack, api_command, worker_command
from core.settings import Settings
from tests.support.api_client import LIVE_LIMITS, Credentials, SignedClient
from tests.support.ports import free_port

DEADLINE = 60.0  # the longest any one call may take to get an answer, retries included


@dataclass
class Process:
    name: str
    kind: str  # api | worker
    settings: Settings  # what it runs with (its own port)
    supervisor: Stack
    child: Child

    @property
    def pid(self) -> int:
        return int(self.child.proc.pid)

    async def kill(self) -> int:
        """SIGKILL: no clean-up, no goodbye to Temporal or the database; its exit code."""
        self.child.signal_group(signal.SIGKILL)
        return await self.child.proc.wait()


@dataclass
class ScaledStack:
    """API and worker processes sharing ``settings`` (database, Temporal, task queue, master key,
    public URL, var dir); each gets its own port."""

    settings: Settings
    processes: dict[str, Process] = field(default_factory=dict)

    async def _start(self, name: str, kind: str, settings: Settings, command: list[str]) -> Process:
        supervisor = Stack(settings, echo=False)
        child = await supervisor._spawn(name, command, echo=False)
        process = self.processes[name] = Process(name, kind, settings, supervisor, child)
        await supervisor._until(child, "ready", lambda: self.ready(name))  # StartupError shows its log
        return process

    async def start_api(self, name: str) -> Process:
        settings = self.settings.model_copy(update={"api_port": free_port()})
        return await self._start(name, "api", settings, api_command(settings))

    async def start_worker(self, name: str) -> Process:
        settings = self.settings.model_copy(update={"worker_health_port": free_port()})
        return await self._start(name, "worker", settings, worker_command())

    def api_url(self, name: str) -> str:
        settings = self.processes[name].settings
        return f"http://127.0.0.1:{settings.api_port}"

    async def ready(self, name: str) -> bool:
        """The process answers its ``/readyz`` with 200 now (a worker: and polls its queue)."""
        process = self.processes[name]
        if process.kind == "api":
            return await process.supervisor._api_ready()
        return await process.supervisor._worker_ready()

    async def stop(self) -> None:
        """Every process still running, as ``make run`` stops them (SIGTERM, then SIGKILL)."""
        await asyncio.gather(*(p.supervisor.stop() for p in self.processes.values()))


class Stamps:
    """Strictly increasing X-Timestamp values: two calls of one key in one millisecond with the
    same content (a VP verified twice, two body-less presentations) would otherwise carry the same
    signature, which the replay guard refuses."""

    def __init__(self) -> None:
        self.last = 0

    def next(self) -> str:
        self.last = max(int(time.time() * 1000), self.last + 1)
        return str(self.last)


class Router:
    """The APIs as a client behind a load balancer sees them: call ``k`` goes to API ``k % n``,
    or to a live one when that one is down; a dropped connection or a 503 is tried again (on the
    next live API) until ``DEADLINE``."""

    def __init__(self, urls: list[str]) -> None:
        self.clients = [httpx.AsyncClient(base_url=url, timeout=30, limits=LIVE_LIMITS) for url in urls]
        self.down: set[int] = set()
        self.stamps = Stamps()

    def pick(self, k: int) -> int:
        live = [i for i in range(len(self.clients)) if i not in self.down]
        assert live, "every API is down"
        return k % len(self.clients) if k % len(self.clients) in live else live[k % len(live)]

    async def send_tracked(
        self, k: int, call: Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]
    ) -> tuple[httpx.Response, bool]:
        """The answer, and whether it is not the first attempt's: an earlier one lost its
        connection or answered 503, and may have landed all the same."""
        deadline, attempt = time.monotonic() + DEADLINE, 0
        while True:
            try:
                answer = await call(self.clients[self.pick(k + attempt)])
                if answer.status_code != 503:
                    return answer, attempt > 0
                problem = f"503 {answer.text[:200]}"
            except httpx.TransportError as exc:
                problem = repr(exc)
            attempt += 1
            assert time.monotonic() < deadline, f"no answer within {DEADLINE:.0f}s: {problem}"
            await asyncio.sleep(0.1)

    async def send(
        self, k: int, call: Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]
    ) -> httpx.Response:
        return (await self.send_tracked(k, call))[0]

    def signed(
        self,
        creds: Credentials,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]:
        """A signed call, signed afresh at each attempt."""
        return lambda http: SignedClient(http, creds).request(
            method, path, body, headers=headers, timestamp=self.stamps.next()
        )

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()


class DeadWorkerSweeper:
    """What an operator does for a worker killed with work in hand, so that a test does not wait
    out Temporal's timeouts (as ``tests.support.durability.retry_now`` does for one workflow):
    each open workflow of the queue stops being sticky to a worker (its next task goes to the
    shared queue at once rather than after the sticky timeout, 10 s), and each activity attempt the
    dead worker had started gets a start-to-close timeout of ``ATTEMPT`` (30 to 60 s otherwise),
    after which the server retries it on a live worker. Nothing else changes."""

    ATTEMPT = 5  # seconds: ample for one database write or local POST, even on a loaded machine

    def __init__(self, client: Client, queue: str, dead_pid: int) -> None:
        self.client, self.queue = client, queue
        self.identity = f"{dead_pid}@"  # a worker's identity is <pid>@<host> (the SDK's default)
        self.unstuck: set[str] = set()
        self.shortened: set[tuple[str, str]] = set()

    async def _sweep_one(self, execution: WorkflowExecution) -> None:
        service, ns = self.client.workflow_service, self.client.namespace
        if execution.workflow_id not in self.unstuck:
            await service.reset_sticky_task_queue(
                ResetStickyTaskQueueRequest(namespace=ns, execution=execution)
            )
            self.unstuck.add(execution.workflow_id)
        described = await service.describe_workflow_execution(
            DescribeWorkflowExecutionRequest(namespace=ns, execution=execution)
        )
        for pending in described.pending_activities:
            key = (execution.workflow_id, pending.activity_id)
            if (
                pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
                and pending.last_worker_identity.startswith(self.identity)
                and key not in self.shortened
            ):
                await service.update_activity_options(
                    UpdateActivityOptionsRequest(
                        namespace=ns,
                        execution=execution,
                        id=pending.activity_id,
                        activity_options=ActivityOptions(
                            start_to_close_timeout=Duration(seconds=self.ATTEMPT)
                        ),
                        update_mask=FieldMask(paths=["start_to_close_timeout"]),
                    )
                )
                self.shortened.add(key)

    async def sweep(self) -> None:
        query = f'TaskQueue="{self.queue}" AND ExecutionStatus="Running"'
        async for found in self.client.list_workflows(query):
            try:
                await self._sweep_one(WorkflowExecution(workflow_id=found.id, run_id=found.run_id))
            except RPCError as exc:  # it closed, or the attempt ended, meanwhile: nothing to hasten
                if exc.status not in (
                    RPCStatusCode.NOT_FOUND,
                    RPCStatusCode.FAILED_PRECONDITION,
                    RPCStatusCode.INVALID_ARGUMENT,
                ):
                    raise

    async def run(self, until: asyncio.Event) -> None:
        """Sweep every second (visibility lags, and a dead poller may still be handed a task)."""
        while not until.is_set():
            await self.sweep()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(until.wait(), 1.0)
