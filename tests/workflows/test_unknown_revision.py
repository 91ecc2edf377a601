"""A worker never runs a request started on a workflow revision newer than its code
(``workflows.patches.refuse_unknown_revision``): it would record its own older path under that
revision, which the newer code could not replay. Its workflow task fails and Temporal retries it,
so the request waits for an upgraded worker; nothing is sent or written meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from sqlalchemy import Engine
from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle
from tests.support.api_client import Credentials
from tests.support.workflow import (
    activities_with,
    db_request,
    fresh_queue,
    insert_request,
    running_worker,
    start_on_revision,
)
from workflows.patches import CURRENT_REVISION


def task_failures(events: Iterable[HistoryEvent]) -> list[str]:
    return [
        e.workflow_task_failed_event_attributes.failure.message
        for e in events
        if e.HasField("workflow_task_failed_event_attributes")
    ]


async def test_a_request_of_a_newer_revision_waits_for_a_worker_that_knows_it(
    temporal: Client, engine: Engine, settings: Settings, cipher: SecretCipher, org: Credentials
) -> None:
    bundle = insert_request(engine, org.organization_id)
    queue = fresh_queue()
    handle = request_handle(temporal, bundle.request.id)
    async with running_worker(temporal, queue, activities_with(engine, settings)):
        await start_on_revision(temporal, queue, bundle, CURRENT_REVISION + 1)
        deadline = asyncio.get_running_loop().time() + 30
        while not (failures := task_failures((await handle.fetch_history()).events)):
            assert asyncio.get_running_loop().time() < deadline, "the workflow task never failed"
            await asyncio.sleep(0.1)
    try:
        assert failures[0] == (
            f"request {bundle.request.id} was started on workflow revision {CURRENT_REVISION + 1}; "
            f"this worker knows revisions up to {CURRENT_REVISION}: upgrade it"
        )
        described = await handle.describe()
        assert described.raw_description.workflow_execution_info.status == (
            WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
        )
        history = (await handle.fetch_history()).events
        # no command ran: no code sent, no timer, no activity
        assert not any(
            e.HasField("activity_task_scheduled_event_attributes")
            or e.HasField("timer_started_event_attributes")
            or e.HasField("marker_recorded_event_attributes")
            for e in history
        )
        stored = db_request(engine, org.organization_id, bundle.request.id)
        assert stored.request.status == "PENDING" and not any(stored.decisions.values())
    finally:
        await handle.terminate("test over")
