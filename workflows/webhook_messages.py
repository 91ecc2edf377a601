"""Inputs and results of the webhook-delivery workflow and of the webhook activities, and the
delivery schedule (CONTRACT 7) that the workflow applies and the activity reports.

New fields always get defaults so that recorded histories still decode.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel

WEBHOOK_WORKFLOW_TYPE = "WebhookDelivery"
# one attempt: the POST may take 10 s; the rest is reading and recording in the database
HTTP_TIMEOUT = timedelta(seconds=10)
ATTEMPT_TIMEOUT = timedelta(seconds=30)
# retries: first after 5 s, doubling, at most 4 h apart, for 3 days after the first attempt
FIRST_RETRY = timedelta(seconds=5)
BACKOFF = 2.0
MAX_RETRY_INTERVAL = timedelta(hours=4)
DELIVERY_WINDOW = timedelta(days=3)


def retry_delay(attempt: int) -> timedelta:
    """The wait after failed attempt number ``attempt`` (1-based), as the RetryPolicy computes it."""
    seconds = FIRST_RETRY.total_seconds() * BACKOFF ** min(attempt - 1, 32)
    return min(timedelta(seconds=seconds), MAX_RETRY_INTERVAL)


# DeliverWebhookInput.first_attempt: how the request workflow's own first attempt failed (ADR 24)
PARENT_FAILED = "failed"
PARENT_GONE = "gone"


class DeliverWebhookInput(BaseModel):
    event_id: str
    # an event that must be delivered (or given up) first: a subject's ``identity`` event before
    # their ``credential`` events (CONTRACT 7)
    after: str | None = None
    # 1: the first attempt is a local activity, the retries an activity as before (ADR 23);
    # recorded histories have none (0: every attempt an activity)
    revision: int = 0
    # attempts made before this activity's first (the local one), for the attempts' numbers
    attempts_before: int = 0
    # the first attempt was the request workflow's own (ADR 24) and failed: "failed", or "gone"
    # for a 410; then it began at ``first_attempt_at`` and the delivery goes on with the retries
    first_attempt: str | None = None
    first_attempt_at: datetime | None = None


# the revision every delivery starts on now (DeliverWebhookInput.revision)
DELIVERY_REVISION = 1


class DeliveryResult(BaseModel):
    event_id: str
    state: str  # delivered | skipped
    status_code: int | None = None


class RecordWebhookFailureInput(BaseModel):
    event_id: str
    reason: str


class CreateCredentialEventInput(BaseModel):
    """The decision a ``credential`` event reports; the payload (contact included) is read from the
    database by the activity, so it never enters workflow history."""

    request_id: str
    organization_id: str
    decision_id: str
    subject_id: str
    credential_id: str
    accepted: bool
    decided_at: datetime
    # the event of support's retry of a FAILED issuance (issue 32): one more for the decision
    retry: bool = False


class CreateEventResult(BaseModel):
    """The events made for a fact: ``event_id`` the first, ``endpoint_events`` every one by its
    endpoint's id ("" for none). Results recorded before endpoints (issue 34) have only
    ``event_id``: ``by_endpoint`` reads them as that one event."""

    event_id: str
    created: bool = True
    endpoint_events: dict[str, str] = {}

    def by_endpoint(self) -> dict[str, str]:
        return self.endpoint_events or {"": self.event_id}


class CreateOtpFailedEventInput(BaseModel):
    """An ``otp.failed`` event: the code could not be delivered, or was locked after wrong tries.
    ``fact`` names the occurrence (one event per code sent)."""

    request_id: str
    organization_id: str
    subject_id: str
    fact: str
    code: str  # INVALID_CODE_LIMIT | UNDELIVERABLE | INVALID_PHONE_NUMBER
    message: str


class CreateIdentityEventInput(BaseModel):
    """An ``identity`` event: a subject's identity check completed (``decision {success,
    message?, date}``)."""

    request_id: str
    organization_id: str
    subject_id: str
    success: bool
    message: str | None = None
    date: datetime
