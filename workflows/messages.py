"""Inputs and results of the request workflow, its updates, queries and activities.

New fields always get defaults so that recorded histories still decode.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from core.kinds import (
    IDENTITY_SOURCES,
    IdentitySource,
    IdentityStep,
    OtpOutcome,
    RequestStatus,
    SubjectIdentity,
    SubjectKyc,
    Surface,
)
from workflows.webhook_messages import CreateEventResult


class CredentialRequestInput(BaseModel):
    request_id: str
    organization_id: str
    security_level: str
    internal_id: str | None = None
    subject_ids: list[str]
    credential_ids: list[str]
    expires_at: datetime
    # subjects with a secondary contact (issue 36): their first message carries the link alone,
    # and their first code goes to the secondary contact when they open it (``open_journey``).
    # Histories recorded before it have none, so they replay sending every subject a code.
    codes_on_open: list[str] = Field(default_factory=list)
    # the workflow revision the request started on (workflows.patches, ADR 23); recorded histories
    # have none: 0, every patch asked for as it was then
    revision: int = 0


class CredentialRequestResult(BaseModel):
    request_id: str
    status: RequestStatus


class CancelInput(BaseModel):
    canceled_by: str
    reason: str | None = None  # why, as the canceler gave it (an operator's), in MANDATE_CANCELED


class CancelResult(BaseModel):
    canceled_at: datetime


class DecisionInput(BaseModel):
    subject_id: str
    credential_id: str
    accept: bool
    channel: str | None = None  # "email" | "sms"
    surface: Surface | None = None
    reason: str | None = None  # why a decision was made for the subject (identity_failed)


class DecisionResult(BaseModel):
    decision_id: str
    decided_at: datetime
    request_status: RequestStatus
    mandate_id: str | None = None  # set when this decision completed the credential's acceptance


class DecisionView(BaseModel):
    subject_id: str
    credential_id: str
    accepted: bool
    decision_id: str
    decided_at: datetime


class SubjectProgressView(BaseModel):
    """One subject's journey as the ``status`` query shows it to operators: counts and states,
    never a code, a code's hash, a link or a contact."""

    subject_id: str
    sends: int = 0  # codes sent or being sent
    last_sent: datetime | None = None
    channel: str | None = None  # where the last delivered code went (email | sms)
    undelivered: int = 0  # sends that did not reach the subject
    wrong_tries: int = 0  # at the current code
    wrong_tries_total: int = 0  # at every code of the request
    locked: bool = False  # the current code is locked until a new one is sent
    code_confirmed: bool = False
    identity: IdentityStep = IdentityStep.NOT_REQUIRED  # where the subject stands with it


class RequestStatusView(BaseModel):
    request_id: str
    status: RequestStatus
    expires_at: datetime
    canceled_at: datetime | None = None
    decisions: list[DecisionView] = Field(default_factory=list)
    awaiting: int = 0
    otp_passed: list[str] = Field(default_factory=list)  # subjects who confirmed their code
    identity: dict[str, bool] = Field(default_factory=dict)  # subject -> identity check passed
    subjects: list[SubjectProgressView] = Field(default_factory=list)  # each subject's progress


# --- activities -------------------------------------------------------------------------------


class RecordCancellationInput(BaseModel):
    request_id: str
    canceled_at: datetime
    canceled_by: str
    reason: str | None = None


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
    reason: str | None = None
    # the trusted browser session that stood in for the code (its id; the channel is ``trusted``)
    trusted_session_id: str | None = None


class RecordedDecision(BaseModel):
    """The subject's decision on the credential as the database holds it, which the decision's
    record answers (revision 2: the workflow answers with it, ADR 24)."""

    decision_id: str
    decided_at: datetime
    accepted: bool


class WriteDecisionInput(BaseModel):
    """Revision 3 (ADR 27): a decision's record, its credential's issuance, and its ``credential``
    event, in one local activity. ``issue_if_accepted``: every other subject's acceptance of the
    credential is written, so the credential is issued if the decision stored is an acceptance."""

    record: RecordDecisionInput
    organization_id: str
    issue_if_accepted: bool = False


class IssueCredentialInput(BaseModel):
    request_id: str
    credential_id: str


# the issuance activity's error type for a credential that can never be signed (it is FAILED)
ISSUANCE_FAILED = "issuance_failed"


class IssueCredentialResult(BaseModel):
    credential_id: str
    mandate_id: str
    newly_issued: bool = True


class DecisionWritten(BaseModel):
    """What ``WriteDecisionInput``'s activity wrote: the decision as stored, the issuance when it
    issued (None: not issued, or ``issuance_failed``: the credential is FAILED), the events."""

    decision: RecordedDecision
    issued: IssueCredentialResult | None = None
    issuance_failed: bool = False
    events: CreateEventResult

    @property
    def mandate_id(self) -> str | None:
        return self.issued.mandate_id if self.issued is not None else None


# --- the subject's journey: codes -------------------------------------------------------------

OTP_PASSED, OTP_WRONG, OTP_EXPIRED, OTP_LOCKED, OTP_LOCKED_NOW, OTP_NO_CODE = (
    OtpOutcome.PASSED,
    OtpOutcome.WRONG,
    OtpOutcome.EXPIRED,
    OtpOutcome.LOCKED,
    OtpOutcome.LOCKED_NOW,
    OtpOutcome.NO_CODE,
)
MAX_SENDS = 5  # codes per subject and request (CONTRACT 4)
RESEND_INTERVAL_SECONDS = 60


class VerifyOtpInput(BaseModel):
    """A code the subject entered, as its keyed hash (``core.otp``): the code itself never enters
    the workflow's history."""

    subject_id: str
    code_hash: str


class VerifyOtpResult(BaseModel):
    outcome: OtpOutcome
    attempts_left: int = 0
    # the identity step after a passed code
    identity: IdentityStep = IdentityStep.NOT_REQUIRED
    # the subject's standing statuses, read with the check (for reusing an earlier identity check)
    kyc: SubjectKyc | None = None
    identity_status: SubjectIdentity | None = None


class ResendOtpInput(BaseModel):
    subject_id: str
    actor: str | None = None  # who asked for the code (``str(Actor)``), named by its OTP_RESENT record
    reason: str | None = None  # why, as they gave it (an operator's), in that record


class SendOtpResult(BaseModel):
    channel: str  # email | sms
    delivered: bool
    error_code: str | None = None  # UNDELIVERABLE | INVALID_PHONE_NUMBER when not delivered
    error_message: str | None = None
    expires_at: datetime | None = None


class SendOtpInput(BaseModel):
    request_id: str
    subject_id: str
    send_number: int  # 1 for the first code
    resent_by: str | None = None  # the actor of a resend (its OTP_RESENT record); None at the start
    reason: str | None = None  # the reason the actor of a resend gave (in that record)


class SendLinkInput(BaseModel):
    """The link alone to a subject whose code goes to their secondary contact (issue 36)."""

    request_id: str
    subject_id: str


class OpenJourneyInput(BaseModel):
    """The subject opened their link: their first code goes out now when it waits for that."""

    subject_id: str


class OpenJourneyResult(BaseModel):
    code_sent: bool  # this call sent the subject's first code (False: it was sent before, or waits not)
    delivered: bool = True  # False when the code sent now could not be delivered


class CheckOtpInput(BaseModel):
    request_id: str
    subject_id: str
    code_hash: str


# --- the subject's journey: the trusted browser session (issue 36, ``iframe.cookie``) -------------

# a decision's channel when a trusted browser session stood in for the code (``Decision.channel``)
TRUSTED_CHANNEL = "trusted"


class VerifySessionInput(BaseModel):
    """A trusted browser's token, as its keyed hash (``core.otp``): the token itself never enters
    the workflow's history."""

    subject_id: str
    token_hash: str


class CheckSessionInput(BaseModel):
    request_id: str
    subject_id: str
    token_hash: str


class CheckSessionResult(BaseModel):
    session_id: str | None = None  # the session that stands in for the code, None when none does
    # the subject's standing statuses, as after a code (for reusing an earlier identity check)
    kyc: SubjectKyc | None = None
    identity_status: SubjectIdentity | None = None


class VerifySessionResult(BaseModel):
    passed: bool
    identity: IdentityStep = IdentityStep.NOT_REQUIRED  # the identity step after a passed session


# --- the subject's journey: identity (KYC) --------------------------------------------------------

IDENTITY_NOT_REQUIRED, IDENTITY_REQUIRED, IDENTITY_PASSED, IDENTITY_FAILED = (
    IdentityStep.NOT_REQUIRED,
    IdentityStep.REQUIRED,
    IdentityStep.PASSED,
    IdentityStep.FAILED,
)


def identity_state(security_level: str, passed: bool | None) -> IdentityStep:
    """Where a subject stands with the identity check their request's level requires, given the
    recorded result (None: none yet). The workflow's gate and the page's next step both use it."""
    if security_level not in IDENTITY_SOURCES:
        return IDENTITY_NOT_REQUIRED
    return IDENTITY_REQUIRED if passed is None else IDENTITY_PASSED if passed else IDENTITY_FAILED


class IdentityInput(BaseModel):
    """An identity result for a subject: from the platform provider (``platform``), an earlier
    platform success reused (``platform-reuse``) or the organization's own check
    (``organization``)."""

    subject_id: str
    success: bool
    source: IdentitySource
    message: str | None = None
    check_id: str | None = None


class IdentityResult(BaseModel):
    identity: IdentityStep


class RecordIdentityInput(BaseModel):
    request_id: str
    subject_id: str
    success: bool
    source: str
    message: str | None = None
    check_id: str | None = None
    at: datetime
