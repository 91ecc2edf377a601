"""What the signed documents look like: credentials (the mandate and the document form), the VP,
receipts, proofs, DID documents and status lists, as the OpenAPI document declares them.

These models describe; they never parse what is sent. A signed document leaves the service as the
dict it was signed as (``trust``), so that no field is reordered, reformatted or dropped on the way
out: a response model's field holds ``Annotated[dict[str, Any], documented_as(Model)]``, a plain
dict at run time whose schema is ``#/components/schemas/<Model>`` (``api.openapi`` adds every model
of ``DOCUMENTED`` to the components). Every member the service signs is declared and nothing else
is allowed (``additionalProperties: false``), so ``tests/api/test_openapi_*`` notice any drift.

Times inside signed documents are strings of one form, whole seconds in UTC
(``trust.eddsa_jcs.format_datetime``), declared by a pattern rather than ``format: date-time``: a
client that parsed them into dates and wrote them back would change what the signature covers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from core.ids import UUID_PATTERN
from policy.limits import MAX_EXECUTIONS, MAX_NUMBER, USER_REF_RE
from policy.params import DEFAULT_MAX_ITEMS, DEFAULT_MAX_LENGTH, MAX_ITEMS_CEILING, MAX_LENGTH_CEILING

COMPONENTS = "#/components/schemas/"
SIGNED_TIME = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
SRI = "^sha256-[A-Za-z0-9+/]{43}=$"

SignedTime = Annotated[
    str, Field(pattern=SIGNED_TIME, description="RFC 3339, whole seconds, UTC; kept as signed")
]
Sri = Annotated[str, Field(pattern=SRI, description="sha256- and the base64 SHA-256 of the JCS form")]
Did = Annotated[str, Field(pattern="^did:[a-z0-9]+:.+$")]
MethodId = Annotated[str, Field(pattern="^did:[a-z0-9]+:[^#]+#.+$", description="A DID URL: DID#key")]
Multibase = Annotated[str, Field(pattern="^z[1-9A-HJ-NP-Za-km-z]+$", description="base58btc multibase")]
Contexts = Annotated[
    list[str],
    Field(
        alias="@context",
        min_length=1,
        description="https://www.w3.org/ns/credentials/v2, then the service's context (/ns/v1)",
    ),
]


def documented_as(model: type[BaseModel]) -> WithJsonSchema:
    """The schema of a JSON value kept as it was signed: a reference to ``model``'s component
    (inside ``allOf``, so that pydantic leaves a field's description beside it, a reference it did
    not make itself)."""
    return WithJsonSchema({"allOf": [{"$ref": COMPONENTS + model.__name__}]})


def absent_not_null(schema: dict[str, Any]) -> None:
    """An optional member is absent, never null: its schema has no ``default: null``."""
    for member in schema.get("properties", {}).values():
        if "default" in member and member["default"] is None:
            del member["default"]


class _Signed(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, json_schema_extra=absent_not_null)


# --- proofs (eddsa-jcs-2022 Data Integrity proofs: trust.eddsa_jcs.create_proof) -------------------


class _BareProof(_Signed):
    type: Literal["DataIntegrityProof"]
    cryptosuite: Literal["eddsa-jcs-2022"]
    created: SignedTime
    verificationMethod: MethodId
    proofValue: Multibase


class RecordProof(_BareProof):
    """The service's proof of an audit record: a record has no ``@context``, so neither has its proof."""

    proofPurpose: Literal["assertionMethod"]


class _Proof(_BareProof):
    context: Contexts


class AssertionProof(_Proof):
    """The issuer's proof of a credential, a receipt, an audit record or a status list."""

    proofPurpose: Literal["assertionMethod"]


class DocumentProof(AssertionProof):
    """One item of a document form's ``proof``: what was done (``ISSUE``, then ``REVOKE``), over
    which content (``actionProof``), when."""

    actionType: Literal["ISSUE", "REVOKE"]
    actionProof: Sri
    createdAt: SignedTime


class PresentationProof(_Proof):
    """The holder's proof of a VP: single use (``challenge``), short-lived (``expires``), and bound
    to one verifier when ``domain`` is present."""

    proofPurpose: Literal["authentication"]
    challenge: str = Field(min_length=22)
    expires: SignedTime
    domain: Did | SkipJsonSchema[None] = Field(default=None, description="The target verifier's DID")


# --- credentials ---------------------------------------------------------------------------------


class Evidence(_Signed):
    id: str = Field(pattern=f"^urn:via:decision:{UUID_PATTERN}$", description="The acceptance it records")
    digestSRI: Sri = Field(description="Digest of the text GET /credential/evidence/{id} serves")
    location: str


class CredentialStatusEntry(_Signed):
    id: str = Field(description="statusListCredential#statusListIndex")
    type: Literal["BitstringStatusListEntry"]
    statusPurpose: Literal["revocation"]
    statusListIndex: str = Field(pattern="^[0-9]+$")
    statusListCredential: str = Field(description="URL of the status list (GET /credentials/status/{id})")


class ActionPin(_Signed):
    """The action version a mandate pins and the userParams the subject approved."""

    id: str = Field(pattern=f"^urn:via:action:{UUID_PATTERN}$")
    version: str = Field(pattern=f"^urn:via:action-version:{UUID_PATTERN}$")
    digestSRI: Sri
    userParams: dict[str, Any]


class MandateContext(_Signed):
    authorizedDIDs: list[Did] = Field(description="Who may obtain a VP: the organization's DID first")


class SignedLimit(_Signed):
    """A use limit of the mandate (issue 31): the action's, its ``max`` read from the request."""

    name: str
    kind: Literal["executions", "sum", "rate"]
    max: float = Field(description="At most this many uses, or this sum of `param`")
    param: str | SkipJsonSchema[None] = Field(default=None, description="A sum's execution param")
    period: Literal["P1D", "P1W", "P1M"] | SkipJsonSchema[None] = Field(
        default=None, description="A UTC calendar day, ISO week or month; absent: the mandate's life"
    )
    unit: str | SkipJsonSchema[None] = Field(default=None, description="A sum's unit (EUR)")


class Mandate(_Signed):
    grantor: list[Did] = Field(description="The subjects who accepted")
    scope: str
    context: MandateContext
    action: ActionPin | SkipJsonSchema[None] = None
    limits: list[SignedLimit] | SkipJsonSchema[None] = Field(
        default=None, description="The action version's use limits, when it has any"
    )
    maxExecutions: int | SkipJsonSchema[None] = Field(
        default=None,
        description="The request's bound on allowed verifications; absent: unlimited",
    )


class SignerQuality(_Signed):
    """In which capacity a signer signed (issue 36), as the request gave it."""

    id: Did = Field(description="The signer (a grantor's DID)")
    signerQuality: str = Field(description='Free text, one line: "CEO of Acme", "legal guardian"')


class MandateSubject(_Signed):
    id: Did = Field(description="The organization (grantee)")
    mandate: Mandate
    signerQualities: list[SignerQuality] | SkipJsonSchema[None] = Field(
        default=None, description="In which capacity signers signed, when the request gave it"
    )


class MandateCredential(_Signed):
    """A mandate (POLICY credential), mandate form: its signature under ``proofs`` (SPEC.md)."""

    context: Contexts
    id: str = Field(pattern=f"^urn:via:credential:{UUID_PATTERN}$")
    type: list[Literal["VerifiableCredential", "VIAMandate"]] = Field(min_length=2, max_length=2)
    issuer: Did
    validFrom: SignedTime
    validUntil: SignedTime | None = Field(
        default=None, description="Absent without an end (null on credentials issued before 2026-11-01)"
    )
    credentialSubject: MandateSubject
    evidences: list[Evidence]
    credentialStatus: CredentialStatusEntry
    proofs: list[AssertionProof] = Field(min_length=1)


class DocumentItem(_Signed):
    label: str
    type: str
    value: str
    hidden: bool
    fields: list[dict[str, Any]]


class DocumentSubject(_Signed):
    id: Did = Field(description="The organization")
    data: list[DocumentItem]
    signerQualities: list[SignerQuality] | SkipJsonSchema[None] = Field(
        default=None, description="In which capacity signers signed, when the request gave it"
    )


class DocumentCredential(_Signed):
    """The document form of a credential (SPEC.md): a DOCUMENT's items, or a mandate's action, version,
    scope and approved userParams; each action on it (``ISSUE``, ``REVOKE``) a signed ``proof`` item."""

    context: Contexts
    id: str = Field(pattern=f"^urn:via:credential:{UUID_PATTERN}$")
    type: list[Literal["VerifiableCredential", "VIADocument"]] = Field(min_length=2, max_length=2)
    issuer: Did
    issuanceDate: SignedTime
    validFrom: SignedTime
    validUntil: SignedTime | None = Field(
        default=None, description="Absent without an end (null on credentials issued before 2026-11-01)"
    )
    credentialSubject: DocumentSubject
    evidences: list[Evidence]
    credentialStatus: CredentialStatusEntry
    proof: list[DocumentProof] = Field(min_length=1)


class VerifiablePresentation(_Signed):
    """A VP of one mandate by its holder (the organization), to be verified once."""

    context: Contexts
    id: str = Field(pattern=f"^urn:via:presentation:{UUID_PATTERN}$")
    type: list[Literal["VerifiablePresentation"]] = Field(min_length=1, max_length=1)
    holder: Did
    verifiableCredential: MandateCredential
    proof: PresentationProof


class Receipt(_Signed):
    """What the service attests it did, signed by its key (CONTRACT 5); optional members are absent,
    never null."""

    context: Contexts
    id: str = Field(pattern=f"^urn:via:receipt:{UUID_PATTERN}$")
    type: Literal["PRESENTATION_ISSUED", "VERIFICATION_APPROVED", "VERIFICATION_DENIED", "MANDATE_REVOKED"]
    timestamp: SignedTime
    credentialId: str = Field(description="The mandate URN (empty when a denied VP names none)")
    requestId: str | SkipJsonSchema[None] = Field(default=None, pattern="^[0-9a-f]{24}$")
    presentationId: str | SkipJsonSchema[None] = None
    decision: Literal["allow", "deny"] | SkipJsonSchema[None] = None
    reason: str | SkipJsonSchema[None] = None
    verifier: Did | SkipJsonSchema[None] = None
    evaluationsDigest: Sri | SkipJsonSchema[None] = None
    proof: AssertionProof


# --- a published action version's content (what its digestSRI covers, shown as it is) -------------


class ActionParam(_Signed):
    """A declared param. ``maxLength`` and ``maxItems`` are present only when declared (the
    version's content, which its digestSRI covers, holds them only then); absent, the default
    applies."""

    name: str = Field(pattern="^[a-zA-Z_][a-zA-Z0-9_]*$")
    type: Literal["string", "number", "integer", "boolean", "timestamp", "array<string>", "array<number>"]
    description: str | SkipJsonSchema[None] = None
    default: Any = Field(default=None, description="userParams only: the value when the request omits it")
    maxLength: Annotated[int, Field(ge=1, le=MAX_LENGTH_CEILING)] | SkipJsonSchema[None] = Field(
        default=None,
        description=(
            "string and array<string> params only: the most characters of the value (of each item "
            f"of an array<string>); when absent, {DEFAULT_MAX_LENGTH:,}; at most {MAX_LENGTH_CEILING:,}"
        ),
    )
    maxItems: Annotated[int, Field(ge=1, le=MAX_ITEMS_CEILING)] | SkipJsonSchema[None] = Field(
        default=None,
        description=(
            f"array params only: the most items of the value; when absent, {DEFAULT_MAX_ITEMS:,}; "
            f"at most {MAX_ITEMS_CEILING:,}"
        ),
    )


class ActionRule(_Signed):
    name: str
    description: str | SkipJsonSchema[None] = None
    expression: str = Field(description="CEL over executionParams.<name>, userParams.<name> and now")


class ActionLimit(_Signed):
    """A use limit the version declares (issue 31). A version that declares none has no ``limits``
    in its content (which its digestSRI covers), so it is absent then, never ``[]``."""

    name: str = Field(
        pattern="^[a-zA-Z_][a-zA-Z0-9_]*$",
        max_length=100,
        description=f"Unique in the version; never `{MAX_EXECUTIONS}`, the request's own executions bound",
    )
    kind: Literal["executions", "sum", "rate"] = Field(
        description=(
            "`executions`: at most `max` allowed verifications over the mandate's life; `sum`: the "
            "allowed verifications' `param` adds up to at most `max` per `period`; `rate`: at most "
            "`max` allowed verifications per `period`"
        )
    )
    max: Annotated[float, Field(ge=0, le=MAX_NUMBER)] | Annotated[str, Field(pattern=USER_REF_RE.pattern)] = (
        Field(
            description=(
                "A number (whole for `executions` and `rate`), or `userParams.<name>`: a numeric user "
                "param, so each request sets its own bound"
            )
        )
    )
    param: str | SkipJsonSchema[None] = Field(
        default=None,
        pattern="^[a-zA-Z_][a-zA-Z0-9_]*$",
        description="`sum` only: the numeric execution param added up",
    )
    period: Literal["P1D", "P1W", "P1M"] | SkipJsonSchema[None] = Field(
        default=None,
        description=(
            "UTC calendar periods: a day, an ISO week (from Monday 00:00) or a month; absent, the "
            "mandate's life. `rate` needs one; `executions` takes none"
        ),
    )
    unit: str | SkipJsonSchema[None] = Field(
        default=None, min_length=1, max_length=16, description="`sum` only: what the amounts count (EUR)"
    )
    description: str | SkipJsonSchema[None] = Field(default=None, max_length=500)


# --- identity documents and status lists ---------------------------------------------------------


class VerificationMethod(_Signed):
    id: MethodId
    type: Literal["Multikey"]
    controller: Did
    publicKeyMultibase: Multibase


class DidDocument(_Signed):
    """A DID document: the service's and an organization's list every key (the active one first);
    a subject's holds none."""

    context: Contexts
    id: Did
    verificationMethod: list[VerificationMethod] | SkipJsonSchema[None] = None
    assertionMethod: list[MethodId] | SkipJsonSchema[None] = None
    authentication: list[MethodId] | SkipJsonSchema[None] = None


class StatusListSubject(_Signed):
    id: str
    type: Literal["BitstringStatusList"]
    statusPurpose: Literal["revocation"]
    encodedList: str = Field(pattern="^u[A-Za-z0-9_-]+$", description="multibase base64url of the GZIP bits")
    ttl: int = Field(description="How long a verifier may cache it, in milliseconds")


class StatusListCredential(_Signed):
    """A W3C Bitstring Status List credential (purpose revocation), signed by the service."""

    context: Contexts
    id: str
    type: list[Literal["VerifiableCredential", "BitstringStatusListCredential"]] = Field(
        min_length=2, max_length=2
    )
    issuer: Did
    validFrom: SignedTime
    credentialSubject: StatusListSubject
    proof: AssertionProof


class JsonLdContext(_Signed):
    """The JSON-LD context of the service's terms."""

    context: dict[str, Any] = Field(alias="@context")


DOCUMENTED: tuple[type[BaseModel], ...] = (
    RecordProof,
    AssertionProof,
    DocumentProof,
    PresentationProof,
    MandateCredential,
    DocumentCredential,
    VerifiablePresentation,
    Receipt,
    ActionPin,
    DocumentItem,
    ActionParam,
    ActionRule,
    ActionLimit,
    DidDocument,
    StatusListCredential,
    JsonLdContext,
)

SignedRecordProof = Annotated[dict[str, Any], documented_as(RecordProof)]
SignedDocumentProof = Annotated[dict[str, Any], documented_as(DocumentProof)]
SignedMandate = Annotated[dict[str, Any], documented_as(MandateCredential)]
SignedDocument = Annotated[dict[str, Any], documented_as(DocumentCredential)]
SignedPresentation = Annotated[dict[str, Any], documented_as(VerifiablePresentation)]
SignedReceipt = Annotated[dict[str, Any], documented_as(Receipt)]
PinnedAction = Annotated[dict[str, Any], documented_as(ActionPin)]
DocumentItemJson = Annotated[dict[str, Any], documented_as(DocumentItem)]
ActionParamJson = Annotated[dict[str, Any], documented_as(ActionParam)]
ActionRuleJson = Annotated[dict[str, Any], documented_as(ActionRule)]
ActionLimitJson = Annotated[dict[str, Any], documented_as(ActionLimit)]
