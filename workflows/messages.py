"""Inputs and results of the request workflow, its updates, queries and activities.

New fields always get defaults so that recorded histories still decode.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class CredentialRequestInput(BaseModel):
    request_id: str
    organization_id: str
    security_level: str
    internal_id: str | None = None
    subject_ids: list[str]
    credential_ids: list[str]
    expires_at: datetime


class CredentialRequestResult(BaseModel):
    request_id: str
    status: str


class CancelInput(BaseModel):
    canceled_by: str


class CancelResult(BaseModel):
    canceled_at: datetime


class DecisionInput(BaseModel):
    subject_id: str
    credential_id: str
    accept: bool
    channel: str | None = None  # "email" | "sms"
    surface: str | None = None  # "hosted" | "iframe"


class DecisionResult(BaseModel):
    decision_id: str
    decided_at: datetime
    request_status: str
    mandate_id: str | None = None  # set when this decision completed the credential's acceptance


class DecisionView(BaseModel):
    subject_id: str
    credential_id: str
    accepted: bool
    decision_id: str
    decided_at: datetime


class RequestStatusView(BaseModel):
    request_id: str
    status: str
    expires_at: datetime
    canceled_at: datetime | None = None
    decisions: list[DecisionView] = Field(default_factory=list)
    awaiting: int = 0


# --- activities -------------------------------------------------------------------------------


class RecordCancellationInput(BaseModel):
    request_id: str
    canceled_at: datetime
    canceled_by: str


class RecordExpiryInput(BaseModel):
    request_id: str


class RecordDecisionInput(BaseModel):
    request_id: str
    decision_id: str
    subject_id: str
    credential_id: str
    accepted: bool
    channel: str | None = None
    surface: str | None = None
    decided_at: datetime
    completes_request: bool = False


class IssueCredentialInput(BaseModel):
    request_id: str
    credential_id: str


class IssueCredentialResult(BaseModel):
    credential_id: str
    mandate_id: str
    newly_issued: bool = True
