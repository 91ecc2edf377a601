"""The request workflow as Temporal's sandbox would run it, for replaying its histories there: the
service runs it unsandboxed (workflows/credential_request.py says why), and the sandbox is what
refuses a non-deterministic call (the clock, randomness, I/O) in workflow code."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.credential_request import CredentialRequestWorkflow
    from workflows.messages import CredentialRequestInput, CredentialRequestResult


@workflow.defn(name="CredentialRequest", sandboxed=True)
class SandboxedRequest(CredentialRequestWorkflow):
    @workflow.run
    async def run(self, inp: CredentialRequestInput) -> CredentialRequestResult:
        return await super().run(inp)
