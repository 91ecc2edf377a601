"""Approvals (the SDK's "resources") and workflows (its "groups"): what an approval's spec holds by
its type, and how the API shows them in the newest version (docs/approvals.md).

An approval is FORM (fields the subject fills in), DOCUMENT (a PDF, given beside the spec),
JSON (an object) or POLICY (an action reference, as ``CredentialIn.action``). Every bound is here,
checked where a spec enters (the command line, the dashboard) and again by ``services.approvals``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from core.text import quote_input
from wire.inline_credentials import MAX_JSON_LEVELS as MAX_JSON_LEVELS
from wire.inline_credentials import MAX_JSON_TEXT as MAX_JSON_TEXT
from wire.inline_credentials import json_object
from wire.models import ActionRef, Ref, Strict, Text, Timestamp
from wire.numbers import reject_non_jcs
from wire.placements import PlacementBase, whole_number
from wire.texts import multiline_strings, multiline_text

APPROVAL_TYPES = ("FORM", "DOCUMENT", "JSON", "POLICY")
ApprovalType = Literal["FORM", "DOCUMENT", "JSON", "POLICY"]
FieldType = Literal["text", "number", "date", "boolean", "choice"]
FIELD_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,49}$")
MAX_FORM_FIELDS = 30
MAX_CHOICES = 50
MAX_TEXT_VALUE = 400  # a text field's longest value (and its maxLength's top): 30 fit a document
MAX_NUMBER = 1e15  # a number field's bounds and values: exact in a double, so JCS-safe
MAX_PLACEMENTS = 50
MAX_PDF_BYTES = 5 * 1024 * 1024
MAX_PDF_PAGES = 200
MAX_WORKFLOW_APPROVALS = 10  # a request holds at most 10 credentials
MAX_DESCRIPTION = 2_000


class FormField(Strict):
    """One field of a FORM: ``min``/``max`` bound a number's value, ``maxLength`` a text's length;
    a choice lists its ``options``."""

    name: Annotated[str, Field(min_length=1, max_length=50)]
    label: Text
    type: FieldType
    required: StrictBool = False
    options: Annotated[list[Text], Field(min_length=1, max_length=MAX_CHOICES)] | None = None
    min: float | None = Field(default=None, ge=-MAX_NUMBER, le=MAX_NUMBER)
    max: float | None = Field(default=None, ge=-MAX_NUMBER, le=MAX_NUMBER)
    maxLength: Annotated[StrictInt, Field(ge=1, le=MAX_TEXT_VALUE)] | None = None

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not FIELD_NAME_RE.fullmatch(value):
            raise ValueError("must be a letter then letters, digits or _ (at most 50)")
        return value

    @model_validator(mode="after")
    def _by_type(self) -> FormField:
        if (self.type == "choice") != (self.options is not None):
            raise ValueError("a choice field, and only a choice field, lists options")
        if self.options is not None and len(set(self.options)) != len(self.options):
            raise ValueError("a choice's options are distinct")
        if self.type != "number" and (self.min is not None or self.max is not None):
            raise ValueError("min and max bound a number field only")
        if self.type != "text" and self.maxLength is not None:
            raise ValueError("maxLength bounds a text field only")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min must not be above max")
        return self


MAX_SIGNER = 99  # a request names at most 100 contacts (``CreateRequestIn.contacts``)


class ApprovalPlacement(PlacementBase):
    """Where a signer's mark goes on a DOCUMENT approval's PDF: a credential placement
    (``wire.placements``: percent of the page from its top-left corner, the same types and
    ``identityType`` rule) whose signer is named by position among the contacts of the request
    that takes the approval (``signer``, from 0), not by contact. ``pageIndex`` is checked against
    the PDF's pages when the version is made, ``signer`` against each request's contacts."""

    signer: Annotated[StrictInt, BeforeValidator(whole_number), Field(ge=0, le=MAX_SIGNER)] = Field(
        default=0, description="Which of the request's contacts signs here, counted from 0 (default 0)"
    )

    def kept(self) -> dict[str, Any]:
        """As a version keeps it: ``{signer, type, identityType?, x, y, width, height, pageIndex}``."""
        return {"signer": self.signer} | self.drawn()


class ApprovalSpec(Strict):
    """An approval as written in a spec file (``mandatum approval create|version``): its type's
    member only (``fields``, ``json``, ``action``, or ``placements`` beside the PDF)."""

    name: Text
    type: ApprovalType
    description: Annotated[str, Field(max_length=MAX_DESCRIPTION)] | None = None
    internalId: Ref | None = None
    fields: Annotated[list[FormField], Field(min_length=1, max_length=MAX_FORM_FIELDS)] | None = None
    json_: dict[str, Any] | None = Field(default=None, alias="json")
    action: ActionRef | None = None
    placements: Annotated[list[ApprovalPlacement], Field(max_length=MAX_PLACEMENTS)] | None = None

    model_config = {"extra": "forbid", "populate_by_name": True}

    @field_validator("description")
    @classmethod
    def _description(cls, value: str | None) -> str | None:
        return None if value is None else multiline_text(value)

    @field_validator("json_")
    @classmethod
    def _json(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        return json_object(multiline_strings(reject_non_jcs(value)))

    @model_validator(mode="after")
    def _by_type(self) -> ApprovalSpec:
        wanted = {"FORM": "fields", "JSON": "json_", "POLICY": "action", "DOCUMENT": "placements"}
        given = [k for k in wanted.values() if getattr(self, k) is not None]
        extra = [k for k in given if k != wanted[self.type]]
        if extra:
            names = ", ".join(k.rstrip("_") for k in extra)
            raise ValueError(f"a {self.type} approval does not take {names}")
        if self.type != "DOCUMENT" and wanted[self.type] not in given:
            raise ValueError(f"a {self.type} approval needs {wanted[self.type].rstrip('_')}")
        if self.fields is not None:
            field_names = [f.name for f in self.fields]
            twice = sorted({n for n in field_names if field_names.count(n) > 1})
            if twice:
                raise ValueError(f"field names are distinct: {quote_input(twice[0])} is given twice")
        return self

    def content(self) -> dict[str, Any]:
        """What a version stores of its type (a DOCUMENT's PDF is added by the service)."""
        if self.type == "FORM":
            return {"fields": [f.model_dump(exclude_none=True) for f in self.fields or ()]}
        if self.type == "JSON":
            return {"json": self.json_}
        if self.type == "POLICY":
            assert self.action is not None
            return {"action": self.action.model_dump()}
        return {"placements": [p.kept() for p in self.placements or ()]}


class WorkflowSpec(Strict):
    """A workflow as written (``mandatum workflow create``): its approvals in order."""

    name: Text
    description: Annotated[str, Field(max_length=MAX_DESCRIPTION)] | None = None
    approvals: Annotated[
        list[Annotated[str, Field(pattern=r"^[0-9a-f]{24}$")]],
        Field(min_length=1, max_length=MAX_WORKFLOW_APPROVALS),
    ]

    @field_validator("description")
    @classmethod
    def _description(cls, value: str | None) -> str | None:
        return None if value is None else multiline_text(value)

    @field_validator("approvals")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("an approval is listed once")
        return value


# --- answers (newest version) --------------------------------------------------------------------


class DocumentPdf(BaseModel):
    url: str = Field(description="Where the caller fetches this version's PDF (signed like any call)")
    digestSRI: str = Field(description="SHA-256 of the PDF's bytes; signed into each credential made of it")
    size: int = Field(description="Bytes")
    pages: int


class ApprovalContent(BaseModel):
    """The current version's content: the member of the approval's type."""

    fields: list[dict[str, Any]] | SkipJsonSchema[None] = Field(
        default=None, description="FORM: {name, label, type, required, options?, min?, max?, maxLength?}"
    )
    json_: dict[str, Any] | SkipJsonSchema[None] = Field(default=None, alias="json", description="JSON")
    action: dict[str, Any] | SkipJsonSchema[None] = Field(
        default=None, description="POLICY: {id, userParams}, as a credential's action"
    )
    pdf: DocumentPdf | SkipJsonSchema[None] = Field(default=None, description="DOCUMENT")
    placements: list[ApprovalPlacement] | SkipJsonSchema[None] = Field(
        default=None,
        description=(
            "DOCUMENT: where each signer's mark goes (percent of the page from its top-left corner; "
            "signer: the request's contact by position, from 0), identityType on IDENTITY_FIELD only"
        ),
    )


class ApprovalOut(BaseModel):
    id: str = Field(description="24 lower-case hex characters")
    name: str
    type: ApprovalType
    active: bool = Field(description="false once archived: only active approvals can be requested")
    internalId: str | None
    description: str | None
    workflowIds: list[str] = Field(description="The workflows that list it")
    version: int = Field(description="The current version's number: what POST /request takes")
    content: ApprovalContent
    createdAt: Timestamp
    updatedAt: Timestamp


class ApprovalPage(BaseModel):
    data: list[ApprovalOut]
    totalPages: int


class ApprovalSummary(BaseModel):
    id: str
    name: str
    type: ApprovalType
    active: bool
    internalId: str | None


class WorkflowOut(BaseModel):
    id: str
    name: str
    description: str | None
    active: bool = Field(description="false once archived")
    approvals: list[ApprovalSummary] = Field(description="In the order a request takes them")
    createdAt: Timestamp
    updatedAt: Timestamp


class WorkflowPage(BaseModel):
    data: list[WorkflowOut]
    totalPages: int
