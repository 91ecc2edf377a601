"""Running a request workflow's updates (cancel, resend, the journey's steps, identity results):
one place that turns a refused update into a typed error."""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from core.kinds import UpdateRefusal
from orchestration.temporal import request_handle, temporal_unavailable

T = TypeVar("T")
UPDATE_TIMEOUT_SECONDS = 15.0


class Refused(Exception):
    """The workflow refused the update: ``kind`` is the refusal its ApplicationError type names
    (``not_active``, ``too_soon``, ``otp_required``...), ``details`` its details; ``finished``
    when there was no running workflow to ask (it has ended)."""

    def __init__(
        self, kind: UpdateRefusal, message: str, details: tuple[Any, ...] = (), finished: bool = False
    ) -> None:
        super().__init__(message)
        self.kind, self.message, self.details, self.finished = kind, message, details, finished


class Unavailable(Exception):
    """No worker answered in time (the update may still be applied), or Temporal is unreachable."""


async def run_update(temporal: Client, request_id: str, name: str, arg: Any, result_type: type[T]) -> T:
    """Execute the update and return its result; ``Refused`` or ``Unavailable`` otherwise (no worker
    answered within ``UPDATE_TIMEOUT_SECONDS``: it may still be applied)."""
    try:
        return await asyncio.wait_for(
            request_handle(temporal, request_id).execute_update(name, arg, result_type=result_type),
            timeout=UPDATE_TIMEOUT_SECONDS,
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError):
            raise Refused(UpdateRefusal.of(cause.type), cause.message, tuple(cause.details)) from exc
        raise Refused(UpdateRefusal.REFUSED, "The request refused this step") from exc
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as exc:
        raise Unavailable() from exc
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:  # the workflow has finished
            raise Refused(UpdateRefusal.NOT_ACTIVE, "The request is no longer open", finished=True) from exc
        if temporal_unavailable(exc):
            raise Unavailable() from exc
        raise
    except RuntimeError as exc:  # a lazy client that cannot connect
        if temporal_unavailable(exc):
            raise Unavailable() from exc
        raise
