"""The Temporal client every process uses, and starting request workflows idempotently.

Temporal may be down when a process starts, or go away later. The API's client is lazy (it
connects on its first call, and again on the next call after a failure), and the worker connects
with ``connect_with_backoff``; ``temporal_unavailable`` tells such a failure from any other, so the
API answers 503 with ``Retry-After`` instead of 500."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine
from temporalio.client import Client, WorkflowHandle
from temporalio.common import TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import GrpcCompression, RPCError, RPCStatusCode

from core.ids import is_object_id
from core.kinds import RequestStatus
from core.settings import Settings
from store import request_queries as queries
from store import requests as store
from store.db import utcnow
from workflows.credential_request import CredentialRequestWorkflow, search_attributes_for
from workflows.ids import request_id_from_workflow_id, request_workflow_id
from workflows.messages import CredentialRequestInput
from workflows.patches import CURRENT_REVISION

log = logging.getLogger("mandatum.temporal")
SERVER_DOWN = (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED)
# request workflows that closed while their search attribute still says PENDING: every way a
# workflow ends by itself (completed, expired, canceled through the API or in Temporal) sets it first,
# so these were terminated, timed out or failed, and their request rows may say PENDING for ever
CLOSED_BUT_PENDING = (
    'WorkflowType="CredentialRequest" AND MandatumStatus="PENDING" AND ExecutionStatus!="Running"'
)
VISIBILITY_LAG = timedelta(minutes=1)  # how far a pass looks back before the previous one began
# what the SDK raises when a (lazy) client cannot open its connection (temporalio bridge client.rs)
CONNECT_FAILED = "Failed client connect"
CONNECT_BACKOFF = (1.0, 30.0)  # first and longest wait between the worker's connection attempts
# The SDK gzips every request and asks for gzipped answers; to a Temporal on the same host or network
# that only spends CPU (in the worker, zlib took 5% of a decision's instructions), so none by default
GRPC_COMPRESSION = {"none": GrpcCompression.NONE, "gzip": GrpcCompression.GZIP}


async def build_client(settings: Settings, lazy: bool = False) -> Client:
    """The client, with the pydantic data converter. ``lazy`` connects on the first call instead
    of now (and retries on each later call until it succeeds): the API starts without Temporal."""
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.temporal_namespace,
        data_converter=pydantic_data_converter,
        lazy=lazy,
        grpc_compression=GRPC_COMPRESSION[settings.temporal_grpc_compression],
    )


def temporal_unavailable(exc: BaseException) -> bool:
    """``exc`` says Temporal could not be reached (not that it refused something)."""
    if isinstance(exc, RPCError):
        return exc.status in SERVER_DOWN
    return isinstance(exc, RuntimeError) and str(exc).startswith(CONNECT_FAILED)


async def connect_with_backoff(
    settings: Settings, stop: asyncio.Event | None = None, backoff: tuple[float, float] = CONNECT_BACKOFF
) -> Client | None:
    """Connect, waiting longer after each failure (doubling up to ``backoff[1]`` seconds) and
    saying so in the log; None when ``stop`` is set first."""
    delay, longest = backoff
    stop = stop or asyncio.Event()
    while not stop.is_set():
        try:
            client = await build_client(settings)
        except RuntimeError as exc:
            if not temporal_unavailable(exc):
                raise
            log.warning(
                "Temporal at %s is unreachable (%s); trying again in %.0f s",
                settings.temporal_address,
                str(exc)[:300],
                delay,
            )
        else:
            log.info("connected to Temporal at %s", settings.temporal_address)
            return client
        try:
            await asyncio.wait_for(stop.wait(), delay)
        except TimeoutError:
            delay = min(delay * 2, longest)
    return None


def workflow_input(bundle: store.RequestBundle) -> CredentialRequestInput:
    req = bundle.request
    return CredentialRequestInput(
        request_id=req.id,
        organization_id=req.organization_id,
        security_level=req.security_level,
        internal_id=req.internal_id,
        subject_ids=[s.id for _, s in bundle.subjects],
        credential_ids=[c.id for c in bundle.credentials],
        expires_at=req.expires_at,
        codes_on_open=[s.id for link, s in bundle.subjects if link.secondary_contact_kind is not None],
        revision=CURRENT_REVISION,
    )


async def start_workflow_for(
    client: Client, task_queue: str, inp: CredentialRequestInput, resent_from: str | None = None
) -> None:
    """Start a request workflow with its id, search attributes and id policy (raises
    WorkflowAlreadyStartedError when it exists or existed); the Temporal UI's summary names the
    request it was sent again from, if any."""
    summary = f"Credential request {inp.request_id}"
    if resent_from is not None:
        summary += f", sent again from {resent_from}"
    await client.start_workflow(
        CredentialRequestWorkflow.run,
        inp,
        id=request_workflow_id(inp.request_id),
        task_queue=task_queue,
        search_attributes=TypedSearchAttributes(search_attributes_for(inp, RequestStatus.PENDING)),
        # a request id is used once: a finished workflow is never started again
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        static_summary=summary,
    )


async def start_request_workflow(client: Client, task_queue: str, bundle: store.RequestBundle) -> bool:
    """Start the request's workflow; False when it already exists (or existed): never twice."""
    try:
        await start_workflow_for(client, task_queue, workflow_input(bundle), bundle.request.resent_from)
        return True
    except WorkflowAlreadyStartedError:
        return False


def request_handle(client: Client, request_id: str) -> WorkflowHandle:
    return client.get_workflow_handle(request_workflow_id(request_id))


async def reconcile_once(client: Client, engine: Engine, task_queue: str, grace: timedelta) -> list[str]:
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


def _visibility_time(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def repair_closed_once(
    client: Client,
    engine: Engine,
    closed_since: datetime | None = None,
) -> list[str]:
    """Close the rows of requests whose workflow closed without recording an outcome (terminated
    in the Temporal UI, timed out, failed): CANCELED, or EXPIRED when past the expiry, with an audit
    record by ``temporal`` (``store.requests.repair_closed_workflow``); returns their ids.

    The cost is one visibility query over the workflows that closed since ``closed_since`` with
    their status still PENDING: after the first pass (every retained one) only those of the last
    interval, and a normal end never matches."""
    query = CLOSED_BUT_PENDING
    if closed_since is not None:
        query += f' AND CloseTime >= "{_visibility_time(closed_since)}"'
    repaired: list[str] = []
    failed: list[str] = []
    async for execution in client.list_workflows(query, page_size=200):
        try:
            request_id = request_id_from_workflow_id(execution.id)
        except ValueError:
            continue
        if not is_object_id(request_id) or execution.close_time is None:
            continue  # not a workflow this service started
        status = execution.status.name if execution.status is not None else "CLOSED"
        try:
            outcome = await asyncio.to_thread(
                store.repair_closed_workflow, engine, request_id, execution.close_time, status
            )
        except Exception:  # one failing request must not hold back the others
            log.exception("reconciler could not repair request %s", request_id)
            failed.append(request_id)
            continue
        if outcome is not None:
            log.warning(
                "request %s: its workflow ended %s without recording an outcome; recorded %s",
                request_id,
                status,
                outcome,
            )
            repaired.append(request_id)
    if failed:  # so the next pass looks at them again
        raise RuntimeError(f"requests not repaired: {', '.join(failed)}")
    return repaired


async def reconcile_forever(
    client: Client, engine: Engine, task_queue: str, interval: timedelta, grace: timedelta
) -> None:
    closed_since: datetime | None = None  # the first pass looks at every retained closed workflow
    while True:
        began = utcnow()
        try:
            await reconcile_once(client, engine, task_queue, grace)
            await repair_closed_once(client, engine, closed_since)
            closed_since = began - VISIBILITY_LAG
        except Exception:
            log.exception("reconciler pass failed; trying again")
        await asyncio.sleep(interval.total_seconds())
