"""Wire models of the credential routes: revoke, get-credential (SPEC.md, CONTRACT 4)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from core.kinds import CredentialStatus
from wire.models import LimitUse, Strict, Timestamp
from wire.signed import DocumentItemJson, PinnedAction, SignedDocument, SignedDocumentProof, SignedReceipt
from wire.texts import one_line_text

Reason = Annotated[
    str,
    Field(
        max_length=500,
        description=(
            "Free text recorded on the credential and in the MANDATE_REVOKED receipt; recommended values "
            "user_initiated, organization_policy, system_expiry. One line: no control, line separator "
            "or bidi override characters"
        ),
    ),
    AfterValidator(one_line_text),
]


class RevokeAliasIn(Strict):
    """The body of ``DELETE /credential/revoke/{mandateId}``: optional, and so is ``reason``."""

    reason: Reason | None = None

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty")
        return value


class RevokeIn(RevokeAliasIn):
    """The body of ``POST /credential/{mandateId}/revoke``: ``reason`` is required."""

    reason: Reason


class RevokeOut(BaseModel):
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    credentialId: str = Field(description="The mandate URN")
    status: Literal["REVOKED"] = "REVOKED"
    revokedAt: Timestamp
    receipt: SignedReceipt = Field(description="The signed MANDATE_REVOKED receipt")


class CredentialEntityOut(BaseModel):
    """SPEC's credential entity, with documented extras after ``internalId``."""

    id: str = Field(description="The credential entity id (24 lower-case hex characters)")
    resourceType: Literal["POLICY", "DOCUMENT"]
    status: CredentialStatus
    proofs: list[SignedDocumentProof] = Field(
        description=("The proof items of the document form (ISSUE, then e.g. REVOKE); empty before issuance")
    )
    data: list[DocumentItemJson] = Field(
        description=(
            "DOCUMENT: its data items. POLICY: the document form's items (action, version, scope, each "
            "approved userParam) once issued, empty before"
        )
    )
    name: str
    internalId: str | None
    mandateId: str | None = Field(description="The credential URN once issued, else null")
    requestId: str
    description: str | None
    scope: str | None
    action: PinnedAction | None
    tags: list[str]
    validFrom: Timestamp | None
    validUntil: Timestamp | None
    issuedAt: Timestamp | None
    revokedAt: Timestamp | None
    revocationReason: str | None
    revocationReceipt: SignedReceipt | None = Field(description="The MANDATE_REVOKED receipt once revoked")
    maxExecutions: int | None = Field(default=None, description="POLICY: the request's bound on uses")
    executionsRemaining: int | None = Field(
        default=None,
        description=(
            "Uses left under maxExecutions and the action's executions limits (the smaller): null "
            "when unlimited, 0 when spent (the mandate then revoked itself, reason `exhausted`)"
        ),
    )
    limits: list[LimitUse] = Field(
        default_factory=list, description="Each use limit with its use in the current period (UTC)"
    )


class CredentialDetailOut(BaseModel):
    credential: CredentialEntityOut
    w3cCredential: SignedDocument | None = Field(
        description=(
            "The document form in its most updated version (with every proof item, e.g. REVOKE); "
            "null before issuance"
        )
    )
    pdf: str | SkipJsonSchema[None] = Field(
        default=None,
        description=("Base64 PDF rendering; present only with includePdf=true on a DOCUMENT credential"),
    )


class CredentialEventOut(BaseModel):
    """One audit record about a credential, and what it proves (GET /credential/{id}/events)."""

    id: str = Field(description="The record's URN (urn:via:audit:<uuid>)")
    type: str = Field(description="The record type (GET /activity lists them)")
    seq: int = Field(description="Its place in the organization's chain")
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    actor: str | SkipJsonSchema[None] = Field(default=None, description="Absent when no actor is recorded")
    issuer: str = Field(description="The DID whose key signed the record (the service's)")
    hash: str = Field(description="hex SHA-256 of the JCS form of the record, proof included")
    contentValid: bool = Field(description="The record's content matches its hash")
    signatureValid: bool = Field(description="Signed by the service's key, and the signature verifies")
    chainLinkValid: bool = Field(description="Its prevHash is the hash of the record before it")


class CredentialEventsOut(BaseModel):
    credentialId: str = Field(description="The mandate URN, or the credential id of a credential without one")
    ok: bool = Field(description="Every record checks: content, signature and link")
    reason: str | SkipJsonSchema[None] = Field(
        default=None, description="Which record failed which check; absent when ok"
    )
    eventCount: int
    events: list[CredentialEventOut]
