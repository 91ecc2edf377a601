"""The scaled shape on this machine (issue 15, item 7): two API processes and two workers on one
PostgreSQL database and one Temporal server, as docker-compose.yml runs them, losing one of each.

Sixteen requests of two organizations go through both APIs: each created through one API (with an
Idempotency-Key), each subject's code entered through one and the decision posted through the
other (code and link read from the development outbox), some accepted and some rejected; each
mandate is presented and its VP verified twice at once, through different APIs. The first six run
to their end while everything lives. Then, with five more under way, worker-1 and api-b are killed
(SIGKILL) as soon as the third of their decisions is on its way; a call that loses its connection
is sent again to the surviving API, as a client behind a load balancer would, and the last five
requests are created only after the deaths. Then every invariant, from the database and Temporal:
each request has one workflow that agrees with its row, one mandate per acceptance and none for a
rejection, every webhook event delivered and received, each organization's audit chain intact,
each VP allowed exactly once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy import Engine
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from core.otp import JourneySecrets
from core.secretbox import SecretCipher
from core.settings import Settings
from tests.conftest import new_org
from tests.scale.conftest import MASTER_KEY
from tests.scale.invariants import (
    Flow,
    assert_audit_chains_verify,
    assert_each_vp_allowed_once,
    assert_every_event_delivered,
    assert_one_mandate_per_acceptance,
    assert_requests_agree_with_workflows,
)
from tests.support.api_client import Credentials, policy_request
from tests.support.journey_messages import LINK_RE, SESSION_RE, code_in, journey_secrets, message_for
from tests.support.presentations import GOOD, path_of
from tests.support.scaled_stack import DEADLINE, DeadWorkerSweeper, Router, ScaledStack
from tests.support.webhook_receiver import receiving
from tests.support.webhooks import configure
from tests.support.workflow import subject_uuid

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


def plan(orgs: list[Credentials]) -> list[Flow]:
    return [
        Flow(
            i,
            orgs[(i // 2) % 2],
            [f"scale-{i}-{j}@example.com" for j in range(2 if i % 3 == 0 else 1)],
            rejected=i % 4 == 3,
        )
        for i in range(REQUESTS)
    ]


@dataclass
class Scene:
    stack: ScaledStack
    router: Router
    outbox: Path
    secrets: JourneySecrets
    kill_at: asyncio.Event = field(default_factory=asyncio.Event)
    killed: asyncio.Event = field(default_factory=asyncio.Event)
    decisions_sent: int = 0  # of the second wave
    decisions_answered: int = 0

    def deciding(self, flow: Flow) -> None:
        if flow.index >= FIRST_WAVE:
            self.decisions_sent += 1
            if self.decisions_sent == KILL_AT_DECISION:
                self.kill_at.set()

    def decided(self, flow: Flow) -> None:
        if flow.index >= FIRST_WAVE:
            self.decisions_answered += 1


async def decide(scene: Scene, flow: Flow, j: int, did: str) -> None:
    """Subject ``j`` enters their code through one API and decides through the other."""
    router, k = scene.router, flow.index + j
    subject_id, request_id = subject_uuid(did), flow.request["id"]
    entry = await message_for(
        request_id, subject_id, outbox=scene.outbox, secrets=scene.secrets, wait=DEADLINE
    )
    [path] = LINK_RE.findall(entry.text)
    page = await router.send(k, lambda http: http.post(f"{path}/otp", data={"code": code_in(entry.text)}))
    assert page.status_code == 200, page.text
    [session] = SESSION_RE.findall(page.text)
    choice = "reject" if flow.rejected and j == len(flow.contacts) - 1 else "accept"
    form = {"session": session, f"decision-{flow.request['credentials'][0]['id']}": choice}
    scene.deciding(flow)
    done, again = await router.send_tracked(k + 1, lambda http: http.post(f"{path}/decide", data=form))
    scene.decided(flow)
    # sent again after a lost answer, the decision may find its request closing on the first
    # attempt: "no longer open" (410), or this subject's decision already recorded by it: the
    # "done" step without names (nothing was decided by this post); the invariants find each
    # decision recorded as it was made
    if again and done.status_code == 410:
        return
    if again and done.status_code == 200 and 'id="done-heading"' in done.text:
        return
    assert done.status_code == 200 and "Rent payments" in done.text, done.text


async def settled(scene: Scene, flow: Flow) -> dict[str, Any]:
    """The request's credential once decided (a decision retried after a lost answer may have
    returned before the first attempt's issuance ended)."""
    router, path = scene.router, f"/request/{flow.request['id']}"
    for _ in range(int(DEADLINE / 0.1)):
        got = await router.send(flow.index, router.signed(flow.org, "GET", path))
        assert got.status_code == 200, got.text
        [credential] = got.json()["credentials"]
        if credential["status"] not in ("DRAFT", "PENDING"):
            return dict(credential)
        await asyncio.sleep(0.1)
    raise AssertionError(f"request {flow.request['id']} was never decided")


async def run(scene: Scene, flow: Flow) -> None:
    router, k = scene.router, flow.index
    body = policy_request(contacts=flow.contacts, internalId=f"scale-{k}")
    created = await router.send(
        k, router.signed(flow.org, "POST", "/request", body, {"Idempotency-Key": flow.key})
    )
    assert created.status_code == 201, created.text
    flow.request = created.json()["data"]
    await asyncio.gather(*(decide(scene, flow, j, s["id"]) for j, s in enumerate(flow.request["subjects"])))
    credential = await settled(scene, flow)
    assert credential["status"] == ("REJECTED" if flow.rejected else "ACTIVE"), credential
    if flow.rejected:
        return
    flow.mandate_id = credential["id"]
    presentation = f"/credential/{path_of(credential['id'])}/presentation"
    presented = await router.send(k + 1, router.signed(flow.org, "POST", presentation))
    assert presented.status_code == 200, presented.text
    flow.vp = presented.json()["data"]["presentation"]
    check = {"presentation": flow.vp, "executionParams": GOOD}
    flow.verdicts = list(
        await asyncio.gather(
            *(
                router.send_tracked(k + n, router.signed(flow.org, "POST", "/credential/verify", check))
                for n in (0, 1)
            )
        )
    )


async def kill_one_of_each(scene: Scene, client: Client, finished: asyncio.Event) -> tuple[int, int]:
    """At the signal: worker-1 and api-b die; then sweep for worker-1 until the drive ends."""
    await scene.kill_at.wait()
    assert scene.decisions_answered < KILL_AT_DECISION  # decisions are under way as they die
    worker, api = scene.stack.processes["worker-1"], scene.stack.processes["api-b"]
    worker_code, api_code = await asyncio.gather(worker.kill(), api.kill())
    scene.router.down.add(1)  # the load balancer stops sending to api-b
    scene.killed.set()
    await DeadWorkerSweeper(client, scene.stack.settings.task_queue, worker.pid).run(finished)
    return worker_code, api_code


async def drive(scene: Scene, client: Client, flows: list[Flow]) -> tuple[int, int]:
    async with asyncio.TaskGroup() as everyone_alive:
        for flow in flows[:FIRST_WAVE]:
            everyone_alive.create_task(run(scene, flow))
    finished = asyncio.Event()

    async def second_wave() -> None:
        async def after_the_deaths(flow: Flow) -> None:
            await scene.killed.wait()
            await run(scene, flow)

        async with asyncio.TaskGroup() as wave:
            for flow in flows[FIRST_WAVE : FIRST_WAVE + IN_FLIGHT]:
                wave.create_task(run(scene, flow))
            for flow in flows[FIRST_WAVE + IN_FLIGHT :]:
                wave.create_task(after_the_deaths(flow))
        finished.set()

    async with asyncio.TaskGroup() as group:
        group.create_task(second_wave())
        killing = group.create_task(kill_one_of_each(scene, client, finished))
    return killing.result()


async def test_two_apis_and_two_workers_lose_one_of_each_mid_run(
    scaled: ScaledStack, pg_engine: Engine, dev_env: WorkflowEnvironment
) -> None:
    settings, client = scaled.settings, dev_env.client
    cipher = SecretCipher(settings.master_key_bytes())
    orgs = [new_org(pg_engine, cipher, settings), new_org(pg_engine, cipher, settings)]
    flows = plan(orgs)
    router = Router([scaled.api_url("api-a"), scaled.api_url("api-b")])
    scene = Scene(scaled, router, settings.var_dir / "outbox", journey_secrets(MASTER_KEY))
    with receiving(lambda n: 200) as receiver:
        for org in orgs:
            configure(pg_engine, cipher, org.organization_id, receiver)
        try:
            async with asyncio.timeout(DRIVE_SECONDS):
                codes = await drive(scene, client, flows)
        finally:
            await router.close()
        assert codes == (-9, -9)  # both died by the signal, with work under way
        assert await scaled.ready("api-a") and await scaled.ready("worker-2")  # the survivors serve

        await assert_requests_agree_with_workflows(pg_engine, client, settings.task_queue, flows)
        assert_one_mandate_per_acceptance(pg_engine, settings, flows)
        await assert_every_event_delivered(pg_engine, receiver, flows)
    assert_audit_chains_verify(pg_engine, settings, cipher, orgs)
    assert_each_vp_allowed_once(pg_engine, settings, flows)
