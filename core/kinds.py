"""Every status and refusal kind the service names, in one place.

Each is a ``StrEnum``: a member *is* its string, so rows, workflow histories, webhook payloads and
JSON answers hold exactly the spellings they always held, and comparing with a stored string works.
Nothing here imports anything of the project; the workflows import it too (it is deterministic).
"""

from __future__ import annotations

from enum import StrEnum


class RequestStatus(StrEnum):
    """A credential request (SPEC.md ``status``)."""

    PENDING = "PENDING"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    EXPIRED = "EXPIRED"


class RequestOutcome(StrEnum):
    """How a closed request ended, for operators (the ``MandatumOutcome`` search attribute): a
    completed one was approved (every decision an acceptance), rejected (every one a rejection),
    partly approved, or ended by a failed identity check; else it was canceled or expired."""

    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    PARTLY_APPROVED = "PARTLY_APPROVED"
    IDENTITY_FAILED = "IDENTITY_FAILED"
    CANCELED = "CANCELED"
    EXPIRED = "EXPIRED"


class CredentialStatus(StrEnum):
    """A credential of a request: ``DRAFT`` until a code is out, then ``PENDING`` until decided."""

    DRAFT = "DRAFT"
    PENDING = "PENDING"
    ACTIVE = "ACTIVE"  # accepted and issued
    REJECTED = "REJECTED"
    CANCELED = "CANCELED"
    EXPIRED = "EXPIRED"
    REVOKED = "REVOKED"
    FAILED = "FAILED"  # every subject accepted, but the content can never be signed


OPEN_CREDENTIAL_STATUSES = (CredentialStatus.DRAFT, CredentialStatus.PENDING)


class IdentityStatus(StrEnum):
    """One identity check (a ``kyc_check`` row), and the result a request recorded of a subject."""

    PENDING = "PENDING"
    VERIFIED = "VERIFIED"
    FAILED = "FAILED"


class SubjectKyc(StrEnum):
    """A subject's standing with the platform's identity check (``subject.kyc``)."""

    NOT_STARTED = "NOT_STARTED"
    PENDING = "PENDING"
    VERIFIED = "VERIFIED"
    FAILED = "FAILED"


class SubjectIdentity(StrEnum):
    """A subject's last identity result of any kind (``subject.identity_status``, SPEC.md
    ``identityStatus``)."""

    UNVERIFIED = "UNVERIFIED"
    VERIFIED = "VERIFIED"
    FAILED = "FAILED"


class IdentitySource(StrEnum):
    """Where an identity result came from (CONTRACT 8)."""

    PLATFORM = "platform"
    ORGANIZATION = "organization"
    REUSED = "platform-reuse"  # an earlier platform success


class SecurityLevel(StrEnum):
    """How a request's subjects prove who they are (SPEC.md ``securityLevel``)."""

    CONTACT = "CONTACT"  # the code sent to the contact is enough
    ORGANIZATION_KYC = "ORGANIZATION_KYC"  # the organization reports its own identity check
    PLATFORM_KYC = "PLATFORM_KYC"  # the platform's identity check; an earlier success is reused
    PLATFORM_REVALIDATION = "PLATFORM_REVALIDATION"  # the platform's check, done again every time


# the source of identity each security level requires (CONTRACT 8); CONTACT requires none
IDENTITY_SOURCES: dict[str, IdentitySource] = {
    SecurityLevel.ORGANIZATION_KYC: IdentitySource.ORGANIZATION,
    SecurityLevel.PLATFORM_KYC: IdentitySource.PLATFORM,
    SecurityLevel.PLATFORM_REVALIDATION: IdentitySource.PLATFORM,
}


class Surface(StrEnum):
    """Where a subject decided (SPEC.md audit record "UI surface")."""

    HOSTED = "hosted"  # the service's own page
    IFRAME = "iframe"  # the page inside the integrator's app


class IdentityStep(StrEnum):
    """Where a subject stands with the identity check their request's level requires."""

    NOT_REQUIRED = "not_required"
    REQUIRED = "required"
    PASSED = "passed"
    FAILED = "failed"


class OtpOutcome(StrEnum):
    """The outcome of checking a code the subject entered."""

    PASSED = "passed"
    WRONG = "wrong"
    EXPIRED = "expired"
    LOCKED = "locked"  # locked before this try
    LOCKED_NOW = "locked_now"  # this wrong try locked it
    NO_CODE = "no_code"


class ActionVersionStatus(StrEnum):
    DRAFT = "draft"
    PUBLISHED = "published"


class UpdateRefusal(StrEnum):
    """Why a request workflow refused an update (the ``ApplicationError`` type it raises). The API
    maps each to an HTTP status in one table (``api.errors.REFUSAL_STATUS``)."""

    NOT_ACTIVE = "not_active"  # completed, canceled or expired
    ALREADY_CANCELED = "already_canceled"
    ALREADY_DECIDED = "already_decided"
    UNKNOWN_SUBJECT = "unknown_subject"
    UNKNOWN_CREDENTIAL = "unknown_credential"
    OTP_REQUIRED = "otp_required"
    IDENTITY_REQUIRED = "identity_required"
    IDENTITY_FAILED = "identity_failed"
    TOO_MANY_SENDS = "too_many_sends"
    TOO_SOON = "too_soon"
    NO_JOURNEY = "no_journey"
    IDENTITY_NOT_REQUIRED = "identity_not_required"
    WRONG_IDENTITY_SOURCE = "wrong_identity_source"
    IDENTITY_RECORDED = "identity_recorded"
    NOTHING_UNDELIVERED = "nothing_undelivered"  # support's retry of a code the subject never got
    REFUSED = "refused"  # a refusal of no known kind

    @classmethod
    def of(cls, kind: str | None) -> UpdateRefusal:
        """The refusal a workflow's ApplicationError type names (REFUSED for an unknown one)."""
        try:
            return cls(kind or cls.REFUSED)
        except ValueError:
            return cls.REFUSED


PLATFORM_ROLE = "platform"
"""The role of operators: the people running the installation, members of no organization,
who use the operators' area (``mandatum operator``); never one of an organization's roles."""


class MemberRole(StrEnum):
    """What a dashboard member may do (issue 14): the owner everything, members included; a
    developer keys, webhooks, actions, requests and mandates; support reads everything of the
    organization and does the support actions (cancel, resend, a subject's link, webhook retry,
    revoke), never keys, webhook settings or actions."""

    OWNER = "owner"
    DEVELOPER = "developer"
    SUPPORT = "support"


class MemberTokenPurpose(StrEnum):
    SET_PASSWORD = "set_password"  # noqa: S105 (a purpose, not a password): the invitation's link
    RESET_PASSWORD = "reset_password"  # noqa: S105
