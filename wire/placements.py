"""A DOCUMENT credential's ``placements``: where each signer's signature, initials, identity field
or decision date goes on the pages of the document's PDF (``api/pdf.py``).

A placement is ``{contact, type, identityType?, x, y, width, height, pageIndex}``: ``contact`` is
one of the request's contacts (checked against them by ``services.request_validation``, which also
checks ``pageIndex`` against the PDF's page count); ``x``, ``y``, ``width`` and ``height`` are
percentages of the page's width and height, measured from its top-left corner (the y axis points
down, as in the hosted SDK's editor), and the rectangle lies on the page. ``pageIndex`` counts from 0.

Types offered: ``SIGNATURE``, ``INITIALS``, ``IDENTITY_FIELD`` (with ``identityType``, one of
``IDENTITY_FIELDS``; ``FULL_NAME`` when omitted) and ``DATE`` (the date of the signer's decision).
``OPEN_TEXT``, ``NUMERIC`` and ``CHECKBOX`` (values the subject would type on the page) are in the
releases' list but not offered: refused with a 400 saying so.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from wire.texts import reject_nul

MAX_PLACEMENTS = 50  # per credential: each is drawn on every rendering of the PDF
MAX_PAGE_INDEX = 999  # far beyond any document's PDF (its text is capped, wire/models.py)
EDGE_TOLERANCE = 1e-9  # x + width may round to 100.00000000000001


class PlacementType(StrEnum):
    SIGNATURE = "SIGNATURE"
    INITIALS = "INITIALS"
    IDENTITY_FIELD = "IDENTITY_FIELD"
    OPEN_TEXT = "OPEN_TEXT"
    NUMERIC = "NUMERIC"
    DATE = "DATE"
    CHECKBOX = "CHECKBOX"


OFFERED_TYPES = (
    PlacementType.SIGNATURE,
    PlacementType.INITIALS,
    PlacementType.IDENTITY_FIELD,
    PlacementType.DATE,
)


class IdentityField(StrEnum):
    """Which verified identity field an ``IDENTITY_FIELD`` placement shows (the names of 1.2.0's
    ``IdentityDto``: fullName, birth, docId, countryAlpha3)."""

    FULL_NAME = "FULL_NAME"
    BIRTH_DATE = "BIRTH_DATE"
    DOCUMENT_NUMBER = "DOCUMENT_NUMBER"
    COUNTRY = "COUNTRY"


IDENTITY_FIELDS = tuple(IdentityField)


def _number(value: Any) -> Any:
    """A JSON number: never true, "10" or NaN (pydantic would read the first two as numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return float(value)


def whole_number(value: Any) -> Any:
    """A whole number: 2 or 2.0 (JSON does not tell them apart; 1.2.0 types it as a number)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Percent = Annotated[float, BeforeValidator(_number), Field(ge=0, le=100)]


class PlacementBase(BaseModel):
    """Where and what a placement draws, whoever signs it: its type and its rectangle on a page
    (see the module doc). ``PlacementIn`` names its signer by contact; an approval's placement
    (``wire.approvals.ApprovalPlacement``) by their position among a request's contacts."""

    model_config = ConfigDict(extra="forbid")

    type: PlacementType = Field(
        description="SIGNATURE, INITIALS, IDENTITY_FIELD or DATE (OPEN_TEXT, NUMERIC, CHECKBOX: not offered)"
    )
    identityType: IdentityField | None = Field(
        default=None, description="IDENTITY_FIELD only: which identity field (FULL_NAME when omitted)"
    )
    x: Percent = Field(description="Left edge, percent of the page's width from its left")
    y: Percent = Field(description="Top edge, percent of the page's height from its top (y points down)")
    width: Percent = Field(description="Percent of the page's width, more than 0")
    height: Percent = Field(description="Percent of the page's height, more than 0")
    pageIndex: Annotated[StrictInt, BeforeValidator(whole_number), Field(ge=0, le=MAX_PAGE_INDEX)] = Field(
        description="The page, counted from 0; less than the document PDF's page count"
    )

    @model_validator(mode="after")
    def _on_the_page(self) -> PlacementBase:
        if self.type not in OFFERED_TYPES:
            offered = ", ".join(OFFERED_TYPES)
            raise ValueError(
                f"type {self.type.value} is not offered: a placement is one of {offered} "
                "(values the subject would type on the page are not taken)"
            )
        if self.identityType is not None and self.type != PlacementType.IDENTITY_FIELD:
            raise ValueError(f"identityType is for an IDENTITY_FIELD placement, not {self.type.value}")
        if self.width <= 0 or self.height <= 0:
            raise ValueError("width and height must be more than 0")
        if self.x + self.width > 100 + EDGE_TOLERANCE:
            raise ValueError(
                f"x + width is {self.x + self.width:g}: the rectangle must end on the page (<= 100)"
            )
        if self.y + self.height > 100 + EDGE_TOLERANCE:
            raise ValueError(
                f"y + height is {self.y + self.height:g}: the rectangle must end on the page (<= 100)"
            )
        return self

    def stored(self, contact: str) -> dict[str, Any]:
        """As kept on the credential, signed by ``contact`` (normalized)."""
        return {"contact": contact} | self.drawn()

    def drawn(self) -> dict[str, Any]:
        """What is drawn where, without its signer: ``identityType`` only on IDENTITY_FIELD."""
        out: dict[str, Any] = {"type": self.type.value}
        if self.type == PlacementType.IDENTITY_FIELD:
            out["identityType"] = (self.identityType or IdentityField.FULL_NAME).value
        out |= {"x": self.x, "y": self.y, "width": self.width, "height": self.height}
        return out | {"pageIndex": self.pageIndex}


class PlacementIn(PlacementBase):
    """One placement as the integrator sends it (see the module doc)."""

    contact: Annotated[str, Field(min_length=1, max_length=320)] = Field(
        description="One of the request's contacts (e-mail address or E.164 phone number)"
    )

    @field_validator("contact")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        reject_nul(value)
        return value


class PlacementOut(BaseModel):
    """A placement as kept (``contact`` normalized; ``identityType`` only on IDENTITY_FIELD)."""

    contact: str
    type: PlacementType
    identityType: IdentityField | SkipJsonSchema[None] = None
    x: float
    y: float
    width: float
    height: float
    pageIndex: int

    @model_serializer(mode="wrap")
    def _absent_not_null(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


def _document_only(value: list[PlacementIn], info: ValidationInfo) -> list[PlacementIn]:
    """Placements are a DOCUMENT's (a credential's ``type`` is read before its ``placements``)."""
    if value and info.data.get("type") != "DOCUMENT":
        raise ValueError("placements put signatures on a document's pages: a POLICY credential has none")
    return value


PlacementsIn = Annotated[
    list[PlacementIn],
    AfterValidator(_document_only),
    Field(
        max_length=MAX_PLACEMENTS,
        description=(
            "DOCUMENT: where each signer's signature, initials, identity field or decision date is "
            "drawn on the pages of the document's PDF"
        ),
    ),
]
PlacementsOut = Annotated[
    list[PlacementOut], Field(description="DOCUMENT: where each signer's marks are drawn on the PDF's pages")
]
