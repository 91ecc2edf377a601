"""SQLModel tables. Every schema change comes with an Alembic revision in migrations/versions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    ForeignKeyConstraint,
    Index,
    LargeBinary,
    UniqueConstraint,
    text,
)
from sqlmodel import Field, SQLModel

from core.kinds import SubjectIdentity, SubjectKyc

# approvals and workflows (migration 0019)
from store.tables_approvals import Approval as Approval
from store.tables_approvals import ApprovalVersion as ApprovalVersion
from store.tables_approvals import ApprovalWorkflow as ApprovalWorkflow
from store.tables_approvals import ApprovalWorkflowItem as ApprovalWorkflowItem
from store.tables_approvals import CredentialApproval as CredentialApproval

# a DOCUMENT credential's own PDF, given inline (issue 36, migration 0025)
from store.tables_documents import CredentialDocument as CredentialDocument

# the dashboard's tables (members, their tokens, codes and sessions, login throttling), importable
# from here as they always were
from store.tables_members import LoginThrottle as LoginThrottle
from store.tables_members import Member as Member
from store.tables_members import MemberRecoveryCode as MemberRecoveryCode
from store.tables_members import MemberSession as MemberSession
from store.tables_members import MemberToken as MemberToken

# the subject's portal: codes and sessions (issue 32, migration 0026)
from store.tables_portal import PortalChallenge as PortalChallenge
from store.tables_portal import PortalSession as PortalSession

# the trusted browser sessions (issue 36, migration 0023)
from store.tables_trusted import TrustedSession as TrustedSession

# what an organization imported about its users (POST /user, issue 36): their identity and extra
# contacts, encrypted
from store.tables_users import SubjectProfile as SubjectProfile
from store.tables_webhooks import WebhookAttempt as WebhookAttempt
from store.tables_webhooks import WebhookEndpoint as WebhookEndpoint
from store.tables_webhooks import WebhookEvent as WebhookEvent


class Organization(SQLModel, table=True):
    __tablename__ = "organization"
    id: str = Field(primary_key=True, max_length=24)
    name: str = Field(max_length=200)
    created_at: datetime
    api_version: str | None = Field(default=None, max_length=10)
    request_rate_per_minute: int = 60
    presentation_minutes: int = 5  # VP lifetime, 1 to 60 (CONTRACT 5)
    # HTTPS origins allowed to embed the approval page in an iframe (at most 10; migration 0007)
    frame_origins: list[str] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False, server_default=text("'[]'"))
    )
    # every member must have the second factor on before any other page opens (migration 0017)
    require_second_factor: bool = Field(default=False)
    # the subject's portal lists and revokes the organization's mandates (issue 32, migration 0026)
    portal_enabled: bool = Field(default=True)


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_key"
    id: str = Field(primary_key=True, max_length=24)
    organization_id: str = Field(foreign_key="organization.id", index=True, max_length=24)
    key_hash: str = Field(unique=True, max_length=64)
    key_prefix: str = Field(max_length=16)
    secret_ciphertext: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    previous_secret_ciphertext: bytes | None = Field(
        default=None, sa_column=Column(LargeBinary, nullable=True)
    )
    rotated_at: datetime | None = None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    created_at: datetime
    name: str = Field(default="", max_length=80)
    description: str = Field(default="", max_length=500)
    last_used_at: datetime | None = None  # to the minute; batched off the signed-call path


class SeenSignature(SQLModel, table=True):
    """Replay protection: accepted (key, signature) pairs, kept for the timestamp window."""

    __tablename__ = "seen_signature"
    api_key_id: str = Field(primary_key=True, max_length=24)
    signature: str = Field(primary_key=True, max_length=64)
    is_write: bool
    expires_at: datetime = Field(index=True)


class IdempotencyRecord(SQLModel, table=True):
    __tablename__ = "idempotency_record"
    organization_id: str = Field(primary_key=True, max_length=24)
    key: str = Field(primary_key=True, max_length=255)
    body_hash: str = Field(max_length=64)
    status_code: int
    response: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(index=True)


class CredentialRequest(SQLModel, table=True):
    __tablename__ = "credential_request"
    __table_args__ = (
        Index("ix_request_org_created", "organization_id", "created_at"),
        Index("ix_request_unstarted", "workflow_started_at", "created_at"),
        # a request is sent again once (migration 0027)
        Index("uq_request_resent_from", "resent_from", unique=True),
    )
    id: str = Field(primary_key=True, max_length=24)
    organization_id: str = Field(foreign_key="organization.id", max_length=24)
    security_level: str = Field(max_length=32)
    name: str | None = Field(default=None, max_length=200)
    language: str = Field(default="ENG", max_length=3)
    redirect_url: str | None = Field(default=None, max_length=2048)
    internal_id: str | None = Field(default=None, index=True, max_length=255)
    authorized_dids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # the integrator's P-256 key the iframe's messages are encrypted to (``iframe.pubKey``, base64
    # DER SPKI as ``trust.frame_jwe.check_frame_key`` spells it; migration 0022); public, no secret
    iframe_pub_key: str | None = Field(default=None, max_length=256)
    status: str = Field(max_length=32)
    created_at: datetime
    expires_at: datetime
    canceled_at: datetime | None = None
    canceled_by: str | None = Field(default=None, max_length=255)
    workflow_started_at: datetime | None = None
    # ``iframe.cookie``: the trusted browser session's lifetime in seconds (3600 to 86400) when the
    # request allows one, else None (migration 0023; store.trusted)
    trusted_session_seconds: int | None = None
    # the expired, canceled or rejected request support sent again as this one (issue 32,
    # migration 0027); the other way round is the request whose resent_from is this one's id
    resent_from: str | None = Field(default=None, max_length=24)


class Subject(SQLModel, table=True):
    """A person as one organization knows them: one per (organization, contact)."""

    __tablename__ = "subject"
    __table_args__ = (
        UniqueConstraint("organization_id", "contact", name="uq_subject_org_contact"),
        # the organization's own reference of its user (POST /user), one subject each (migration 0020)
        Index("uq_subject_org_internal_id", "organization_id", "internal_id", unique=True),
    )
    id: str = Field(primary_key=True, max_length=36)
    organization_id: str = Field(foreign_key="organization.id", max_length=24)
    contact: str = Field(max_length=320)
    contact_kind: str = Field(max_length=8)
    # HMAC-SHA256 of the normalized contact under a key derived from the master key
    # (``JourneySecrets.contact_hash``): how operators find a person's requests in every
    # organization; None only for a subject from before migration 0014 until the first search by
    # contact fills it (store.timeline.fill_contact_hashes)
    contact_hash: str | None = Field(default=None, index=True, max_length=64)
    identity_status: str = Field(default=SubjectIdentity.UNVERIFIED, max_length=32)
    kyc: str = Field(default=SubjectKyc.NOT_STARTED, max_length=32)
    created_at: datetime
    # the organization's reference of the person as its user (POST /user, migration 0020); a
    # request's own internalId for the subject (RequestSubject.internal_id) is shown before it
    internal_id: str | None = Field(default=None, max_length=255)


class RequestSubject(SQLModel, table=True):
    __tablename__ = "request_subject"
    request_id: str = Field(foreign_key="credential_request.id", primary_key=True, max_length=24)
    subject_id: str = Field(foreign_key="subject.id", primary_key=True, index=True, max_length=36)
    position: int
    internal_id: str | None = Field(default=None, index=True, max_length=255)
    # the identity check this request required of the subject: VERIFIED | FAILED (migration 0008)
    identity_result: str | None = Field(default=None, max_length=16)
    # the subject's options in this request (issue 36, migration 0021): the secondary contact that
    # receives the code while the contact receives the link, encrypted under the master key
    # (core.secretbox; never stored in the clear), its kind (email | phone), and the capacity in
    # which the subject signs (``signerQuality``, signed into the credential)
    secondary_contact_sealed: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    secondary_contact_kind: str | None = Field(default=None, max_length=8)
    signer_quality: str | None = Field(default=None, max_length=100)
    # the document id the identity check must return (``docId``; migration 0020): its keyed hash
    # (``core.otp.JourneySecrets.document_hash``), never the number itself
    doc_id_hash: str | None = Field(default=None, max_length=64)


class Credential(SQLModel, table=True):
    __tablename__ = "credential"
    __table_args__ = (
        UniqueConstraint("status_list_id", "status_list_index", name="uq_credential_status_entry"),
    )
    id: str = Field(primary_key=True, max_length=24)
    request_id: str = Field(foreign_key="credential_request.id", index=True, max_length=24)
    position: int
    resource_type: str = Field(max_length=16)
    status: str = Field(max_length=16)
    name: str = Field(max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    internal_id: str | None = Field(default=None, index=True, max_length=255)
    scope: str | None = Field(default=None, max_length=500)
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    action: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    data: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    mandate_id: str | None = Field(default=None, unique=True, max_length=64)
    w3c_credential: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # issuance (migration 0004): the document form is kept for every issued credential (for a
    # DOCUMENT it is w3c_credential itself) and gains a signed proof item per later action (revoke)
    document_credential: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    issued_at: datetime | None = None
    status_list_id: str | None = Field(default=None, max_length=36)
    status_list_index: int | None = None
    revoked_at: datetime | None = Field(default=None, index=True)  # index: migration 0018
    revocation_reason: str | None = Field(default=None, max_length=500)
    revocation_receipt: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # use limits (issue 31, migration 0018): the request's maxExecutions; the action's limits with
    # their max resolved from the request's userParams (``policy.limits.Bound``, signed into the
    # mandate at issuance); and what the allowed verifications used, per bound and period
    # (``policy.limits.Usage``), written in the transaction that records each verification
    max_executions: int | None = None
    limits: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    usage: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # a DOCUMENT's placements on its PDF's pages (issue 36, migration 0024; ``wire.placements``),
    # each with its normalized contact; None when it has none
    placements: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class Decision(SQLModel, table=True):
    __tablename__ = "decision"
    __table_args__ = (UniqueConstraint("credential_id", "subject_id", name="uq_decision_once"),)
    id: str = Field(primary_key=True, max_length=64)
    credential_id: str = Field(foreign_key="credential.id", index=True, max_length=24)
    subject_id: str = Field(foreign_key="subject.id", max_length=36)
    accepted: bool
    channel: str | None = Field(default=None, max_length=8)
    surface: str | None = Field(default=None, max_length=8)
    decided_at: datetime


class SigningKey(SQLModel, table=True):
    """An Ed25519 key of the service (owner ``service``, the issuer) or of an organization
    (owner = its id). The private key is stored only encrypted; retired keys are kept because
    DID documents keep listing them, so everything signed before still verifies."""

    __tablename__ = "signing_key"
    __table_args__ = (
        # at most one active key per owner: concurrent first uses (several processes) cannot
        # both create one, and a rotation cannot leave two signing keys
        Index(
            "uq_signing_key_one_active",
            "owner",
            unique=True,
            sqlite_where=text("status = 'active'"),
            postgresql_where=text("status = 'active'"),
        ),
        Index("ix_signing_key_owner_created", "owner", "created_at"),
    )
    id: str = Field(primary_key=True, max_length=24)
    owner: str = Field(max_length=24)
    public_multikey: str = Field(unique=True, max_length=64)
    private_key_ciphertext: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    status: str = Field(max_length=8)
    created_at: datetime
    retired_at: datetime | None = None


class Action(SQLModel, table=True):
    """An organization's action: a name, a description and numbered versions (CONTRACT 6).

    The key is (organization, id): every lookup is scoped to one organization, and an action can be
    installed in several organizations under the same URN (staging and production share ids, so
    integrator code naming the action works in both)."""

    __tablename__ = "action"
    organization_id: str = Field(foreign_key="organization.id", primary_key=True, max_length=24)
    id: str = Field(primary_key=True, max_length=64)
    name: str = Field(max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    created_at: datetime


class ActionVersion(SQLModel, table=True):
    """One numbered version of an action. A draft until published; a published version is
    immutable (the store refuses, and a database trigger from migration 0003 aborts any UPDATE
    of a published row), and its ``digest_sri`` covers its canonical ``content``."""

    __tablename__ = "action_version"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "action_id"],
            ["action.organization_id", "action.id"],
            name="fk_action_version_action",
        ),
        UniqueConstraint("organization_id", "action_id", "number", name="uq_action_version_number"),
    )
    id: str = Field(primary_key=True, max_length=64)
    organization_id: str = Field(max_length=24)
    action_id: str = Field(max_length=64)
    number: int
    status: str = Field(max_length=16)  # draft | published
    content: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    digest_sri: str | None = Field(default=None, max_length=100)
    created_at: datetime
    published_at: datetime | None = None


class StatusList(SQLModel, table=True):
    """A W3C Bitstring Status List (purpose ``revocation``) shared by every organization's mandates,
    so a list reveals nothing about who holds which index. Indices are handed out in a scrambled
    order (``store.mandates``); a full list is followed by a new one."""

    __tablename__ = "status_list"
    id: str = Field(primary_key=True, max_length=36)
    purpose: str = Field(max_length=16)
    length: int
    allocated: int = 0
    created_at: datetime


class Presentation(SQLModel, table=True):
    """A VP the service issued. ``used_at`` is set by the first verification that gets past the
    VP's signature checks, in one conditional UPDATE: the single-use guarantee (CONTRACT 5)."""

    __tablename__ = "presentation"
    id: str = Field(primary_key=True, max_length=64)  # urn:via:presentation:<uuid>
    credential_id: str = Field(foreign_key="credential.id", index=True, max_length=24)
    organization_id: str = Field(foreign_key="organization.id", max_length=24)
    challenge: str = Field(max_length=64)
    domain: str | None = Field(default=None, max_length=2048)
    created_at: datetime
    expires_at: datetime
    receipt: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    used_at: datetime | None = None
    used_by: str | None = Field(default=None, max_length=24)  # the verifying organization


class Verification(SQLModel, table=True):
    """One answer of POST /credential/verify, with its signed receipt (id = the receipt's id)."""

    __tablename__ = "verification"
    __table_args__ = (Index("ix_verification_org_created", "organization_id", "created_at"),)
    id: str = Field(primary_key=True, max_length=64)
    organization_id: str = Field(foreign_key="organization.id", max_length=24)  # the verifier
    presentation_id: str | None = Field(default=None, index=True, max_length=64)
    mandate_id: str | None = Field(default=None, index=True, max_length=64)
    decision: str = Field(max_length=8)  # allow | deny
    reason: str | None = Field(default=None, max_length=64)
    evaluations: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    execution_params: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    receipt: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime


class AuditRecord(SQLModel, table=True):
    """One record of an organization's audit trail (SPEC.md "Audit trail"), append-only.

    Records of an organization form a chain: ``seq`` counts from 1 without gaps, ``prev_hash`` is
    the ``hash`` of the record before it, and ``hash`` covers the record's signed content, proof
    included (store.audit says exactly what). ``audit_head`` holds each chain's end, so that
    deleting the newest records is seen too, and serializes appends.
    """

    __tablename__ = "audit_record"
    __table_args__ = (
        UniqueConstraint("organization_id", "seq", name="uq_audit_record_org_seq"),
        Index("ix_audit_record_org_created", "organization_id", "created_at"),
    )
    id: str = Field(primary_key=True, max_length=64)  # urn:via:audit:<uuid>
    organization_id: str = Field(foreign_key="organization.id", max_length=24)
    seq: int
    type: str = Field(max_length=32)
    request_id: str | None = Field(default=None, index=True, max_length=24)
    credential_id: str | None = Field(default=None, index=True, max_length=64)
    actor: str | None = Field(default=None, max_length=255)
    data: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime
    prev_hash: str | None = Field(default=None, max_length=64)
    hash: str = Field(max_length=64)
    proof: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))


class AuditHead(SQLModel, table=True):
    """The end of an organization's audit chain: its last ``seq`` and ``hash``."""

    __tablename__ = "audit_head"
    organization_id: str = Field(primary_key=True, foreign_key="organization.id", max_length=24)
    seq: int
    hash: str = Field(max_length=64)


class OtpChallenge(SQLModel, table=True):
    """The current one-time code of a subject in a request (CONTRACT 8). Only the keyed hash of the
    code is kept (``core.otp``); a resend replaces it and clears the wrong tries and the lock."""

    __tablename__ = "otp_challenge"
    request_id: str = Field(foreign_key="credential_request.id", primary_key=True, max_length=24)
    subject_id: str = Field(foreign_key="subject.id", primary_key=True, max_length=36)
    code_hash: str = Field(max_length=64)
    channel: str = Field(max_length=8)  # email | sms
    sends: int  # how many codes were sent (1 for the first)
    sent_at: datetime
    expires_at: datetime
    failures: int = 0  # wrong codes since the last send
    locked_at: datetime | None = None
    verified_at: datetime | None = None
    delivery_error: str | None = Field(default=None, max_length=32)


class KycCheck(SQLModel, table=True):
    """One platform identity check (KYC) of a subject in a request, by a provider (``adapters.kyc``).
    The id is random and unguessable: the provider's page is reached by it."""

    __tablename__ = "kyc_check"
    __table_args__ = (Index("ix_kyc_check_request_subject", "request_id", "subject_id"),)
    id: str = Field(primary_key=True, max_length=36)
    request_id: str = Field(foreign_key="credential_request.id", max_length=24)
    subject_id: str = Field(foreign_key="subject.id", max_length=36)
    provider: str = Field(max_length=32)
    status: str = Field(max_length=16)  # PENDING | VERIFIED | FAILED
    message: str | None = Field(default=None, max_length=500)
    created_at: datetime
    completed_at: datetime | None = None
    # the browser it was started from (``core.otp.JourneySecrets.kyc_browser_hash`` of its cookie)
    # and when the subject came back through its return, which is taken once
    browser_hash: str | None = Field(default=None, max_length=64)
    returned_at: datetime | None = None


class CredentialPdf(SQLModel, table=True):
    """The last PDF rendered of a credential (``api.pdf``), under the digest of everything it shows:
    when what it shows changes (a status, a revocation) the digest does too, so a PDF is served
    only for the content it was made of; the next rendering replaces the row (migration 0009)."""

    __tablename__ = "credential_pdf"
    credential_id: str = Field(foreign_key="credential.id", primary_key=True, max_length=24)
    content_digest: str = Field(max_length=64)
    pdf: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    rendered_at: datetime
