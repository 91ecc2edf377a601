"""Wire models of the presentation and verify endpoints (CONTRACT 4 and 5)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from core.text import shown
from policy.actions import MAX_PARAMS
from policy.params import MAX_ITEMS_CEILING, MAX_LENGTH_CEILING
from wire.models import Did, ErrorOut
from wire.signed import SignedPresentation, SignedReceipt

MAX_EXECUTION_PARAMS = MAX_PARAMS  # no action declares more (policy.actions)


class PresentationIn(BaseModel):
    """Body of POST /credential/{mandateId}/presentation; it may also be empty."""

    model_config = ConfigDict(extra="forbid")
    targetVerifier: Annotated[Did, Field(max_length=2048)] | None = Field(
        default=None, description="DID of the intended verifier: the VP is bound to it (proof.domain)"
    )


class PresentationData(BaseModel):
    presentation: SignedPresentation = Field(description="The signed VP")
    receipt: SignedReceipt = Field(description="The signed PRESENTATION_ISSUED receipt")


class PresentationEnvelope(BaseModel):
    data: PresentationData


class PresentationDenied(ErrorOut):
    reason: Literal["credential_revoked"] | SkipJsonSchema[None] = Field(
        default=None, description="Present when the mandate is revoked"
    )


class VerifyIn(BaseModel):
    """Body of POST /credential/verify."""

    model_config = ConfigDict(extra="forbid")
    presentation: dict[str, Any] = Field(description="The VP from the presentation endpoint")
    executionParams: dict[str, Any] | None = Field(
        default=None,
        description=(
            "Exactly the pinned action version's executionParams, each within its declared maxLength "
            "and maxItems (else a deny, `execution_params_invalid`). Whatever the action declares, at "
            f"most {MAX_EXECUTION_PARAMS} names, arrays of at most {MAX_ITEMS_CEILING:,} items and "
            f"strings of at most {MAX_LENGTH_CEILING:,} characters are read: beyond that the body is "
            "refused (400) before anything is checked or recorded"
        ),
        json_schema_extra={"maxProperties": MAX_EXECUTION_PARAMS},
    )

    @field_validator("presentation", "executionParams")
    @classmethod
    def _finite(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        """NaN and Infinity are not JSON (Python's parser lets them through): such a body is
        malformed, and it could not be recorded either. In a presentation it could never have been
        signed (JCS refuses it), so it is refused here rather than decided on."""
        if value is not None and not _all_finite(value):
            raise ValueError("must be JSON: NaN and Infinity are not numbers")
        return value

    @field_validator("executionParams")
    @classmethod
    def _within_ceilings(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        """The sizes no declaration may exceed (``policy.params``' ceilings), so no value is read
        past them: the message names the param."""
        if value is None:
            return value
        if len(value) > MAX_EXECUTION_PARAMS:
            raise ValueError(f"has {len(value):,} names, more than the {MAX_EXECUTION_PARAMS} allowed")
        for name, item in value.items():
            problem = _over_ceiling(item)
            if problem:
                raise ValueError(f"{shown(name)} {problem}")
        return value


def _over_ceiling(value: Any) -> str | None:
    if isinstance(value, str) and len(value) > MAX_LENGTH_CEILING:
        return f"is {len(value):,} characters long, more than the {MAX_LENGTH_CEILING:,} any param may be"
    if isinstance(value, list):
        if len(value) > MAX_ITEMS_CEILING:
            return f"has {len(value):,} items, more than the {MAX_ITEMS_CEILING:,} any param may have"
        for index, item in enumerate(value):
            if isinstance(item, str) and len(item) > MAX_LENGTH_CEILING:
                return (
                    f"item {index} is {len(item):,} characters long, more than the "
                    f"{MAX_LENGTH_CEILING:,} any param may be"
                )
    return None


def _all_finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_all_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_all_finite(v) for v in value)
    return True


class EvaluationOut(BaseModel):
    rule: str
    expression: str
    result: Literal["pass", "fail", "error"]
    reason: str | SkipJsonSchema[None] = Field(default=None, description="Why a rule errored")


DenyReason = Literal[
    "vp_proof_invalid",
    "vp_signature_invalid",
    "vp_signer_unknown",
    "credential_signature_invalid",
    "credential_not_found",
    "not_yet_valid",
    "expired",
    "credential_revoked",
    "verifier_not_authorized",
    "vp_domain_mismatch",
    "vp_already_used",
    "execution_params_invalid",
    "rule_failed",
    "rule_limit_exceeded",
    "limit_exceeded",
]  # CONTRACT 5, in the order verify checks them (services.verification.MESSAGES)


class LimitUseOut(BaseModel):
    """One use limit of the mandate as this verification found it (issue 31): after this use on an
    allow, as it stands (nothing used) on a deny."""

    name: str = Field(description="The limit's name; `maxExecutions` for the request's own bound")
    kind: Literal["executions", "sum", "rate"]
    max: float = Field(description="The bound, as signed into the mandate")
    used: float = Field(description="Used in the current period (life, day, week or month)")
    remaining: float = Field(description="Room left in the current period")
    amount: float = Field(description="What this verification counts: 1, or the summed param's value")
    result: Literal["pass", "fail"]
    param: str | SkipJsonSchema[None] = Field(default=None, description="A sum's execution param")
    period: Literal["P1D", "P1W", "P1M"] | SkipJsonSchema[None] = Field(
        default=None, description="UTC calendar day, ISO week or month; absent: the mandate's life"
    )
    unit: str | SkipJsonSchema[None] = Field(default=None, description="A sum's unit, as declared")
    resetsAt: str | SkipJsonSchema[None] = Field(default=None, description="When the period ends (UTC)")
    reason: str | SkipJsonSchema[None] = Field(default=None, description="Why it does not fit")


class VerifyAllowed(BaseModel):
    decision: Literal["allow"]
    credentialId: str = Field(description="The verified mandate's URN")
    evaluations: list[EvaluationOut] = Field(description="One per rule of the pinned action version")
    limits: list[LimitUseOut] = Field(
        default_factory=list, description="Each use limit of the mandate with its room after this use"
    )
    receipt: SignedReceipt = Field(description="The signed VERIFICATION_APPROVED receipt")


class VerifyDenied(ErrorOut):
    decision: Literal["deny"]
    reason: DenyReason
    credentialId: str = Field(description="The mandate's URN, or empty when the VP names none")
    evaluations: list[EvaluationOut] = Field(description="Empty when the denial came before the rules")
    limits: list[LimitUseOut] = Field(
        default_factory=list,
        description="With `limit_exceeded`: each use limit, the one that has no room marked `fail`",
    )
    receipt: SignedReceipt = Field(description="The signed VERIFICATION_DENIED receipt")
