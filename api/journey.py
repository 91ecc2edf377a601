"""Running the journey's workflow updates from the API (the pages and ``PATCH /request/resend``):
one place that turns a refused update into a typed error."""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from core.temporal import request_handle, temporal_unavailable

T = TypeVar("T")
UPDATE_TIMEOUT_SECONDS = 15.0


class Refused(Exception):
    """The workflow refused the update: ``kind`` is the ApplicationError type (``not_active``,
    ``too_soon``, ``otp_required``...), ``details`` its details."""

    def __init__(self, kind: str, message: str, details: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.kind, self.message, self.details = kind, message, details


class Unavailable(Exception):
    """No worker answered in time (the update may still be applied), or Temporal is unreachable."""


async def run_update(temporal: Client, request_id: str, name: str, arg: Any, result_type: type[T]) -> T:
    try:
        return await asyncio.wait_for(
            request_handle(temporal, request_id).execute_update(name, arg, result_type=result_type),
            timeout=UPDATE_TIMEOUT_SECONDS,
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError):
            raise Refused(cause.type or "refused", cause.message, tuple(cause.details)) from exc
        raise Refused("refused", "The request refused this step") from exc
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as exc:
        raise Unavailable() from exc
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:  # the workflow has finished
            raise Refused("not_active", "The request is no longer open") from exc
        if temporal_unavailable(exc):
            raise Unavailable() from exc
        raise
    except RuntimeError as exc:  # a lazy client that cannot connect
        if temporal_unavailable(exc):
            raise Unavailable() from exc
        raise
