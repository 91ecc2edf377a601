"""How the processes expose their metrics: make run's ports and banner, what the children are given,
the worker's Temporal SDK exporter, our ``/metrics`` server."""

from __future__ import annotations

from pathlib import Path

import httpx

from cli.devstack import DEV_METRICS_PORTS, banner, with_dev_metrics
from cli.stack import child_env, stack_addresses, temporal_command
from core.observe import metrics
from core.settings import Environment, Settings
from tests.support.ports import free_port
from worker import temporal_runtime


def test_make_run_serves_and_prints_every_metrics_endpoint(tmp_path: Path) -> None:
    plain = Settings(var_dir=tmp_path, environment=Environment.DEVELOPMENT, api_metrics_port=9999)
    dev = with_dev_metrics(plain)
    assert dev.api_metrics_port == 9999  # a port set stays
    assert (dev.worker_metrics_port, dev.worker_sdk_metrics_port, dev.temporal_metrics_port) == (
        DEV_METRICS_PORTS["worker_metrics_port"],
        DEV_METRICS_PORTS["worker_sdk_metrics_port"],
        DEV_METRICS_PORTS["temporal_metrics_port"],
    )
    command = temporal_command(dev)
    assert command[command.index("--metrics-port") + 1] == str(dev.temporal_metrics_port)
    assert "--metrics-port" not in temporal_command(plain)  # Stack's other users: a random port
    shown = banner(dev, "Development organization x")
    for port, what in (
        (9999, "API"),
        (dev.worker_metrics_port, "worker"),
        (dev.worker_sdk_metrics_port, "worker's Temporal SDK"),
        (dev.temporal_metrics_port, "Temporal server"),
    ):
        assert f"http://127.0.0.1:{port}/metrics  ({what})" in shown
    env = child_env(dev)
    assert env["MANDATUM_API_METRICS_PORT"] == "9999" and env["MANDATUM_WORKER_SDK_METRICS_PORT"] == "9466"
    assert "MANDATUM_API_METRICS_PORT" not in child_env(Settings(var_dir=tmp_path))
    assert stack_addresses(dev)["MANDATUM_TEMPORAL_METRICS_PORT"] == f"127.0.0.1:{dev.temporal_metrics_port}"


async def test_the_worker_exports_the_sdk_metrics_on_its_port(tmp_path: Path) -> None:
    assert temporal_runtime(Settings(var_dir=tmp_path)) is None
    port = free_port()
    runtime = temporal_runtime(Settings(var_dir=tmp_path, worker_sdk_metrics_port=port))
    assert runtime is not None
    async with httpx.AsyncClient() as http:
        answer = await http.get(f"http://127.0.0.1:{port}/metrics")
    assert answer.status_code == 200


async def test_our_metrics_server() -> None:
    assert metrics.serve("127.0.0.1", None, "test") is None
    server = metrics.serve("127.0.0.1", 0, "test")
    assert server is not None
    try:
        async with httpx.AsyncClient() as http:
            answer = await http.get(f"http://127.0.0.1:{server.port}/metrics")
    finally:
        server.close()
    assert answer.status_code == 200
    for name in (
        "mandatum_http_request_duration_seconds",
        "mandatum_audit_append_seconds",
        "process_cpu_seconds_total",
    ):
        assert f"# TYPE {name.removesuffix('_total')}" in answer.text, name
