"""What a webhook delivery looks like (CONTRACT 7, docs/webhooks.md), as the OpenAPI document's
``webhooks`` declare it: the encrypted body that is POSTed, and the events it decrypts to.

These models describe; they never build an event. The payloads are made as dicts by
``wire.webhook_payloads`` and stored as made, so that every retry sends the same plaintext. Every
member is declared and nothing else is allowed (``additionalProperties: false``); an optional
member is absent, never null. ``tests/api/test_openapi_webhooks.py`` checks the events the service
really sends against these schemas, so a payload that drifts from them fails there.

They describe the newest API version; an organization pinned to an older one receives that
version's shapes (docs/sdk.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from core.ids import UUID_PATTERN
from wire.models import CredentialOut
from wire.patterns import OBJECT_ID
from wire.signed import COMPONENTS, SignedReceipt, absent_not_null
from wire.versioning import VERSION_RE

BASE64 = "^[A-Za-z0-9+/]*={0,2}$"
EVENT_ID = f"^urn:via:event:{UUID_PATTERN}$"
# as wire.models.iso writes them: UTC, milliseconds, Z
EVENT_TIME = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"
OTP_FAILURES = ("INVALID_CODE_LIMIT", "UNDELIVERABLE", "INVALID_PHONE_NUMBER")


class _Described(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=absent_not_null)


class WebhookBody(_Described):
    """The body POSTed to the organization's webhook URL: AES-256-GCM of the event's JSON, members in
    this order, each base64 (RFC 4648, with padding)."""

    iv: str = Field(
        pattern=BASE64, min_length=16, max_length=16, description="The 12-byte IV, new each attempt"
    )
    data: str = Field(pattern=BASE64, description="The ciphertext, without its tag")
    tag: str = Field(pattern=BASE64, min_length=24, max_length=24, description="The 16-byte GCM tag")


class EventUser(_Described):
    contact: str = Field(description="The subject's e-mail address or E.164 phone number")
    id: str = Field(pattern="^did:web:.+$", description="The subject's DID")
    internalId: str | SkipJsonSchema[None] = Field(
        default=None, description="The request's internalId for this subject, when given"
    )


class _Event(_Described):
    id: str = Field(
        pattern=EVENT_ID, description="The event's id: also the Webhook-Id header, the same on every retry"
    )
    eventType: str  # each event's own literal
    requestId: str = Field(pattern=OBJECT_ID)
    internalId: str | SkipJsonSchema[None] = Field(
        default=None, description="The request's internalId, when given"
    )
    issuerDid: str = Field(pattern="^did:web:.+$", description="The service DID that issues the credentials")
    user: EventUser
    api_version: str = Field(
        pattern=VERSION_RE.pattern,
        description="The organization's pinned API version (else the newest): the payload's shape",
    )
    createdAt: str = Field(pattern=EVENT_TIME)


class CredentialDecision(_Described):
    action: Literal["accept", "reject"]
    date: str = Field(pattern=EVENT_TIME, description="When the subject decided")


class CredentialEvent(_Event):
    """A subject decided on a credential. With the credential complete (every subject accepted),
    the mandate is issued first: `credential.id` is its URN and `credential.w3cCredential` the
    signed mandate; an acceptance still waiting for other subjects carries the credential's own id
    and status. A rejection carries status `REJECTED` and no W3C credential."""

    eventType: Literal["credential"]
    credential: CredentialOut = Field(description="The credential as GET /request/{requestId} shows it")
    decision: CredentialDecision


class IdentityDecision(_Described):
    success: bool
    message: str | SkipJsonSchema[None] = Field(
        default=None, description="The check's own words, when it gave some"
    )
    date: str = Field(pattern=EVENT_TIME, description="When the check ended")


class IdentityEvent(_Event):
    """A subject's identity check ended (the organization's report, or the platform's KYC)."""

    eventType: Literal["identity"]
    decision: IdentityDecision


class OtpError(_Described):
    code: Literal[OTP_FAILURES]  # type: ignore[valid-type]
    message: str


class OtpFailure(_Described):
    resendEndpoint: str = Field(
        pattern="^https?://",
        description="The signed PATCH /request/resend/{requestId}?id=<subject DID> that sends a new code",
    )
    error: OtpError


class OtpFailedEvent(_Event):
    """A subject's code could not be delivered (`UNDELIVERABLE`, `INVALID_PHONE_NUMBER`) or was
    locked after five wrong tries (`INVALID_CODE_LIMIT`)."""

    eventType: Literal["otp.failed"]
    otp: OtpFailure


class MandateRevocation(_Described):
    reason: Literal["exhausted", "subject"] = Field(
        description="`exhausted`: the mandate's last allowed use was spent; `subject`: a subject of "
        "the mandate revoked it in the subject's portal"
    )
    revokedAt: str = Field(pattern=EVENT_TIME)
    receipt: SignedReceipt = Field(description="The signed MANDATE_REVOKED receipt")


class MandateRevokedEvent(_Event):
    """A mandate was revoked without the integrator: it revoked itself (`exhausted`: the
    verification that spent its last use, `maxExecutions` or an executions limit of its action, was
    allowed, and the mandate was revoked in the same transaction), or a subject revoked it in the
    subject's portal (`subject`). `credential` is the mandate as GET /request/{requestId} shows
    it (status `REVOKED`; `executionsRemaining` 0 when exhausted); `user` is the subject who
    revoked it (`subject`), else the request's first subject."""

    eventType: Literal["mandate.revoked"]
    credential: CredentialOut = Field(description="The mandate as GET /request/{requestId} shows it")
    revocation: MandateRevocation


class TestEvent(_Event):
    """Sent on demand (the dashboard, `mandatum webhook test`), with a sample request and user."""

    __test__ = False  # not a pytest class, whatever imports it
    eventType: Literal["test"]
    message: str


# the event type, its model, and when it is sent
EVENTS: dict[str, type[_Event]] = {
    "credential": CredentialEvent,
    "identity": IdentityEvent,
    "otp.failed": OtpFailedEvent,
    "mandate.revoked": MandateRevokedEvent,
    "test": TestEvent,
}


def component(event_type: str) -> str:
    """The reference of ``event_type``'s payload schema in the OpenAPI document."""
    return COMPONENTS + EVENTS[event_type].__name__
