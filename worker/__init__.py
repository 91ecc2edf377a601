"""The worker: settings -> Temporal client -> Worker(workflows, activity instances).

It also runs the reconciler that starts workflows for stored requests whose start was lost, and
periodically purges expired replay and idempotency entries and the dashboard's failed-login counts
that are all forgiven. It starts without Temporal: it
connects with a growing wait between attempts (orchestration.temporal.connect_with_backoff), logging each.
With ``MANDATUM_WORKER_HEALTH_PORT`` set it serves ``/healthz`` and ``/readyz`` there (worker.health)
from its start, so an orchestrator sees it alive while it waits for Temporal, and ready once it polls.

Logs, metrics and traces (core.observe): ``run`` sets up the process's logging
(``MANDATUM_LOG_FORMAT``), tracing (when an OTLP endpoint is set) and, with
``MANDATUM_WORKER_SDK_METRICS_PORT``, the Temporal SDK's own Prometheus exporter (a runtime made
before any client); ``main`` serves our metrics on ``MANDATUM_WORKER_METRICS_PORT``. Every worker
runs the interceptors that carry the request id into workflows and activities.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine
from temporalio.client import Client
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.worker import Worker

from activities.decisions import DecisionActivities
from activities.journey import JourneyActivities
from activities.mandates import MandateActivities
from activities.requests import RequestActivities
from activities.webhooks import WebhookActivities
from core.observe import metrics, tracing
from core.observe.logs import configure_logging
from core.observe.temporal import RequestIdWorkerInterceptor
from core.otp import JourneySecrets
from core.process import exit_now
from core.secretbox import SecretCipher
from core.settings import Settings, get_settings
from orchestration.temporal import connect_with_backoff, reconcile_forever
from services import limit_events, request_resend
from services.logins import BACKOFF as LOGIN_BACKOFF
from store import audit, portal, throttle
from store.db import keep_files_private, make_engine, utcnow
from store.guards import purge_expired
from worker.health import HealthServer, WorkerHealth, serve_health
from workflows.credential_request import CredentialRequestWorkflow
from workflows.credential_retry import CredentialRetryWorkflow
from workflows.webhook_delivery import WebhookDeliveryWorkflow

log = logging.getLogger("mandatum.worker")
WORKFLOWS = [CredentialRequestWorkflow, WebhookDeliveryWorkflow, CredentialRetryWorkflow]


@dataclass(frozen=True)
class ActivityGroups:
    """The worker's activities by the instance that holds them. ``all`` adds revision 3's decision
    writes (``activities.decisions``), made of the first three groups' activities, so a group that
    stands in for one (a test's, holding or failing a step) is called there too."""

    requests: RequestActivities
    mandates: MandateActivities
    webhooks: WebhookActivities
    journey: JourneyActivities

    @classmethod
    def of(cls, engine: Engine, settings: Settings) -> ActivityGroups:
        cipher = SecretCipher(settings.master_key_bytes())
        return cls(
            RequestActivities(engine),
            MandateActivities(engine, cipher, settings),
            WebhookActivities(engine, cipher, settings),
            JourneyActivities(engine, settings, JourneySecrets(settings.master_key_bytes()), cipher),
        )

    def all(self) -> list[Callable[..., Any]]:
        decisions = DecisionActivities(self.requests, self.mandates, self.webhooks)
        groups = (self.requests, self.mandates, self.webhooks, decisions, self.journey)
        return [fn for group in groups for fn in group.all()]


def worker_activities(engine: Engine, settings: Settings) -> list[Callable[..., Any]]:
    """Every activity the worker runs, bound to its dependencies."""
    return ActivityGroups.of(engine, settings).all()


def build_worker(
    client: Client,
    engine: Engine,
    task_queue: str,
    executor: ThreadPoolExecutor,
    settings: Settings | None = None,
) -> Worker:
    return Worker(
        client,
        task_queue=task_queue,
        workflows=WORKFLOWS,
        activities=worker_activities(engine, settings or get_settings()),
        activity_executor=executor,
        # the activities are synchronous: never take more than there are threads to run them, or
        # the extra ones wait in the executor's queue while their start-to-close timeout runs
        max_concurrent_activities=executor._max_workers,
        interceptors=[RequestIdWorkerInterceptor(), *tracing.temporal_interceptors()],
    )


async def _purge_forever(engine: Engine, settings: Settings) -> None:
    while True:
        try:
            await asyncio.to_thread(purge_expired, engine, settings.idempotency_window)
            await asyncio.to_thread(throttle.purge, engine, utcnow(), LOGIN_BACKOFF)
            await asyncio.to_thread(portal.purge, engine, utcnow())
        except Exception:
            log.exception("purge failed")
        await asyncio.sleep(60)


async def main(settings: Settings | None = None, stop: asyncio.Event | None = None) -> None:
    """Run until SIGINT or SIGTERM (or until ``stop`` is set, when given)."""
    settings = settings or get_settings()
    keep_files_private(settings.var_dir)
    settings.master_key_bytes()
    engine = make_engine(settings.sqlalchemy_url)
    audit.use_service_key(engine, SecretCipher(settings.master_key_bytes()), settings)
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    health = WorkerHealth(stop)
    server: HealthServer | None = None
    metrics_server: metrics.MetricsServer | None = None
    background: list[asyncio.Task[None]] = []
    try:
        server = await serve_health(health, settings.worker_health_host, settings.worker_health_port)
        metrics_server = metrics.serve(settings.worker_metrics_host, settings.worker_metrics_port, "worker")
        background.append(asyncio.create_task(_purge_forever(engine, settings)))  # needs no Temporal
        client = await connect_with_backoff(settings, stop)
        if client is None:
            return
        health.client = client
        with ThreadPoolExecutor(max_workers=16) as executor:
            worker = build_worker(client, engine, settings.task_queue, executor, settings)
            health.worker = worker
            background.append(
                asyncio.create_task(
                    reconcile_forever(
                        client,
                        engine,
                        settings.task_queue,
                        settings.reconcile_interval,
                        settings.reconcile_grace,
                    )
                )
            )
            background.append(asyncio.create_task(limit_events.announce_forever(engine, settings, client)))
            background.append(asyncio.create_task(request_resend.announce_forever(engine, settings, client)))
            async with worker:
                log.info("worker polling task queue %s on %s", settings.task_queue, settings.temporal_address)
                await stop.wait()
                log.info("worker stopping")
    finally:
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        if server is not None:
            await server.close()
        if metrics_server is not None:
            await asyncio.to_thread(metrics_server.close)
        engine.dispose()


def temporal_runtime(settings: Settings) -> Runtime | None:
    """A Temporal runtime whose SDK metrics are served for Prometheus on
    ``worker_metrics_host:worker_sdk_metrics_port`` (names ``temporal_*``, counters ``_total``,
    durations in ``_seconds``); None when that port is unset."""
    if settings.worker_sdk_metrics_port is None:
        return None
    address = f"{settings.worker_metrics_host}:{settings.worker_sdk_metrics_port}"
    exporter = PrometheusConfig(
        bind_address=address, counters_total_suffix=True, unit_suffix=True, durations_as_seconds=True
    )
    log.info("Temporal SDK metrics on http://%s/metrics", address)
    return Runtime(telemetry=TelemetryConfig(metrics=exporter))


def run() -> None:
    """``python -m worker``."""
    settings = get_settings()
    configure_logging(settings.log_format_resolved, settings.log_level)
    tracing.setup("mandatum-worker")
    runtime = temporal_runtime(settings)
    if runtime is not None:  # before any client: every client of the process uses it
        Runtime.set_default(runtime, error_if_already_set=False)
    try:
        asyncio.run(main(settings))
    finally:
        tracing.shutdown()
    exit_now(0)  # stopped cleanly: finalization could still abort on the client's native threads
