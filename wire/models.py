"""Wire models: what integrators send and receive, with SPEC.md's field names."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from core.kinds import CredentialStatus, RequestStatus, SecurityLevel, SubjectIdentity, SubjectKyc
from core.origins import BadOrigin, check_url
from core.text import quote_input
from wire.contacts import (
    MAX_SIGNER_QUALITY,
    SECONDARY_CONTACT_DOC,
    SIGNER_QUALITY_DOC,
    NormalContact,
    normalize_subjects,
)
from wire.dates import in_utc
from wire.identity_match import DocumentIdText
from wire.iframe import IframeIn
from wire.inline_credentials import JSON_DOC, PDF_DOC, InlineJson, InlinePdf, type_problem
from wire.numbers import reject_non_jcs
from wire.placements import PlacementsIn, PlacementsOut
from wire.signed import (
    DocumentItemJson,
    PinnedAction,
    SignedDocument,
    SignedMandate,
)
from wire.texts import multiline_strings, multiline_text, one_line_strings, one_line_text, reject_nul


def iso(value: datetime) -> str:
    """RFC 3339 in UTC with milliseconds and a Z, the way JavaScript clients print dates."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# an RFC 3339 date-time in the answers, in UTC with milliseconds
Timestamp = Annotated[
    datetime,
    PlainSerializer(iso, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}, mode="serialization"),
]
DID_RE = re.compile(r"^did:[a-z0-9]+:[A-Za-z0-9._:%-]+$")
RFC3339_START = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}")
ACTION_URN_RE = re.compile(r"^urn:via:action:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _date_time_text(value: Any) -> Any:
    """A date-time in a body is RFC 3339 text: pydantic would also read a number (or a string of
    digits) as seconds since 1970, a shape the document never offers."""
    if not isinstance(value, str) or not RFC3339_START.match(value):
        raise ValueError("must be an RFC 3339 date-time, e.g. 2026-01-31T12:00:00Z")
    return value


def _aware(value: datetime) -> datetime:
    """In UTC, as it is kept; out of range when its offset takes it outside the years 1 to 9999."""
    if value.tzinfo is None:
        raise ValueError("must carry a time zone offset (e.g. 2026-01-31T12:00:00Z)")
    return in_utc(value)


def _did(value: str) -> str:
    if not DID_RE.match(value):
        raise ValueError(f"is not a DID: {quote_input(value)}")
    return value


def _query_bool(value: Any) -> Any:
    """A boolean in a query string is ``true`` or ``false`` (in any case: ``requests`` sends
    Python's ``True``): pydantic would also read 1, 0, yes, no, on, off, t, f, y and n, spellings
    the document never offers, so a typo such as ``includePdf=no`` could pass for a choice."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError("must be true or false")


AwareDatetime = Annotated[datetime, BeforeValidator(_date_time_text), AfterValidator(_aware)]
QueryBool = Annotated[bool, BeforeValidator(_query_bool)]
Did = Annotated[str, AfterValidator(_did)]
Text = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(one_line_text)]
Ref = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(one_line_text)]
ApprovalId = Annotated[str, Field(min_length=1, max_length=64)]  # services.approvals checks the form


class Language(StrEnum):
    ENG = "ENG"
    PRT = "PRT"
    SPA = "SPA"
    FRA = "FRA"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        reject_nul(value)
        return value


class ContactIn(Strict):
    """A contact given as an object, to attach the integrator's own subject reference and the
    subject's options in this request."""

    contact: str
    internalId: Ref | None = None
    secondaryContact: Annotated[str, Field(max_length=320)] | None = Field(
        default=None, description=SECONDARY_CONTACT_DOC
    )
    signerQuality: (
        Annotated[str, Field(min_length=1, max_length=MAX_SIGNER_QUALITY), AfterValidator(one_line_text)]
        | None
    ) = Field(default=None, description=SIGNER_QUALITY_DOC)
    docId: DocumentIdText | None = None  # the document its identity check must return (wire.identity_match)


# What a DOCUMENT may hold: its PDF costs about 13 microseconds of CPU per character (api/pdf.py)
MAX_DOCUMENT_ITEMS = 50
MAX_ITEM_VALUE = 5_000
MAX_DOCUMENT_TEXT = 20_000  # labels and values of all items together
MAX_ITEM_FIELDS = 50
MAX_PARAM_NAME = 100
MAX_EXECUTIONS = 1_000_000_000  # maxExecutions: a count, not a number of any size


def _param_names(value: dict[str, Any]) -> dict[str, Any]:
    """Param names are identifiers (CONTRACT 6): a long one is no name and is not echoed whole."""
    long = [name for name in value if len(name) > MAX_PARAM_NAME]
    if long:
        raise ValueError(f"{quote_input(long[0])} is not a param name (at most {MAX_PARAM_NAME} characters)")
    return value


class ActionRef(Strict):
    id: str
    userParams: Annotated[
        dict[str, Any],
        AfterValidator(_param_names),
        AfterValidator(reject_non_jcs),
        AfterValidator(one_line_strings),
    ] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _urn(cls, value: str) -> str:
        if not ACTION_URN_RE.fullmatch(value):
            raise ValueError("must be an action URN urn:via:action:<uuid>")
        return value


class DataItem(Strict):
    label: Text
    type: Annotated[str, Field(min_length=1, max_length=50), AfterValidator(one_line_text)]
    value: Annotated[str, Field(max_length=MAX_ITEM_VALUE), AfterValidator(multiline_text)]
    hidden: StrictBool = False  # true or false: never 0, 1 or "false"
    fields: Annotated[
        list[dict[str, Any]],
        Field(max_length=MAX_ITEM_FIELDS),
        AfterValidator(reject_non_jcs),
        AfterValidator(multiline_strings),
    ] = Field(default_factory=list)


class CredentialIn(Strict):
    type: Literal["POLICY", "DOCUMENT", "JSON"]
    name: Text
    scope: Annotated[str, Field(max_length=500), AfterValidator(one_line_text)] | None = None
    description: Annotated[str, Field(max_length=2000), AfterValidator(multiline_text)] | None = None
    internalId: Ref | None = None
    tags: Annotated[
        list[Annotated[str, Field(max_length=100), AfterValidator(one_line_text)]], Field(max_length=20)
    ] = Field(default_factory=list)
    action: ActionRef | None = None
    data: Annotated[list[DataItem], Field(min_length=1, max_length=MAX_DOCUMENT_ITEMS)] | None = None
    pdf: InlinePdf | None = Field(default=None, description=PDF_DOC)  # wire.inline_credentials
    json_: InlineJson | None = Field(default=None, alias="json", description=JSON_DOC)
    validFrom: AwareDatetime | None = None
    validUntil: AwareDatetime | None = None
    placements: PlacementsIn | None = None
    maxExecutions: Annotated[StrictInt, Field(ge=1, le=MAX_EXECUTIONS)] | None = Field(
        default=None,
        description=(
            "POLICY: the most times the mandate may be used, one use being one allowed verification; "
            "after the last use it is revoked by itself (reason `exhausted`). Omitted: unlimited."
        ),
    )

    @field_validator("maxExecutions", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> Any:
        """A whole number: 5 or 5.0 (JSON does not tell them apart), never true, "5" or 5.5."""
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _null_tags(cls, value: Any) -> Any:
        return [] if value is None else value

    @model_validator(mode="after")
    def _by_type(self) -> CredentialIn:
        problem = type_problem(self)
        if problem is not None:
            raise ValueError(problem)
        text = sum(len(item.label) + len(item.value) for item in self.data or ())
        if text > MAX_DOCUMENT_TEXT:
            raise ValueError(
                f"data holds {text} characters of labels and values; a document holds at "
                f"most {MAX_DOCUMENT_TEXT}"
            )
        if self.validFrom and self.validUntil and self.validUntil <= self.validFrom:
            raise ValueError("validUntil must be after validFrom")
        return self


class CreateRequestIn(Strict):
    contacts: Annotated[list[str | ContactIn], Field(min_length=1, max_length=100)]
    securityLevel: SecurityLevel
    credentials: Annotated[list[CredentialIn], Field(max_length=10)] = Field(default_factory=list)
    resourcesIds: Annotated[list[ApprovalId], Field(max_length=10)] = Field(default_factory=list)
    groupIds: Annotated[list[ApprovalId], Field(max_length=10)] = Field(default_factory=list)
    name: Text | None = None
    language: Language = Language.ENG
    redirectUrl: Annotated[str, Field(max_length=2048)] | None = None
    internalId: Ref | None = None
    authorizedDIDs: Annotated[list[Did], Field(max_length=20)] = Field(default_factory=list)
    iframe: IframeIn | None = None

    @field_validator("language", "authorizedDIDs", "credentials", "resourcesIds", "groupIds", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any, info: ValidationInfo) -> Any:
        """SDKs send absent optional fields as null: that means the default, not an error."""
        if value is None:
            return Language.ENG if info.field_name == "language" else []
        return value

    @field_validator("redirectUrl")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        """A well-formed https URL (http on a local host is refused in production by the route,
        which knows the environment), kept with its origin in canonical form (core.origins)."""
        if value is None:
            return None
        try:
            return check_url(value, allow_loopback_http=True)
        except BadOrigin as exc:
            raise ValueError(str(exc)) from exc

    def normalized_contacts(self) -> tuple[list[NormalContact], list[str]]:
        """Each contact normalized with its options, and a message per contact that is not valid."""
        return normalize_subjects([ContactIn(contact=c) if isinstance(c, str) else c for c in self.contacts])


# --- responses ----------------------------------------------------------------------------------


class ContactOut(BaseModel):
    id: str
    contact: str


class SubjectOrganization(BaseModel):
    contacts: list[str]


class SubjectOut(BaseModel):
    id: str = Field(description="The subject's DID")
    contact: str
    contacts: list[ContactOut]
    identityStatus: SubjectIdentity
    organization: SubjectOrganization
    createdAt: Timestamp
    internalId: str | None
    kyc: SubjectKyc
    signerQuality: str | None = Field(
        default=None,
        description="In which capacity the subject signs in this request (given, or their earlier one)",
    )


class DecisionOut(BaseModel):
    id: str = Field(description="urn:via:decision:<uuid>")
    contact: str
    accepted: bool
    decidedAt: Timestamp


class LimitUse(BaseModel):
    """A use limit of a mandate and its use in the current period (issue 31). An optional member
    that does not apply is absent, never null."""

    @model_serializer(mode="wrap")
    def _absent_not_null(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}

    name: str = Field(description="The action's limit name, or `maxExecutions` for the request's bound")
    kind: Literal["executions", "sum", "rate"]
    max: float
    used: float = Field(description="Used in the current period (or the mandate's life)")
    remaining: float
    param: str | SkipJsonSchema[None] = Field(default=None, description="A sum's execution param")
    period: Literal["P1D", "P1W", "P1M"] | SkipJsonSchema[None] = Field(
        default=None, description="A UTC calendar day, ISO week or month; absent: the mandate's life"
    )
    unit: str | SkipJsonSchema[None] = Field(default=None, description="A sum's unit")
    resetsAt: str | SkipJsonSchema[None] = Field(
        default=None,
        description="When the current period ends (UTC)",
        json_schema_extra={"format": "date-time"},
    )


class CredentialOut(BaseModel):
    id: str = Field(description="The mandate URN once issued, else the credential id")
    resourceType: Literal["POLICY", "DOCUMENT"]
    status: CredentialStatus
    w3cCredential: SignedMandate | SignedDocument | None = Field(
        description="Once issued: a POLICY credential's mandate form, a DOCUMENT's document form"
    )
    name: str
    description: str | None
    internalId: str | None
    tags: list[str]
    decisions: list[DecisionOut]
    scope: str | None
    action: PinnedAction | None = Field(description="POLICY: the pinned action version and userParams")
    data: list[DocumentItemJson] | None = Field(description="DOCUMENT: its items")
    validFrom: Timestamp | None
    validUntil: Timestamp | None
    placements: PlacementsOut = []
    maxExecutions: int | None = Field(default=None, description="POLICY: the request's bound on uses")
    executionsRemaining: int | None = Field(
        default=None,
        description=(
            "Uses left under maxExecutions and the action's executions limits (the smaller): null "
            "when unlimited, 0 when spent (the mandate then revoked itself)"
        ),
    )
    limits: list[LimitUse] = Field(
        default_factory=list, description="Each use limit with its use in the current period"
    )


class RequestOut(BaseModel):
    id: str = Field(description="24 lower-case hex characters")
    securityLevel: SecurityLevel
    createdAt: Timestamp
    subjects: list[SubjectOut]
    credentials: list[CredentialOut]
    name: str | None
    language: Language | None
    redirectUrl: str | None
    internalId: str | None
    canceledAt: Timestamp | None
    status: RequestStatus
    expiresAt: Timestamp
    authorizedDIDs: list[str] = Field(description="The organization's DID first")
    resentFrom: str | None = Field(
        default=None, description="The expired, canceled or rejected request this one was sent again from"
    )
    resentAs: str | None = Field(default=None, description="The request this one was sent again as")


class SubjectListItem(BaseModel):
    contact: str
    did: str
    internalId: str | None
    name: None = Field(description="Always null: subjects have no name here")
    # beside SPEC.md's four: a list shows where each subject's identity stands
    identityStatus: SubjectIdentity
    kyc: SubjectKyc


class CredentialListItem(BaseModel):
    id: str = Field(description="The mandate URN once issued, else the credential id")
    resourceType: Literal["POLICY", "DOCUMENT"]
    status: CredentialStatus
    name: str
    internalId: str | None


class RequestListItem(BaseModel):
    id: str
    securityLevel: SecurityLevel
    createdAt: Timestamp
    name: str | None
    language: Language | None
    redirectUrl: str | None
    internalId: str | None
    canceledAt: Timestamp | None
    status: RequestStatus
    subjects: list[SubjectListItem]
    credentials: list[CredentialListItem]


class RequestEnvelope(BaseModel):
    data: RequestOut


class RequestPage(BaseModel):
    data: list[RequestListItem]
    totalPages: int


class Success(BaseModel):
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    success: Literal[True] = True


class ErrorOut(BaseModel):
    """Every error answer (CONTRACT 2); some add members."""

    statusCode: int = Field(description="The HTTP status")
    message: str | list[str] = Field(description="What went wrong, a line per problem")
    error: str = Field(description="The HTTP reason phrase, e.g. Bad Request")


class CodeUndelivered(ErrorOut):
    code: str | None = Field(description="UNDELIVERABLE or INVALID_PHONE_NUMBER")


class ApprovalLink(BaseModel):
    url: str = Field(description="The subject's approval page, as their message links it")
    iframeUrl: str | SkipJsonSchema[None] = Field(
        default=None, description="With `parent`: the same flow, for an iframe in a page of that origin"
    )


class ApprovalLinkEnvelope(BaseModel):
    data: ApprovalLink
