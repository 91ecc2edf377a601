"""Support's retry of an issuance that failed for good (issue 32): a short workflow of its own,
``credential-retry:<credentialId>``, since the request's workflow has usually finished by then.

It makes the FAILED credential issuable again (with its audit record naming who and why), runs the
idempotent issuance activity the request workflow runs, then makes the integrator's ``credential``
event for the acceptance that completed it and starts that event's delivery, as an issuance in the
request workflow does. Each step is idempotent or a command in this history, so a worker killed at
any point ends with one mandate and one event. When the content still cannot be signed the
credential is FAILED again and the workflow fails, so that a later retry may start (the id reuse
policy allows a new run only after a failed one); a successful run answers every later request.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.request_events import start_delivery

with workflow.unsafe.imports_passed_through():
    from workflows.ids import ActivityNames, webhook_search_attributes
    from workflows.messages import IssueCredentialInput, IssueCredentialResult
    from workflows.options import write_for
    from workflows.retry_messages import (
        CREDENTIAL_RETRY_WORKFLOW_TYPE,
        RETRY_NOT_ISSUED,
        ReopenCredentialInput,
        ReopenCredentialResult,
        RetryIssuanceInput,
        RetryIssuanceResult,
    )
    from workflows.webhook_messages import (
        DELIVERY_REVISION,
        CreateCredentialEventInput,
        CreateEventResult,
        DeliverWebhookInput,
    )


@workflow.defn(name=CREDENTIAL_RETRY_WORKFLOW_TYPE)
class CredentialRetryWorkflow:
    @workflow.run
    async def run(self, inp: RetryIssuanceInput) -> RetryIssuanceResult:
        reopened = await write_for(
            ActivityNames.REOPEN_CREDENTIAL,
            ReopenCredentialInput(credential_id=inp.credential_id, actor=inp.actor, reason=inp.reason),
            ReopenCredentialResult,
            summary=f"reopen {inp.credential_id} for {inp.actor}",
        )
        try:
            issued = await write_for(
                ActivityNames.ISSUE_CREDENTIAL,
                IssueCredentialInput(request_id=inp.request_id, credential_id=inp.credential_id),
                IssueCredentialResult,
                summary=f"issue {inp.credential_id} again",
            )
        except ActivityError as err:  # non-retryable: FAILED again, or not issuable at all
            cause = err.cause.message if isinstance(err.cause, ApplicationError) else str(err)
            raise ApplicationError(
                f"credential {inp.credential_id} was not issued: {cause}", type=RETRY_NOT_ISSUED
            ) from err
        created = await write_for(
            ActivityNames.CREATE_CREDENTIAL_EVENT,
            CreateCredentialEventInput(
                request_id=inp.request_id,
                organization_id=inp.organization_id,
                decision_id=reopened.decision_id,
                subject_id=reopened.subject_id,
                credential_id=inp.credential_id,
                accepted=True,
                decided_at=reopened.decided_at,
                retry=True,
            ),
            CreateEventResult,
            summary=f"credential event for the retry of {inp.credential_id}",
        )
        attributes = webhook_search_attributes(inp.organization_id, inp.request_id, "credential")
        for event_id in created.by_endpoint().values():
            await start_delivery(
                DeliverWebhookInput(event_id=event_id, revision=DELIVERY_REVISION), attributes
            )
        return RetryIssuanceResult(
            credential_id=inp.credential_id, mandate_id=issued.mandate_id, event_id=created.event_id
        )
