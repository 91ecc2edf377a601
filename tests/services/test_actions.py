"""services.actions: create, add a version, publish, by a named actor; publish refusals list every
problem."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from core.actors import Actor
from core.kinds import ActionVersionStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from policy.actions import ActionSpec, parse_action_spec
from services import actions
from services.context import Context
from services.errors import Conflict, NotFound
from tests.support.helpers import Credentials

BOB = Actor.operator("bob")
SPEC: dict[str, Any] = {
    "name": "Pay",
    "userParams": [{"name": "max", "type": "number"}],
    "executionParams": [{"name": "amount", "type": "number"}],
    "rules": [{"name": "under", "expression": "executionParams.amount <= userParams.max"}],
}


def parse_spec(raw: Any) -> ActionSpec:
    spec, errors = parse_action_spec(raw)
    assert spec is not None, errors
    return spec


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher) -> Context:
    return Context(settings, engine, cipher)


def test_create_add_and_publish(ctx: Context, org: Credentials) -> None:
    action, first = actions.create(ctx, BOB, org.organization_id, parse_spec(SPEC))
    assert (first.number, first.status) == (1, ActionVersionStatus.DRAFT)
    published = actions.publish(ctx, BOB, first.id, org.organization_id)
    assert published.status == ActionVersionStatus.PUBLISHED and published.digest_sri
    second = actions.add_version(
        ctx, BOB, org.organization_id, action.id, parse_spec({**SPEC, "name": "Pay 2"})
    )
    assert actions.publish_newest_draft(ctx, BOB, org.organization_id, action.id).id == second.id
    with pytest.raises(Conflict, match="no draft version"):
        actions.publish_newest_draft(ctx, BOB, org.organization_id, action.id)
    listed = {
        v.action.id: [x.number for x in v.versions] for v in actions.list_actions(ctx, org.organization_id)
    }
    assert listed[action.id] == [1, 2]


def test_publish_refusals_list_every_problem(ctx: Context, org: Credentials) -> None:
    broken = {
        **SPEC,
        "rules": [
            {"name": "undeclared", "expression": "executionParams.nope > 1"},
            {"name": "notBoolean", "expression": "executionParams.amount + 1"},
        ],
    }
    _, draft = actions.create(ctx, BOB, org.organization_id, parse_spec(broken))
    with pytest.raises(actions.PublishRefused) as refused:
        actions.publish(ctx, BOB, draft.id, org.organization_id)
    assert len(refused.value.problems) >= 2
    with pytest.raises(NotFound):
        unknown = "urn:via:action:00000000-0000-4000-8000-000000000000"
        actions.add_version(ctx, BOB, org.organization_id, unknown, parse_spec(SPEC))
