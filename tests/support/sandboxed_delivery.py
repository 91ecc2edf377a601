"""The webhook delivery workflow as Temporal's sandbox would run it, for replaying its histories
there: the service runs it unsandboxed (workflows/webhook_delivery.py says why), and the sandbox
is what refuses a non-deterministic call (the clock, randomness, I/O) in workflow code."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.webhook_delivery import WebhookDeliveryWorkflow
    from workflows.webhook_messages import WEBHOOK_WORKFLOW_TYPE, DeliverWebhookInput, DeliveryResult


@workflow.defn(name=WEBHOOK_WORKFLOW_TYPE, sandboxed=True)
class SandboxedDelivery(WebhookDeliveryWorkflow):
    @workflow.run
    async def run(self, inp: DeliverWebhookInput) -> DeliveryResult:
        return await super().run(inp)
