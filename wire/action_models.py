"""Wire models of the action catalogue's answers (``GET /actions``, its versions)."""

from __future__ import annotations

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from wire.models import Timestamp
from wire.signed import ActionLimitJson, ActionParamJson, ActionRuleJson


class ActionVersionOut(BaseModel):
    """A published version: its canonical content (what `digestSRI` covers) and when it was published."""

    id: str = Field(description="urn:via:action-version:<uuid>")
    number: int
    digestSRI: str
    publishedAt: Timestamp
    name: str
    description: str | SkipJsonSchema[None] = None  # absent when the version has none
    executionParams: list[ActionParamJson]
    userParams: list[ActionParamJson]
    rules: list[ActionRuleJson]
    limits: list[ActionLimitJson] | SkipJsonSchema[None] = Field(
        default=None,
        description="The version's use limits (issue 31); absent when it declares none, as in its content",
    )


class ActionVersionOfAction(ActionVersionOut):
    actionId: str


class ActionVersionPage(BaseModel):
    data: list[ActionVersionOfAction]
    totalPages: int


class ActionOut(BaseModel):
    id: str
    name: str
    description: str | None
    createdAt: Timestamp
    currentVersion: str
    versions: list[ActionVersionOut]


class ActionEnvelope(BaseModel):
    data: ActionOut


class ActionList(BaseModel):
    data: list[ActionOut]
    totalPages: int
