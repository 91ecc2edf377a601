"""How the scaled-shape tests drive their requests through two APIs, whatever blow the shape takes
mid-run (processes killed, a host cut off): each request created through one API (with an
Idempotency-Key), each subject's code entered through one and the decision posted through the
other (code and link read from the development outbox), some accepted and some rejected; each
mandate presented and its VP verified twice at once, through different APIs.

The first wave runs to its end while everything lives; then, with the second wave under way, the
blow is due as soon as the ``strike_at_decision``-th of the second wave's decisions is on its way,
and the last requests are created only once it struck.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from core.otp import JourneySecrets
from tests.scale.invariants import Flow
from tests.support.api_client import Credentials, policy_request
from tests.support.journey_messages import LINK_RE, SESSION_RE, code_in, message_for
from tests.support.presentations import GOOD, path_of
from tests.support.scaled_stack import DEADLINE, Router
from tests.support.workflow import subject_uuid

T = TypeVar("T")


def plan(orgs: list[Credentials], requests: int) -> list[Flow]:
    """Two requests of one organization, then two of the other, ...; every third has two subjects,
    every fourth is rejected by its last subject."""
    return [
        Flow(
            i,
            orgs[(i // 2) % 2],
            [f"scale-{i}-{j}@example.com" for j in range(2 if i % 3 == 0 else 1)],
            rejected=i % 4 == 3,
        )
        for i in range(requests)
    ]


@dataclass
class Scene:
    router: Router
    outbox: Path
    secrets: JourneySecrets
    first_wave: int  # the requests before this index run to their end before the second wave
    strike_at_decision: int  # of the second wave's decisions sent
    strike_at: asyncio.Event = field(default_factory=asyncio.Event)  # the blow is due
    struck: asyncio.Event = field(default_factory=asyncio.Event)  # the blow has landed
    decisions_sent: int = 0  # of the second wave
    decisions_answered: int = 0

    def deciding(self, flow: Flow) -> None:
        if flow.index >= self.first_wave:
            self.decisions_sent += 1
            if self.decisions_sent == self.strike_at_decision:
                self.strike_at.set()

    def decided(self, flow: Flow) -> None:
        if flow.index >= self.first_wave:
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


async def drive(
    scene: Scene, flows: list[Flow], in_flight: int, strike: Callable[[asyncio.Event], Coroutine[Any, Any, T]]
) -> T:
    """The first wave with everything alive; then ``in_flight`` requests under way as ``strike``
    (which waits for ``scene.strike_at``, deals the blow and sets ``scene.struck``) runs, and the
    rest created once it struck. ``strike`` is given an event set when every request ended; what
    it returns is returned."""
    async with asyncio.TaskGroup() as everyone_alive:
        for flow in flows[: scene.first_wave]:
            everyone_alive.create_task(run(scene, flow))
    finished = asyncio.Event()

    async def second_wave() -> None:
        async def after_the_blow(flow: Flow) -> None:
            await scene.struck.wait()
            await run(scene, flow)

        async with asyncio.TaskGroup() as wave:
            for flow in flows[scene.first_wave : scene.first_wave + in_flight]:
                wave.create_task(run(scene, flow))
            for flow in flows[scene.first_wave + in_flight :]:
                wave.create_task(after_the_blow(flow))
        finished.set()

    async with asyncio.TaskGroup() as group:
        group.create_task(second_wave())
        striking = group.create_task(strike(finished))
    return striking.result()
