"""Action specs for the tests: the rent action, its published version."""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy import Engine

from policy.actions import ActionSpec, parse_action_spec
from store import actions

RENT: dict[str, Any] = {
    "name": "Pay rent",
    "description": "Pay the monthly rent to an approved payee",
    "executionParams": [
        {"name": "amount", "type": "number", "description": "Amount to pay"},
        {"name": "payee", "type": "string"},
    ],
    "userParams": [
        {"name": "maxAmount", "type": "number", "description": "Largest payment"},
        {"name": "payees", "type": "array<string>", "default": []},
    ],
    "rules": [
        {
            "name": "underMax",
            "description": "Never more than approved",
            "expression": "executionParams.amount <= userParams.maxAmount",
        },
        {
            "name": "knownPayee",
            "expression": "size(userParams.payees) == 0 || executionParams.payee in userParams.payees",
        },
    ],
}


def spec(raw: dict[str, Any] | None = None, **changes: Any) -> ActionSpec:
    body = {**copy.deepcopy(raw or RENT), **changes}
    parsed, errors = parse_action_spec(body)
    assert parsed is not None and not errors, errors
    return parsed


def published(
    engine: Engine, org_id: str, raw: dict[str, Any] | None = None, action_id: str | None = None
) -> tuple[str, str]:
    """A new action with version 1 published: (action id, version id)."""
    action, draft = actions.create_action(engine, org_id, spec(raw), action_id=action_id)
    actions.publish(engine, draft.id, actor="operator:tests")
    return action.id, draft.id
