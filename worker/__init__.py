"""The worker: settings -> Temporal client -> Worker(workflows, activity instances).

It also runs the reconciler that starts workflows for stored requests whose start was lost, and
periodically purges expired replay and idempotency entries. It starts without Temporal: it
connects with a growing wait between attempts (orchestration.temporal.connect_with_backoff), logging each.
With ``MANDATUM_WORKER_HEALTH_PORT`` set it serves ``/healthz`` and ``/readyz`` there (worker.health)
from its start, so an orchestrator sees it alive while it waits for Temporal, and ready once it polls.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import Engine
from temporalio.client import Client
from temporalio.worker import Worker

from activities.journey import JourneyActivities
from activities.mandates import MandateActivities
from activities.requests import RequestActivities
from activities.webhooks import WebhookActivities
from core.otp import JourneySecrets
from core.secretbox import SecretCipher
from core.settings import Settings, get_settings
from orchestration.temporal import connect_with_backoff, reconcile_forever
from store import audit
from store.db import keep_files_private, make_engine
from store.guards import purge_expired
from worker.health import HealthServer, WorkerHealth, serve_health
from workflows.credential_request import CredentialRequestWorkflow
from workflows.webhook_delivery import WebhookDeliveryWorkflow

log = logging.getLogger("mandatum.worker")
WORKFLOWS = [CredentialRequestWorkflow, WebhookDeliveryWorkflow]


def worker_activities(engine: Engine, settings: Settings) -> list[Callable[..., Any]]:
    """Every activity the worker runs, bound to its dependencies."""
    cipher = SecretCipher(settings.master_key_bytes())
    return [
        *RequestActivities(engine).all(),
        *MandateActivities(engine, cipher, settings).all(),
        *WebhookActivities(engine, cipher, settings).all(),
        *JourneyActivities(engine, settings, JourneySecrets(settings.master_key_bytes())).all(),
    ]


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
    )


async def _purge_forever(engine: Engine, settings: Settings) -> None:
    while True:
        try:
            await asyncio.to_thread(purge_expired, engine, settings.idempotency_window)
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
    background: list[asyncio.Task[None]] = []
    try:
        server = await serve_health(health, settings.worker_health_host, settings.worker_health_port)
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
        engine.dispose()


def run() -> None:
    """``python -m worker``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    asyncio.run(main())
