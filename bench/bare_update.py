"""The webhook benchmark's baseline: a Temporal update whose handler returns at once.

``EchoWorkflow`` runs on a worker inside the benchmark's process, on a task queue of its own, on
the stack's Temporal server. One workflow per update, all started before any clock runs, so each
update, like a subject's decision, goes to a workflow of its own that is already running. The
round trip of ``execute_update`` is then the client's call, the server, a workflow task on the
worker (the same sandboxed runner the service's worker uses) and the answer back: what every
decision costs at the least. Only temporalio is imported here (the sandbox imports this module).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

from temporalio import workflow
from temporalio.client import Client

WORKFLOW_TYPE = "BenchEcho"
UPDATE = "echo"


@workflow.defn(name=WORKFLOW_TYPE)
class EchoWorkflow:
    def __init__(self) -> None:
        self._finished = False

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self._finished)

    @workflow.update(name=UPDATE)
    def echo(self, value: int) -> int:
        return value

    @workflow.signal(name="finish")
    def finish(self) -> None:
        self._finished = True


async def start_echoes(client: Client, task_queue: str, n: int, concurrency: int = 8) -> list[str]:
    """``n`` running echo workflows (their ids), each past its first workflow task."""
    ids = [f"bench-echo-{uuid.uuid4().hex}" for _ in range(n)]
    gate = asyncio.Semaphore(concurrency)

    async def start(workflow_id: str) -> None:
        async with gate:
            handle = await client.start_workflow(WORKFLOW_TYPE, id=workflow_id, task_queue=task_queue)
            await handle.execute_update(UPDATE, 0, result_type=int)  # the worker has it now

    await asyncio.gather(*(start(i) for i in ids))
    return ids


def echo_updates(client: Client, workflow_ids: list[str]) -> Callable[[int], Awaitable[bool]]:
    """The i-th operation: one update round trip to the i-th workflow."""

    async def update(i: int) -> bool:
        handle = client.get_workflow_handle(workflow_ids[i])
        return await handle.execute_update(UPDATE, i, result_type=int) == i

    return update
