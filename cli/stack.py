"""Supervising the local stack's processes: the Temporal dev server, the worker and the API.

Each child runs in its own session, so the terminal's Ctrl-C reaches only the supervisor, which
stops the children in order: API, worker, then Temporal. Used by ``make run`` (cli/devstack.py),
the end-to-end test and the benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from core.settings import Settings, browsable
from orchestration.temporal import build_client
from services.setup import restrict
from workflows.ids import SEARCH_ATTRIBUTES

BIN = Path(sys.executable).parent
START_TIMEOUT = 90.0  # a cold Temporal start on a small CI machine takes a while
STOP_TIMEOUT = 15.0
BANNER_END = "Press Ctrl-C to stop."


# Temporal's dynamic configuration, the same for the dev server (``make run``, the tests, the
# benchmarks) and the scaled shape (docker-compose.yml's ``temporal-dynamic-config``; a test holds
# the two together). The transfer queue, which hands every workflow task that is not an update's
# own (after an activity, a child's start, a new workflow's first) to matching, is polled at most
# 20 times a second per history shard by default: a task made less than 50 ms after the previous
# poll waited for the next, 20 to 46 ms each on the way from a decision to its webhook
# (docs/architecture.md, "Performance notes"). 200 keeps a limit on the database's reads.
TEMPORAL_DYNAMIC_CONFIG: dict[str, int] = {"history.transferProcessorMaxPollRPS": 200}


def dynamic_config_args() -> list[str]:
    """``--dynamic-config-value`` flags for ``temporal server start-dev``."""
    return [
        arg
        for key, value in TEMPORAL_DYNAMIC_CONFIG.items()
        for arg in ("--dynamic-config-value", f"{key}={value}")
    ]


class StartupError(RuntimeError):
    """A part of the stack did not come up; the message says which and why."""


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM) arrived while the stack was starting."""


def temporal_command(settings: Settings) -> list[str]:
    host, _, port = settings.temporal_address.rpartition(":")
    cmd = [
        str(BIN / "temporal"),
        "server",
        "start-dev",
        "--db-filename",
        str(settings.var_dir / "temporal.db"),
        "--sqlite-pragma",
        "journal_mode=wal",
        "--sqlite-pragma",
        "synchronous=normal",
        "--ip",
        host,
        "--port",
        port,
        "--ui-port",
        str(settings.temporal_ui_port),
        "--ui-disable-news-fetch",
        "--log-level",
        "warn",
        "--namespace",
        settings.temporal_namespace,
    ]
    for name, kind in SEARCH_ATTRIBUTES.items():
        cmd += ["--search-attribute", f"{name}={kind}"]
    cmd += dynamic_config_args()
    if settings.temporal_metrics_port is not None:  # otherwise the dev server picks a random port
        cmd += ["--metrics-port", str(settings.temporal_metrics_port)]
    return cmd


def worker_command() -> list[str]:
    return [sys.executable, "-m", "worker"]


def api_command(settings: Settings, workers: int = 1) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "api.app:serve_app",  # create_app with the process's logging (core.observe.logs)
        "--factory",
        "--host",
        settings.api_host,
        "--port",
        str(settings.api_port),
        "--workers",
        str(workers),
        "--no-access-log",
        "--no-server-header",
        "--timeout-graceful-shutdown",
        "5",
    ]


def child_env(settings: Settings) -> dict[str, str]:
    """The environment of the children: exactly the settings this process resolved."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.update(
        {
            "MANDATUM_ENVIRONMENT": settings.environment.value,
            "MANDATUM_VAR_DIR": str(settings.var_dir),
            "MANDATUM_TEMPORAL_ADDRESS": settings.temporal_address,
            "MANDATUM_TEMPORAL_NAMESPACE": settings.temporal_namespace,
            "MANDATUM_TEMPORAL_GRPC_COMPRESSION": settings.temporal_grpc_compression,
            "MANDATUM_TASK_QUEUE": settings.task_queue,
            "MANDATUM_API_HOST": settings.api_host,
            "MANDATUM_API_PORT": str(settings.api_port),
            "MANDATUM_PUBLIC_URL": settings.public_url,
            "MANDATUM_WORKER_HEALTH_HOST": settings.worker_health_host,
        }
    )
    env["MANDATUM_LOG_LEVEL"] = settings.log_level
    env["MANDATUM_LOG_FORMAT"] = settings.log_format_resolved
    ports = {
        "MANDATUM_WORKER_HEALTH_PORT": settings.worker_health_port,
        "MANDATUM_API_METRICS_PORT": settings.api_metrics_port,
        "MANDATUM_WORKER_METRICS_PORT": settings.worker_metrics_port,
        "MANDATUM_WORKER_SDK_METRICS_PORT": settings.worker_sdk_metrics_port,
    }
    for name in ("MANDATUM_DATABASE_URL", "DATABASE_URL", "MANDATUM_MASTER_KEY", *ports):
        env.pop(name, None)  # set below only when this process uses them
    if settings.database_url:
        env["MANDATUM_DATABASE_URL"] = settings.database_url
    env.update({name: str(port) for name, port in ports.items() if port is not None})
    if settings.master_key is not None:  # otherwise every process reads var/master.key
        env["MANDATUM_MASTER_KEY"] = settings.master_key.get_secret_value()
    return env


def listening(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((browsable(host), int(port)), 0.5):
            return True
    except OSError:
        return False


def stack_addresses(settings: Settings) -> dict[str, str]:
    """What the stack listens on, and the setting that moves each."""
    temporal_host = settings.temporal_address.rpartition(":")[0]
    addresses = {
        "MANDATUM_TEMPORAL_ADDRESS": settings.temporal_address,
        "MANDATUM_TEMPORAL_UI_PORT": f"{temporal_host}:{settings.temporal_ui_port}",
        "MANDATUM_API_PORT": f"{settings.api_host}:{settings.api_port}",
    }
    if settings.worker_health_port is not None:
        addresses["MANDATUM_WORKER_HEALTH_PORT"] = (
            f"{settings.worker_health_host}:{settings.worker_health_port}"
        )
    for variable, host, port in metrics_ports(settings):
        addresses[variable] = f"{host}:{port}"
    return addresses


def metrics_ports(settings: Settings) -> list[tuple[str, str, int]]:
    """The metrics endpoints the stack serves: (the variable that moves it, host, port)."""
    temporal_host = settings.temporal_address.rpartition(":")[0]
    found = [
        ("MANDATUM_API_METRICS_PORT", settings.api_metrics_host, settings.api_metrics_port),
        ("MANDATUM_WORKER_METRICS_PORT", settings.worker_metrics_host, settings.worker_metrics_port),
        ("MANDATUM_WORKER_SDK_METRICS_PORT", settings.worker_metrics_host, settings.worker_sdk_metrics_port),
        ("MANDATUM_TEMPORAL_METRICS_PORT", temporal_host, settings.temporal_metrics_port),
    ]
    return [(variable, host, port) for variable, host, port in found if port]


def metrics_urls(settings: Settings) -> dict[str, str]:
    """Where each part of the stack serves ``/metrics`` (the ones with a port)."""
    names = {
        "MANDATUM_API_METRICS_PORT": "API",
        "MANDATUM_WORKER_METRICS_PORT": "worker",
        "MANDATUM_WORKER_SDK_METRICS_PORT": "worker's Temporal SDK",
        "MANDATUM_TEMPORAL_METRICS_PORT": "Temporal server",
    }
    return {
        names[variable]: f"http://{browsable(host)}:{port}/metrics"
        for variable, host, port in metrics_ports(settings)
    }


def worker_health_url(settings: Settings) -> str | None:
    """Where the worker answers ``/healthz`` and ``/readyz``; None when it serves no health endpoint."""
    if settings.worker_health_port is None:
        return None
    return f"http://{browsable(settings.worker_health_host)}:{settings.worker_health_port}"


def check_ports_free(settings: Settings) -> None:
    for variable, address in stack_addresses(settings).items():
        if listening(address):
            raise StartupError(
                f"{address} is already in use (another `make run`, or a Temporal server?). "
                f"Stop it, or choose another port with {variable}."
            )


def log_tail(path: Path, lines: int = 25) -> str:
    """The last lines this run wrote to a log (each start writes a ``--- <time>`` line first)."""
    if not path.exists():
        return f"    ({path} does not exist)"
    text = path.read_text(errors="replace").splitlines()
    starts = [i for i, line in enumerate(text) if line.startswith("--- ")]
    text = text[starts[-1] + 1 if starts else 0 :][-lines:]
    return "\n".join(f"    {line}" for line in text) or "    (no output)"


@dataclass
class Child:
    name: str
    proc: asyncio.subprocess.Process
    log: Path
    pipe: asyncio.Task[None]

    @property
    def running(self) -> bool:
        return self.proc.returncode is None

    def signal_group(self, sig: int) -> None:
        """The child leads its own process group: signal it and anything it started."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


async def _pipe(name: str, stream: asyncio.StreamReader | None, log: Path, echo: bool) -> None:
    """Copy a child's output to its log (and our stdout); read in chunks, so that no line is too
    long to read and the child never blocks on a full pipe."""
    if stream is None:
        return
    pending = b""
    with log.open("ab") as sink:
        while chunk := await stream.read(65536):
            sink.write(chunk)
            sink.flush()
            if echo:
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    sys.stdout.write(f"[{name}] {line.decode(errors='replace')}\n")
                sys.stdout.flush()
    if echo and pending:
        sys.stdout.write(f"[{name}] {pending.decode(errors='replace')}\n")
        sys.stdout.flush()


@dataclass
class Stack:
    """Temporal, worker and API of one installation, started in order and stopped in reverse."""

    settings: Settings
    echo: bool = True  # worker and API output on our stdout as well as in var/log/
    api_workers: int = 1
    stop_requested: asyncio.Event = field(default_factory=asyncio.Event)
    force: asyncio.Event = field(default_factory=asyncio.Event)
    children: list[Child] = field(default_factory=list)
    # the last thing a child that is not ready yet said about it (shown if it never gets ready)
    last_answer: dict[str, str] = field(default_factory=dict)
    _client: Client | None = None

    @property
    def log_dir(self) -> Path:
        return self.settings.var_dir / "log"

    async def _spawn(self, name: str, cmd: list[str], echo: bool) -> Child:
        self.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        restrict(self.log_dir, 0o700)
        log = self.log_dir / f"{name}.log"
        os.close(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))  # whatever the umask
        restrict(log, 0o600)
        with log.open("ab") as sink:
            sink.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n".encode())
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            env=child_env(self.settings),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # the terminal's Ctrl-C reaches us only; we stop children in order
        )
        child = Child(name, proc, log, asyncio.create_task(_pipe(name, proc.stdout, log, echo)))
        self.children.append(child)
        return child

    async def _until(self, child: Child, what: str, ready: Callable[[], Awaitable[bool]]) -> None:
        """Poll ``ready`` until true; fail if the child exits, time runs out, or Ctrl-C comes."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.stop_requested.is_set():
                raise Interrupted()
            if not child.running:
                await asyncio.wait([child.pipe], timeout=2)  # let its last words reach the log
                raise StartupError(
                    f"{child.name} exited with code {child.proc.returncode} "
                    f"before {what}. Its output ({child.log}):\n{log_tail(child.log)}"
                )
            with contextlib.suppress(Exception):
                if await ready():
                    return
            if time.monotonic() > deadline:
                said = self.last_answer.get(child.name)
                raise StartupError(
                    f"{child.name} did not get {what} within {START_TIMEOUT:.0f}s"
                    + (f" (its last answer: {said})" if said else "")
                    + f". Its output ({child.log}):\n{log_tail(child.log)}"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop_requested.wait(), 0.25)

    async def client(self) -> Client:
        if self._client is None:
            self._client = await build_client(self.settings)
        return self._client

    async def _temporal_ready(self) -> bool:
        if not listening(self.settings.temporal_address):
            return False
        client = await self.client()
        registered = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=self.settings.temporal_namespace)
        )
        return set(SEARCH_ATTRIBUTES) <= set(registered.custom_attributes)

    async def _worker_polling(self) -> bool:
        client = await self.client()
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=self.settings.temporal_namespace,
                task_queue=TaskQueue(name=self.settings.task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        return len(described.pollers) > 0

    async def _ready(self, name: str, url: str) -> bool:
        """``url`` (a ``/readyz``) answers 200; its last other answer is kept for the error."""
        async with httpx.AsyncClient(timeout=5) as http:
            answer = await http.get(url)
        if answer.status_code == 200:
            return True
        self.last_answer[name] = f"{answer.status_code} {answer.text[:300]}"
        return False

    async def _api_ready(self) -> bool:
        """The API answers ``/readyz``: its database, Temporal and the migrations are checked."""
        url = f"http://{browsable(self.settings.api_host)}:{self.settings.api_port}/readyz"
        return await self._ready("api", url)

    async def _worker_ready(self) -> bool:
        """The worker polls its task queue (and answers its ``/readyz``, when it serves one)."""
        if not await self._worker_polling():
            return False
        health = worker_health_url(self.settings)
        return health is None or await self._ready("worker", f"{health}/readyz")

    async def start(self) -> None:
        """Start all three and return once each answers; StartupError says what failed."""
        check_ports_free(self.settings)
        temporal = await self._spawn("temporal", temporal_command(self.settings), echo=False)
        await self._until(
            temporal,
            f"serving on {self.settings.temporal_address} with the search attributes registered",
            self._temporal_ready,
        )
        worker = await self._spawn("worker", worker_command(), self.echo)
        api = await self._spawn("api", api_command(self.settings, self.api_workers), self.echo)
        await asyncio.gather(
            self._until(worker, f"polling task queue {self.settings.task_queue}", self._worker_ready),
            self._until(api, f"ready on {self.settings.api_host}:{self.settings.api_port}", self._api_ready),
        )

    async def wait_for_exit(self) -> list[Child]:
        """Wait until a stop is asked for (returns []) or a child dies (returns the dead)."""
        waiters = [asyncio.create_task(c.proc.wait()) for c in self.children]
        stopper = asyncio.create_task(self.stop_requested.wait())
        await asyncio.wait([stopper, *waiters], return_when=asyncio.FIRST_COMPLETED)
        for task in [stopper, *waiters]:
            task.cancel()
        return [] if self.stop_requested.is_set() else [c for c in self.children if not c.running]

    async def stop(self) -> None:
        """API first, then the worker, then Temporal; ``force`` (a second Ctrl-C) kills the rest."""
        for child in reversed(self.children):
            was_running = child.running
            if child.running and not self.force.is_set():
                child.signal_group(signal.SIGINT if child.name == "temporal" else signal.SIGTERM)
                waiter = asyncio.create_task(child.proc.wait())
                forcer = asyncio.create_task(self.force.wait())
                await asyncio.wait(
                    [waiter, forcer], timeout=STOP_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
                )
                forcer.cancel()
                if child.running:
                    why = "as asked" if self.force.is_set() else f"after {STOP_TIMEOUT:.0f}s"
                    print(f"killing {child.name} {why}", flush=True)
            if child.running:
                child.signal_group(signal.SIGKILL)
            await child.proc.wait()
            if self.echo and was_running:
                print(f"stopped {child.name}", flush=True)
        pipes = [c.pipe for c in self.children]
        if pipes:
            await asyncio.wait(pipes, timeout=2)
        for pipe in pipes:
            pipe.cancel()

    def on_signal(self) -> None:
        if self.stop_requested.is_set():
            self.force.set()
            return
        self.stop_requested.set()
        if self.echo:
            print("\nstopping (Ctrl-C again to kill at once)...", flush=True)
