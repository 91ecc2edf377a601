"""Users (``POST /user``, ``GET /user``; issue 36): what an organization imports about the people it
asks for approvals, and what it reads back.

A user is the organization's subject of that contact (``store.tables.Subject``): importing one
creates the subject when no request has yet, and a later request naming the contact reaches the
same subject. Each item of a ``POST /user`` body is checked on its own (``CreateSubjectIn``): an
invalid item is answered in its place (status 400 and why) and stores nothing, the others go on.

The identity is only ever compared with an identity check's result (``wire.identity_match``); it
is never answered.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

import pycountry
from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, field_validator, model_validator

from core.kinds import SubjectIdentity, SubjectKyc
from wire.contacts import normalize_contact
from wire.identity_match import DocumentIdText, normalize_document_id
from wire.models import Ref, Strict, Timestamp
from wire.texts import multiline_text, one_line_strings, one_line_text

MAX_USERS = 100  # items of one POST /user
MAX_EXTRA_CONTACTS = 10
MAX_PHOTO = 700_000  # characters of base64 (about 512 KiB): the body itself is at most 1 MiB
MAX_EXTRA = 2_000  # characters of `extra` as JSON

# the per-item answers (the SDK's CreateSubjectEntity): 201 with one of three messages, 400 (why),
# 409 (the contact twice in the body), 410 (a reference that names another user)
CREATED, UPDATED, UNCHANGED = "Subject created", "Subject updated", "Subject unchanged"
DUPLICATE_CONTACT = "The contact appears more than once in this request"
ELSEWHERE = "internalId {} already names another user of this organization"
TWICE = "internalId {} is given to another contact in this request"

_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def _iso_date(value: Any) -> Any:
    """A date is YYYY-MM-DD text: pydantic would also read a number as seconds since 1970."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _DATE.match(value):
        raise ValueError("must be a date YYYY-MM-DD")
    return value


def _country(value: str) -> str:
    code = "".join(value.split()).upper()  # spaces are removed (as the releases document)
    if len(code) != 3 or pycountry.countries.get(alpha_3=code) is None:
        raise ValueError("must be an ISO 3166-1 alpha-3 country code (e.g. PRT, USA, GBR)")
    return code


def _past(value: date) -> date:
    if value >= datetime.now(UTC).date():
        raise ValueError("must be a date in the past")
    return value


def _base64(value: str) -> str:
    if len(value) % 4 or not _BASE64.fullmatch(value):
        raise ValueError("must be base64 (no data URI, no URL)")
    return value


def _small_json(value: dict[str, Any]) -> dict[str, Any]:
    if len(json.dumps(value, ensure_ascii=False)) > MAX_EXTRA:
        raise ValueError(f"must be at most {MAX_EXTRA} characters as JSON")
    return value


Line = Annotated[str, Field(min_length=1, max_length=50), AfterValidator(one_line_text)]
IsoDate = Annotated[date, BeforeValidator(_iso_date)]


class IdentityIn(Strict):
    """The person's identity as the organization knows it (the releases' IdentityDto): matched with
    the document of an identity check, never shown. Optional members the releases type as objects
    (gender, numbers, photo ...) are text here."""

    fullName: Annotated[str, Field(min_length=1, max_length=200), AfterValidator(one_line_text)]
    birth: Annotated[IsoDate, AfterValidator(_past)] = Field(description="YYYY-MM-DD, in the past")
    docId: DocumentIdText
    fullDocId: Annotated[str, Field(min_length=1, max_length=128), AfterValidator(one_line_text)] | None = (
        None
    )
    countryAlpha3: Annotated[str, Field(max_length=10), AfterValidator(_country)]
    gender: Literal["M", "F", "O"] | None = None
    expiresAt: IsoDate | None = None
    issueDate: IsoDate | None = None
    taxNumber: Line | None = None
    healthNumber: Line | None = None
    socialSecurityNumber: Line | None = None
    photo: Annotated[str, Field(min_length=4, max_length=MAX_PHOTO), AfterValidator(_base64)] | None = None
    height: Annotated[float, Field(gt=0, lt=300)] | None = None
    documentType: Line | None = None
    documentDiscriminator: Line | None = None
    placeOfBirth: Line | None = None
    mrzText: Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(multiline_text)] | None = (
        None
    )
    extra: Annotated[dict[str, Any], AfterValidator(_small_json), AfterValidator(one_line_strings)] | None = (
        None
    )

    @model_validator(mode="after")
    def _consistent(self) -> IdentityIn:
        if self.fullDocId is not None and not normalize_document_id(self.fullDocId).startswith(
            normalize_document_id(self.docId)
        ):
            raise ValueError("fullDocId must start with docId")
        if self.issueDate and self.issueDate < self.birth:
            raise ValueError("issueDate must not be before birth")
        if self.issueDate and self.expiresAt and self.expiresAt <= self.issueDate:
            raise ValueError("expiresAt must be after issueDate")
        return self


class CreateSubjectIn(Strict):
    """One user to import: the contact that identifies them (normalized as every contact), the
    organization's reference, its extra contacts (replacing earlier ones) and their identity
    (replacing an earlier one). Absent members leave what was stored; ``null`` too."""

    contact: Annotated[str, Field(min_length=1, max_length=320)]
    internalId: Ref | None = None
    extraContacts: (
        Annotated[list[Annotated[str, Field(max_length=320)]], Field(max_length=MAX_EXTRA_CONTACTS)] | None
    ) = None
    identity: IdentityIn | None = None

    @field_validator("contact")
    @classmethod
    def _contact(cls, value: str) -> str:
        return normalize_contact(value)[0]

    @field_validator("extraContacts")
    @classmethod
    def _extra(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        out: list[str] = []
        for i, raw in enumerate(value):
            try:
                contact = normalize_contact(raw)[0]
            except ValueError as exc:
                raise ValueError(f"{i}: {exc}") from exc
            if contact not in out:
                out.append(contact)
        return out

    def kind(self) -> str:
        return normalize_contact(self.contact)[1]


class PartialSubjectOut(BaseModel):
    id: str | None = Field(default=None, description="The user's DID (absent when the item failed)")
    contact: str | None = None
    internalId: str | None = None


class CreateSubjectOut(BaseModel):
    status: Literal[201, 400, 409, 410] = Field(
        description=(
            "201: created or updated (the message says which: `Subject created`, `Subject updated`, "
            "`Subject unchanged`); 400: the item is invalid (the message says why); 409: its "
            "contact appears more than once in the body; 410: its internalId names another user"
        )
    )
    message: str
    user: PartialSubjectOut


class UserContactOut(BaseModel):
    id: str = Field(description="The contact's DID (the user's: one contact per user)")
    contact: str


class UserOrganizationOut(BaseModel):
    contacts: list[str] = Field(description="The extra contacts the organization gave (never contacted)")


class UserOut(BaseModel):
    """A user as the organization sees it; the imported identity is never shown, only whether one
    is held (``hasIdentity``)."""

    id: str = Field(description="The user's DID (GET /user?id=)")
    contacts: list[UserContactOut]
    identityStatus: SubjectIdentity = Field(description="The last identity result of any kind")
    kyc: SubjectKyc = Field(description="The platform's identity check")
    hasIdentity: bool = Field(description="Whether the organization imported an identity (POST /user)")
    internalId: str | None
    organization: UserOrganizationOut
    createdAt: Timestamp


# the input models the OpenAPI document lists as components (POST /user reads its items itself)
DOCUMENTED_INPUTS: tuple[type[BaseModel], ...] = (CreateSubjectIn,)
