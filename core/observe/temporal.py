"""Carrying the request id through Temporal, in a header ``mandatum-request-id`` (the way
``temporalio.contrib.opentelemetry`` carries a trace).

- ``RequestIdClientInterceptor`` (on the API's client): a workflow start, an update and a signal made
  while handling an HTTP request carry its id.
- ``RequestIdWorkerInterceptor`` (on the worker): a workflow takes the id of its start, and an
  update or signal handler the id of its own call, for what it starts (activities, child workflows);
  an activity runs with the id of whoever scheduled it, so its log lines carry it.

Replay-safe: the id lives in a context variable of the workflow's task, and headers are not part of
what a replay compares with its history (an old history without the header replays unchanged).
Only an id ``core.observe.context.accepted`` takes is ever read from a header.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from temporalio import client, converter, workflow
from temporalio import worker as temporal_worker
from temporalio.api.common.v1 import Payload

from core.observe.context import accepted, current_request_id, request_id_bound, set_request_id

HEADER = "mandatum-request-id"
_converter = converter.PayloadConverter.default


def with_request_id(headers: Mapping[str, Payload], value: str | None = None) -> Mapping[str, Payload]:
    """``headers`` plus the current (or given) request id, when there is one."""
    found = accepted(value if value is not None else current_request_id())
    if found is None:
        return headers
    return {**headers, HEADER: _converter.to_payloads([found])[0]}


def request_id_of(headers: Mapping[str, Payload]) -> str | None:
    payload = headers.get(HEADER)
    if payload is None:
        return None
    try:
        return accepted(_converter.from_payloads([payload])[0])
    except Exception:  # a header someone else wrote: ignored, never fatal
        return None


class RequestIdClientInterceptor(client.Interceptor):
    def intercept_client(self, next: client.OutboundInterceptor) -> client.OutboundInterceptor:
        return _ClientOutbound(next)


class _ClientOutbound(client.OutboundInterceptor):
    async def start_workflow(self, input: client.StartWorkflowInput) -> client.WorkflowHandle[Any, Any]:
        input.headers = with_request_id(input.headers)
        return await super().start_workflow(input)

    async def start_workflow_update(
        self, input: client.StartWorkflowUpdateInput
    ) -> client.WorkflowUpdateHandle[Any]:
        input.headers = with_request_id(input.headers)
        return await super().start_workflow_update(input)

    async def signal_workflow(self, input: client.SignalWorkflowInput) -> None:
        input.headers = with_request_id(input.headers)
        await super().signal_workflow(input)


class RequestIdWorkerInterceptor(temporal_worker.Interceptor):
    def intercept_activity(
        self, next: temporal_worker.ActivityInboundInterceptor
    ) -> temporal_worker.ActivityInboundInterceptor:
        return _ActivityInbound(next)

    def workflow_interceptor_class(
        self, input: temporal_worker.WorkflowInterceptorClassInput
    ) -> type[temporal_worker.WorkflowInboundInterceptor]:
        return _WorkflowInbound


class _ActivityInbound(temporal_worker.ActivityInboundInterceptor):
    async def execute_activity(self, input: temporal_worker.ExecuteActivityInput) -> Any:
        # the SDK copies this context into the thread of a synchronous activity
        with request_id_bound(request_id_of(input.headers)):
            return await super().execute_activity(input)


class _WorkflowInbound(temporal_worker.WorkflowInboundInterceptor):
    def init(self, outbound: temporal_worker.WorkflowOutboundInterceptor) -> None:
        super().init(_WorkflowOutbound(outbound))

    async def execute_workflow(self, input: temporal_worker.ExecuteWorkflowInput) -> Any:
        found = request_id_of(input.headers)
        set_request_id(found)  # this task's context: the workflow's own code and what it starts
        if found is not None:
            # workflow.logger says nothing during a replay: one line when the workflow first runs
            workflow.logger.info("workflow started", extra={"x_request_id": found})
        return await super().execute_workflow(input)

    async def handle_signal(self, input: temporal_worker.HandleSignalInput) -> None:
        set_request_id(request_id_of(input.headers))  # the handler runs in a task of its own
        await super().handle_signal(input)

    async def handle_update_handler(self, input: temporal_worker.HandleUpdateInput) -> Any:
        set_request_id(request_id_of(input.headers))
        return await super().handle_update_handler(input)


class _WorkflowOutbound(temporal_worker.WorkflowOutboundInterceptor):
    def start_activity(self, input: temporal_worker.StartActivityInput) -> workflow.ActivityHandle[Any]:
        input.headers = with_request_id(input.headers)
        return super().start_activity(input)

    def start_local_activity(
        self, input: temporal_worker.StartLocalActivityInput
    ) -> workflow.ActivityHandle[Any]:
        input.headers = with_request_id(input.headers)
        return super().start_local_activity(input)

    async def start_child_workflow(
        self, input: temporal_worker.StartChildWorkflowInput
    ) -> workflow.ChildWorkflowHandle[Any, Any]:
        input.headers = with_request_id(input.headers)
        return await super().start_child_workflow(input)

    def continue_as_new(self, input: temporal_worker.ContinueAsNewInput) -> NoReturn:
        input.headers = with_request_id(input.headers)
        super().continue_as_new(input)
