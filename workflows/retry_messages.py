"""The messages of support's retries (issue 32): a credential issued again by its own workflow."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

# the retry workflow's error type when the credential is not issued: its content still cannot be
# signed (FAILED again, so another retry may start), or it is no longer a FAILED one
RETRY_NOT_ISSUED = "retry_not_issued"
CREDENTIAL_RETRY_WORKFLOW_TYPE = "CredentialRetry"


class RetryIssuanceInput(BaseModel):
    request_id: str
    organization_id: str
    credential_id: str
    actor: str
    reason: str


class RetryIssuanceResult(BaseModel):
    credential_id: str
    mandate_id: str
    event_id: str


class ReopenCredentialInput(BaseModel):
    credential_id: str
    actor: str
    reason: str


class ReopenCredentialResult(BaseModel):
    """``reopened``: this run made the FAILED credential PENDING (False when a run before did, or it
    was never FAILED); the acceptance its issuance follows, for the ``credential`` event."""

    reopened: bool
    decision_id: str
    subject_id: str
    decided_at: datetime


class RestartIdentityInput(BaseModel):
    """Support's restart of a subject's identity check that errored at the provider."""

    subject_id: str
    actor: str
    reason: str


class RestartIdentityRecord(BaseModel):
    """The activity's input: the request, the subject, who and why."""

    request_id: str
    subject_id: str
    actor: str
    reason: str


class RestartIdentityResult(BaseModel):
    checks: list[str]  # the checks closed as errored (none when a run before closed them)
