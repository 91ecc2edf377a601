"""The Temporal client every process uses, and starting request workflows idempotently."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from sqlalchemy import Engine
from temporalio.client import Client, WorkflowHandle
from temporalio.common import TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from core.settings import Settings
from store import request_queries as queries
from store import requests as store
from store.db import utcnow
from workflows.credential_request import CredentialRequestWorkflow, search_attributes_for
from workflows.ids import request_workflow_id
from workflows.messages import CredentialRequestInput

log = logging.getLogger("mandatum.temporal")
SERVER_DOWN = (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED)


async def build_client(settings: Settings) -> Client:
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.temporal_namespace,
        data_converter=pydantic_data_converter,
    )


def workflow_input(bundle: store.RequestBundle) -> CredentialRequestInput:
    req = bundle.request
    return CredentialRequestInput(
        request_id=req.id, organization_id=req.organization_id,
        security_level=req.security_level, internal_id=req.internal_id,
        subject_ids=[s.id for _, s in bundle.subjects],
        credential_ids=[c.id for c in bundle.credentials], expires_at=req.expires_at,
    )


async def start_workflow_for(client: Client, task_queue: str, inp: CredentialRequestInput) -> None:
    """Start a request workflow with its id, search attributes and id policy (raises
    WorkflowAlreadyStartedError when it exists or existed)."""
    await client.start_workflow(
        CredentialRequestWorkflow.run, inp, id=request_workflow_id(inp.request_id),
        task_queue=task_queue,
        search_attributes=TypedSearchAttributes(search_attributes_for(inp, "PENDING")),
        # a request id is used once: a finished workflow is never started again
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        static_summary=f"Credential request {inp.request_id}",
    )


async def start_request_workflow(client: Client, task_queue: str, bundle: store.RequestBundle) -> bool:
    """Start the request's workflow; False when it already exists (or existed): never twice."""
    try:
        await start_workflow_for(client, task_queue, workflow_input(bundle))
        return True
    except WorkflowAlreadyStartedError:
        return False


def request_handle(client: Client, request_id: str) -> WorkflowHandle:
    return client.get_workflow_handle(request_workflow_id(request_id))


async def reconcile_once(
    client: Client, engine: Engine, task_queue: str, grace: timedelta
) -> list[str]:
    """Start the workflows of requests stored but never marked started (e.g. the API died)."""
    started: list[str] = []
    pending = await asyncio.to_thread(queries.unstarted_requests, engine, utcnow() - grace)
    for bundle in pending:
        try:
            if await start_request_workflow(client, task_queue, bundle):
                log.warning("reconciler started the workflow of request %s", bundle.request.id)
                started.append(bundle.request.id)
            # marked only once the workflow surely exists (started now, or before the crash)
            await asyncio.to_thread(store.mark_workflow_started, engine, bundle.request.id)
        except RPCError as exc:
            if exc.status in SERVER_DOWN:  # nothing else will work either: end this pass
                raise
            log.exception("reconciler could not start the workflow of request %s", bundle.request.id)
        except Exception:  # one failing request must not hold back the ones queued after it
            log.exception("reconciler could not start the workflow of request %s", bundle.request.id)
    return started


async def reconcile_forever(
    client: Client, engine: Engine, task_queue: str, interval: timedelta, grace: timedelta
) -> None:
    while True:
        try:
            await reconcile_once(client, engine, task_queue, grace)
        except Exception:
            log.exception("reconciler pass failed; trying again")
        await asyncio.sleep(interval.total_seconds())
