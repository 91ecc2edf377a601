"""The scaled shape on this machine (issue 15, item 7): two API processes and two workers on one
PostgreSQL database and one Temporal server, as docker-compose.yml runs them, losing one of each.

Sixteen requests of two organizations go through both APIs (the drive: ``tests.scale.drive``):
each created through one API (with an Idempotency-Key), each subject's code entered through one
and the decision posted through the other (code and link read from the development outbox), some
accepted and some rejected; each mandate is presented and its VP verified twice at once, through
different APIs. The first six run to their end while everything lives. Then, with five more under
way, worker-1 and api-b are killed (SIGKILL) as soon as the third of their decisions is on its way;
a call that loses its connection is sent again to the surviving API, as a client behind a load
balancer would, and the last five requests are created only after the deaths. Then every
invariant, from the database and Temporal: each request has one workflow that agrees with its row,
one mandate per acceptance and none for a rejection, every webhook event delivered and received,
each organization's audit chain intact, each VP allowed exactly once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from sqlalchemy import Engine
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from core.secretbox import SecretCipher
from core.settings import Settings
from tests.conftest import new_org
from tests.scale.conftest import MASTER_KEY
from tests.scale.drive import Scene, drive, plan
from tests.scale.invariants import (
    assert_audit_chains_verify,
    assert_each_vp_allowed_once,
    assert_every_event_delivered,
    assert_one_mandate_per_acceptance,
    assert_requests_agree_with_workflows,
)
from tests.support.journey_messages import journey_secrets
from tests.support.scaled_stack import DeadWorkerSweeper, Router, ScaledStack
from tests.support.webhook_receiver import receiving
from tests.support.webhooks import configure

pytestmark = pytest.mark.e2e

REQUESTS, FIRST_WAVE, IN_FLIGHT = 16, 6, 5  # 6 before the deaths, 5 during, 5 created after
KILL_AT_DECISION = 3  # of the second wave's decisions sent
DRIVE_SECONDS = 150  # an upper bound only: the drive takes seconds


@pytest_asyncio.fixture
async def scaled(
    stack_settings: Settings, pg_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ScaledStack]:
    # the reconciler (which starts a workflow an API died before starting) looks often: the
    # processes inherit this environment (cli.stack.child_env)
    monkeypatch.setenv("MANDATUM_RECONCILE_INTERVAL", "PT1S")
    monkeypatch.setenv("MANDATUM_RECONCILE_GRACE", "PT1S")
    stack = ScaledStack(stack_settings)
    try:
        async with asyncio.TaskGroup() as starting:  # all at once; one failing stops the others
            for api in ("api-a", "api-b"):
                starting.create_task(stack.start_api(api))
            for worker in ("worker-1", "worker-2"):
                starting.create_task(stack.start_worker(worker))
        yield stack
    finally:
        await stack.stop()


async def kill_one_of_each(
    scene: Scene, stack: ScaledStack, client: Client, finished: asyncio.Event
) -> tuple[int, int]:
    """At the signal: worker-1 and api-b die; then sweep for worker-1 until the drive ends."""
    await scene.strike_at.wait()
    assert scene.decisions_answered < KILL_AT_DECISION  # decisions are under way as they die
    worker, api = stack.processes["worker-1"], stack.processes["api-b"]
    worker_code, api_code = await asyncio.gather(worker.kill(), api.kill())
    scene.router.down.add(1)  # the load balancer stops sending to api-b
    scene.struck.set()
    await DeadWorkerSweeper(client, stack.settings.task_queue, worker.pid).run(finished)
    return worker_code, api_code


async def test_two_apis_and_two_workers_lose_one_of_each_mid_run(
    scaled: ScaledStack, pg_engine: Engine, dev_env: WorkflowEnvironment
) -> None:
    settings, client = scaled.settings, dev_env.client
    cipher = SecretCipher(settings.master_key_bytes())
    orgs = [new_org(pg_engine, cipher, settings), new_org(pg_engine, cipher, settings)]
    flows = plan(orgs, REQUESTS)
    router = Router([scaled.api_url("api-a"), scaled.api_url("api-b")])
    secrets = journey_secrets(MASTER_KEY)
    scene = Scene(router, settings.var_dir / "outbox", secrets, FIRST_WAVE, KILL_AT_DECISION)
    with receiving(lambda n: 200) as receiver:
        for org in orgs:
            configure(pg_engine, cipher, org.organization_id, receiver)
        try:
            async with asyncio.timeout(DRIVE_SECONDS):
                codes = await drive(
                    scene, flows, IN_FLIGHT, lambda done: kill_one_of_each(scene, scaled, client, done)
                )
        finally:
            await router.close()
        assert codes == (-9, -9)  # both died by the signal, with work under way
        assert await scaled.ready("api-a") and await scaled.ready("worker-2")  # the survivors serve

        await assert_requests_agree_with_workflows(pg_engine, client, settings.task_queue, flows)
        assert_one_mandate_per_acceptance(pg_engine, settings, flows)
        await assert_every_event_delivered(pg_engine, receiver, flows)
    assert_audit_chains_verify(pg_engine, settings, cipher, orgs)
    assert_each_vp_allowed_once(pg_engine, settings, flows)
