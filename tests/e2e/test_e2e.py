"""``make run`` end to end: the real processes, real ports, real HTTP, a real restart.

Starts ``python -m cli.devstack`` exactly as ``make run`` does (fresh var dir, free ports), signs
requests with the key and secret it prints, finds the request's workflow in Temporal, stops the
stack with Ctrl-C (SIGINT) and starts it again on the same data.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from core.settings import Settings
from orchestration.temporal import build_client
from tests.support.api_client import (
    LIVE_LIMITS,
    Credentials,
    SignedClient,
    assert_error_shape,
    policy_request,
)
from tests.support.ports import free_port
from workflows.ids import SA_ORGANIZATION, SA_STATUS, request_workflow_id
from workflows.messages import RequestStatusView

pytestmark = pytest.mark.e2e

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BANNER_END = "Press Ctrl-C to stop."
START_TIMEOUT = 120.0  # a cold start on a 2-core CI machine; the devstack itself waits up to 90 s
STOP_TIMEOUT = 30.0


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), 0.5):
            return True
    except OSError:
        return False


def alive(pid: int) -> bool:
    """Running and not a zombie (Linux /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            for child in children.read_text().split():
                found += [int(child), *descendants(int(child))]
    return found


class Devstack:
    """One ``python -m cli.devstack`` process, its output collected by a reader thread."""

    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.grpc, self.ui, self.api = free_port(), free_port(), free_port()
        # every process's /metrics: the API, the worker, the worker's Temporal SDK, Temporal's
        self.metrics = {
            "API": free_port(),
            "worker": free_port(),
            "worker's Temporal SDK": free_port(),
            "Temporal server": free_port(),
        }
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self._banner = threading.Event()

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.grpc}"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api}"

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
        env.update(
            {
                "MANDATUM_ENVIRONMENT": "development",
                "MANDATUM_VAR_DIR": str(self.var_dir),
                "MANDATUM_TEMPORAL_ADDRESS": self.temporal_address,
                "MANDATUM_TEMPORAL_UI_PORT": str(self.ui),
                "MANDATUM_API_PORT": str(self.api),
                "MANDATUM_API_METRICS_PORT": str(self.metrics["API"]),
                "MANDATUM_WORKER_METRICS_PORT": str(self.metrics["worker"]),
                "MANDATUM_WORKER_SDK_METRICS_PORT": str(self.metrics["worker's Temporal SDK"]),
                "MANDATUM_TEMPORAL_METRICS_PORT": str(self.metrics["Temporal server"]),
                "PYTHONUNBUFFERED": "1",
            }
        )
        return env

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line)
            if line.strip() == BANNER_END:
                self._banner.set()

    def start(self) -> str:
        """Start the way ``make run`` does; the output up to the banner's last line."""
        self.lines, self._banner = [], threading.Event()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.devstack"],
            cwd=PROJECT_ROOT,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._banner.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                time.sleep(0.5)  # let the reader catch the last lines
                state = (
                    f"exited with {self.proc.returncode}"
                    if self.proc.poll() is not None
                    else f"no banner after {START_TIMEOUT:.0f}s"
                )
                pytest.fail(
                    f"devstack {state}. Output:\n{self.output}\ntemporal.log:\n{self._temporal_log()}"
                )
        return self.output

    def _temporal_log(self) -> str:
        path = self.var_dir / "log" / "temporal.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-30:]) if path.exists() else "-"

    def interrupt(self) -> tuple[int, float]:
        """Ctrl-C: (exit code, seconds it took)."""
        assert self.proc is not None
        began = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"devstack still running {STOP_TIMEOUT:.0f}s after SIGINT:\n{self.output}")
        return code, time.monotonic() - began

    def kill(self) -> None:
        """Teardown after a failure: stop politely, then leave nothing behind."""
        if self.proc is None or self.proc.poll() is not None:
            return
        children = descendants(self.proc.pid)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def devstack(tmp_path: Path) -> Iterator[Devstack]:
    stack = Devstack(tmp_path / "var")
    try:
        yield stack
    finally:
        stack.kill()


def printed(pattern: str, output: str) -> str:
    found = re.search(pattern, output, re.MULTILINE)
    assert found, f"{pattern!r} not in the banner:\n{output}"
    return found.group(1)


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 30.0) -> None:
    """Await ``check()`` until it returns true (visibility and the UI lag behind)."""
    deadline = time.monotonic() + within
    while True:
        with contextlib.suppress(Exception):
            if await check():
                return
        assert time.monotonic() < deadline, f"{check.__name__} was never true within {within:.0f}s"
        await asyncio.sleep(0.5)


async def connect(stack: Devstack) -> Client:
    """The client every process uses (``build_client``), pointed at the stack's Temporal server."""
    return await build_client(Settings(var_dir=stack.var_dir, temporal_address=stack.temporal_address))


async def assert_workflow_pending(client: Client, request_id: str, org_id: str) -> None:
    handle = client.get_workflow_handle(request_workflow_id(request_id))
    described = await handle.describe()
    assert described.status == WorkflowExecutionStatus.RUNNING
    attributes = described.typed_search_attributes
    assert attributes.get(SA_ORGANIZATION) == org_id
    assert attributes.get(SA_STATUS) == "PENDING"
    view = await handle.query("status", result_type=RequestStatusView)  # answered by the worker
    assert view.status == "PENDING" and view.request_id == request_id


async def test_make_run_end_to_end(devstack: Devstack) -> None:
    first = await asyncio.to_thread(devstack.start)
    org_id = printed(r"organization id\s+([0-9a-f]{24})$", first)
    creds = Credentials(
        org_id, "", printed(r"API key\s+(\S+)$", first), printed(r"signature secret\s+(\S+)$", first), ""
    )

    async with httpx.AsyncClient(base_url=devstack.api_url, timeout=30, limits=LIVE_LIMITS) as http:
        api = SignedClient(http, creds)
        created = await api.post("/request", policy_request(internalId="e2e-1"))
        assert created.status_code == 201, created.text
        request_id = created.json()["data"]["id"]
        listed = await api.get("/request")
        assert listed.status_code == 200, listed.text
        assert request_id in [r["id"] for r in listed.json()["data"]]
        assert_error_shape(await http.get("/request"), 401)

        # the dashboard's owner chooses a password at the printed link, logs in, sees the request
        link = printed(r"^\s+(http://\S+/dashboard/set-password/[A-Za-z0-9_-]+)$", first)
        assert link.startswith(devstack.api_url)
        password = "a long development password"
        chosen = await http.post(link, data={"password": password, "again": password})
        assert chosen.status_code == 303, chosen.text
        logged = await http.post(
            "/dashboard/login", data={"email": "owner@example.com", "password": password}
        )
        assert logged.status_code == 303, logged.text
        overview = await http.get("/dashboard")
        assert "Development organization" in overview.text and request_id in overview.text
        assert f"{devstack.api_url}/dashboard" in first

        async def ui_answers() -> bool:
            ui = await http.get(f"http://127.0.0.1:{devstack.ui}/namespaces/default/workflows")
            return ui.status_code == 200

        await eventually(ui_answers)

        # the banner names every /metrics, and each answers with its own metrics
        expected = {
            "API": "mandatum_http_requests_total",
            "worker": "mandatum_audit_append_seconds",
            "worker's Temporal SDK": "temporal_",
            "Temporal server": "build_information",
        }
        for what, port in devstack.metrics.items():
            url = f"http://127.0.0.1:{port}/metrics"
            assert f"  metrics       {url}  ({what})" in first, first
            scraped = await http.get(url)
            assert scraped.status_code == 200 and expected[what] in scraped.text, (what, scraped.text[:300])

    client = await connect(devstack)
    await assert_workflow_pending(client, request_id, org_id)

    async def visible() -> bool:
        query = f'MandatumOrganization="{org_id}"'
        ids = [w.id async for w in client.list_workflows(query=query)]
        return ids == [request_workflow_id(request_id)]

    await eventually(visible)

    assert devstack.proc is not None
    children = descendants(devstack.proc.pid)
    assert len(children) >= 3, f"expected temporal, worker and api under devstack: {children}"
    code, took = await asyncio.to_thread(devstack.interrupt)
    assert code == 0, devstack.output
    assert took < STOP_TIMEOUT
    assert [pid for pid in children if alive(pid)] == [], "children outlived the devstack"
    for port in (devstack.grpc, devstack.ui, devstack.api):
        assert not listening(port), f"port {port} still open after Ctrl-C"

    second = await asyncio.to_thread(devstack.start)
    assert creds.api_key not in second and creds.secret not in second and link not in second
    assert f"Development organization {org_id}" in second

    async with httpx.AsyncClient(base_url=devstack.api_url, timeout=30, limits=LIVE_LIMITS) as http:
        api = SignedClient(http, creds)
        listed = await api.get("/request")
        assert listed.status_code == 200, listed.text
        assert request_id in [r["id"] for r in listed.json()["data"]]
        again = await api.get(f"/request/{request_id}")
        assert again.json()["status"] == "PENDING"

    await assert_workflow_pending(await connect(devstack), request_id, org_id)
    code, _ = await asyncio.to_thread(devstack.interrupt)
    assert code == 0, devstack.output
