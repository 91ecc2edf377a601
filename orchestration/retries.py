"""Starting support's retry workflows (issue 32) with their ids, summaries and id policies."""

from __future__ import annotations

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from workflows.ids import credential_retry_workflow_id
from workflows.retry_messages import CREDENTIAL_RETRY_WORKFLOW_TYPE, RetryIssuanceInput, RetryIssuanceResult


def retry_summary(credential_id: str, actor: str, reason: str) -> str:
    """What the Temporal UI shows of the retry (the reason is one line of printable text)."""
    return f"retry issuance of {credential_id} by {actor}: {reason}"


async def issuance_retry(
    client: Client, task_queue: str, inp: RetryIssuanceInput, may_start: bool
) -> WorkflowHandle[None, RetryIssuanceResult] | None:
    """The credential's retry workflow: started when ``may_start`` (the credential is FAILED) and
    none runs; the running one joined (a second request while one runs gets its answer); the one
    that succeeded when it did (a finished success is never run again: the reuse policy allows a
    new run only after a failed one). None when there is none and none may start."""
    workflow_id = credential_retry_workflow_id(inp.credential_id)
    if may_start:
        try:
            return await client.start_workflow(
                CREDENTIAL_RETRY_WORKFLOW_TYPE,
                inp,
                id=workflow_id,
                task_queue=task_queue,
                result_type=RetryIssuanceResult,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                static_summary=retry_summary(inp.credential_id, inp.actor, inp.reason),
            )
        except WorkflowAlreadyStartedError:  # a retry succeeded before: its answer
            pass
    handle = client.get_workflow_handle(workflow_id, result_type=RetryIssuanceResult)
    try:
        await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    return handle
