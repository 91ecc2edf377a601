"""The scaled shape across hosts (issue 35, item 4): two API and worker pairs, each on a host of its
own (a network namespace, joined to the database host by a veth link), one PostgreSQL database
and one Temporal server on the database host (the root namespace); one host is cut off mid-run and
comes back.

Eight requests of two organizations go through both APIs as in ``test_scaled_shape`` (the drive:
``tests.scale.drive``), over the links. The first two run to their end while both hosts are on the
network. Then, with three more under way, host b's link goes down as soon as the second of their
decisions is on its way: a call in flight to api-b loses its connection and is sent again to api-a,
as a client behind a load balancer would, and the last three requests are created only after the
cut. Host b's processes live on, cut off, holding whatever they had in hand (a workflow task, an
activity, a transaction and its row locks). The link comes back once api-a has answered calls
sent while b was away, or once api-a cannot (b holds a lock it waits for); then api-b and worker-b
serve again and the load balancer sends to api-b again. At the end the invariants of the scaled
shape (``tests.scale.invariants``) hold, and host b's processes, never restarted, serve a request
and poll their queue. The hosts are made and removed by the test (as root); without namespaces
(not root, no ``ip``, ``ip netns add`` refused) or PostgreSQL it skips, saying why.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import httpx
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
    Flow,
    assert_audit_chains_verify,
    assert_each_vp_allowed_once,
    assert_every_event_delivered,
    assert_one_mandate_per_acceptance,
    assert_requests_agree_with_workflows,
)
from tests.support.journey_messages import journey_secrets
from tests.support.netns import NetnsUnavailable
from tests.support.scaled_hosts import (
    HostedStack,
    LinkedRouter,
    Network,
    blocks_others,
    polls_since,
    until,
)
from tests.support.webhook_receiver import receiving
from tests.support.webhooks import configure

pytestmark = pytest.mark.e2e

REQUESTS, FIRST_WAVE, IN_FLIGHT = 8, 2, 3  # 2 before the cut, 3 under way, 3 created after it
CUT_AT_DECISION = 2  # of the second wave's decisions sent
SURVIVOR_ANSWERS = 12  # api-a's answers while host b is cut off, before it comes back
DRIVE_SECONDS = 120  # an upper bound only: the drive takes seconds


@pytest.fixture
def network(stack_settings: Settings) -> Iterator[Network]:
    """Hosts a and b, removed afterwards (nothing of them left: ``ip netns list``, ``ip link``)."""
    try:
        network = Network.make(["a", "b"], stack_settings)
    except NetnsUnavailable as exc:
        pytest.skip(f"the scaled shape across hosts needs network namespaces; none can be made here: {exc}")
    try:
        yield network
    finally:
        network.remove()
    assert network.hosts.leftovers() == []


@pytest_asyncio.fixture
async def scaled(
    network: Network, stack_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[HostedStack]:
    # the reconciler (which starts a workflow an API died before starting) looks often: the
    # processes inherit this environment (cli.stack.child_env)
    monkeypatch.setenv("MANDATUM_RECONCILE_INTERVAL", "PT1S")
    monkeypatch.setenv("MANDATUM_RECONCILE_GRACE", "PT1S")
    stack = HostedStack(stack_settings, network)
    try:
        async with asyncio.TaskGroup() as starting:  # all at once; one failing stops the others
            for host in ("a", "b"):
                starting.create_task(stack.start_on(host, f"api-{host}", "api"))
                starting.create_task(stack.start_on(host, f"worker-{host}", "worker"))
        yield stack
    finally:
        network.hosts.restore("b")  # a test that failed with b cut off: its processes stop cleanly
        await stack.stop()


async def cut_and_restore(scene: Scene, stack: HostedStack, engine: Engine) -> float:
    """At the signal: host b's link down; back once api-a served (or cannot: b holds its lock);
    then, once api-b and worker-b are ready again, the load balancer sends to api-b again. When the
    link came back (epoch seconds)."""
    router, hosts = scene.router, stack.network.hosts
    assert isinstance(router, LinkedRouter)
    await scene.strike_at.wait()
    assert scene.decisions_answered < CUT_AT_DECISION  # decisions are under way as b goes
    hosts.cut("b")
    router.cut(1)
    at_cut = router.links[0].answered
    scene.struck.set()
    b = stack.network.application_name("b")

    async def served_or_blocked() -> bool:
        # b, cut off in the middle of a transaction, may hold a row lock api-a's calls wait for
        return router.links[0].answered - at_cut >= SURVIVOR_ANSWERS or blocks_others(engine, b)

    await until("api-a served while b was cut off", served_or_blocked)
    hosts.restore("b")
    restored_at = time.time()
    await until("api-b and worker-b ready again", lambda: both_ready(stack, "api-b", "worker-b"))
    router.restore(1)
    return restored_at


async def both_ready(stack: HostedStack, *names: str) -> bool:
    return all([await stack.ready(name) for name in names])


async def assert_b_serves_again(
    stack: HostedStack, router: LinkedRouter, client: Client, flow: Flow, since: float
) -> None:
    """Host b's processes were never restarted: api-b answers a call (sent to it, not through the
    load balancer), worker-b polls its queue since the link came back (``since``)."""
    api, worker = stack.processes["api-b"], stack.processes["worker-b"]
    assert api.child.running and worker.child.running
    assert await both_ready(stack, "api-b", "worker-b")
    got = await router.signed(flow.org, "GET", f"/request/{flow.request['id']}")(router.clients[1])
    assert got.status_code == 200, got.text
    queue = stack.settings.task_queue
    await until("worker-b polls again", lambda: polls_since(client, queue, worker.pid, since))


async def test_one_of_two_hosts_cut_off_mid_run_and_back(
    scaled: HostedStack, pg_engine: Engine, dev_env: WorkflowEnvironment
) -> None:
    settings, client = scaled.settings, dev_env.client
    cipher = SecretCipher(settings.master_key_bytes())
    orgs = [new_org(pg_engine, cipher, settings), new_org(pg_engine, cipher, settings)]
    flows = plan(orgs, REQUESTS)
    router = LinkedRouter([scaled.api_url("api-a"), scaled.api_url("api-b")])
    secrets = journey_secrets(MASTER_KEY)
    scene = Scene(router, settings.var_dir / "outbox", secrets, FIRST_WAVE, CUT_AT_DECISION)
    with receiving(lambda n: 200) as receiver:
        scaled.network.reach(httpx.URL(receiver.url).port or 80)  # on each host's 127.0.0.1
        for org in orgs:
            configure(pg_engine, cipher, org.organization_id, receiver)
        try:
            async with asyncio.timeout(DRIVE_SECONDS):
                restored_at = await drive(
                    scene, flows, IN_FLIGHT, lambda _: cut_and_restore(scene, scaled, pg_engine)
                )
            await assert_b_serves_again(scaled, router, client, flows[-1], restored_at)
        finally:
            await router.close()

        await assert_requests_agree_with_workflows(pg_engine, client, settings.task_queue, flows)
        assert_one_mandate_per_acceptance(pg_engine, settings, flows)
        await assert_every_event_delivered(pg_engine, receiver, flows)
    assert_audit_chains_verify(pg_engine, settings, cipher, orgs)
    assert_each_vp_allowed_once(pg_engine, settings, flows)
