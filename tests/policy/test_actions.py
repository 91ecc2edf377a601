"""Action specs: parsing the YAML/JSON form, publish-time checks and the canonical content."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from typing import Any

from policy.actions import ActionSpec, canonical_content, check_spec, parse_action_spec
from policy.params import Param
from policy.rules import Rule
from trust.jcs import canonicalize

PAYMENT: dict[str, Any] = {
    "name": "Pay an invoice",
    "description": "Pay a supplier invoice on the user's behalf",
    "executionParams": [
        {"name": "amount", "type": "number", "description": "Amount to pay"},
        {"name": "currency", "type": "string"},
        {"name": "due", "type": "timestamp"},
    ],
    "userParams": [
        {"name": "max", "type": "number"},
        {"name": "currencies", "type": "array<string>", "default": ["EUR"]},
    ],
    "rules": [
        {
            "name": "max_amount",
            "description": "At most the approved amount",
            "expression": "executionParams.amount <= userParams.max",
        },
        {"name": "currency", "expression": "executionParams.currency in userParams.currencies"},
        {"name": "not_overdue", "expression": "executionParams.due >= now"},
    ],
}


def digest_sri(content: dict[str, Any]) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(canonicalize(content)).digest()).decode()


def test_parse_a_full_action() -> None:
    spec, errors = parse_action_spec(PAYMENT)
    assert errors == [] and spec is not None
    assert spec.name == "Pay an invoice"
    assert [p.name for p in spec.execution_params] == ["amount", "currency", "due"]
    assert spec.user_params[1] == Param("currencies", "array<string>", default=["EUR"], has_default=True)
    assert [r.name for r in spec.rules] == ["max_amount", "currency", "not_overdue"]
    assert check_spec(spec) == []


def test_canonical_content_is_the_declared_form_and_round_trips() -> None:
    spec, _ = parse_action_spec(PAYMENT)
    assert spec is not None
    content = canonical_content(spec)
    assert content == PAYMENT
    assert list(content) == ["name", "description", "executionParams", "userParams", "rules"]
    again, errors = parse_action_spec(json.loads(json.dumps(content)))
    assert errors == [] and again == spec


def test_digest_is_stable_and_follows_the_content() -> None:
    spec, _ = parse_action_spec(PAYMENT)
    assert spec is not None
    shuffled_keys = {key: PAYMENT[key] for key in reversed(list(PAYMENT))}
    same, _ = parse_action_spec(shuffled_keys)
    assert same is not None
    assert digest_sri(canonical_content(spec)) == digest_sri(canonical_content(same))

    reordered = copy.deepcopy(PAYMENT)
    reordered["rules"].reverse()
    other, _ = parse_action_spec(reordered)
    assert other is not None
    assert digest_sri(canonical_content(other)) != digest_sri(canonical_content(spec))
    assert digest_sri(canonical_content(spec)).startswith("sha256-")


def test_a_minimal_action_has_empty_lists_and_no_description() -> None:
    spec, errors = parse_action_spec({"name": "Sign in"})
    assert errors == [] and spec == ActionSpec("Sign in", None, [], [], [])
    assert canonical_content(spec) == {
        "name": "Sign in",
        "executionParams": [],
        "userParams": [],
        "rules": [],
    }
    assert check_spec(spec) == []


def test_parse_reports_every_problem_with_its_place() -> None:
    raw = {
        "name": "",
        "version": 2,
        "description": 5,
        "executionParams": [{"name": "amount", "type": "money", "default": 1}],
        "userParams": [{"name": "max", "type": "integer", "default": 1.5}],
        "rules": [{"name": "r", "expression": ""}],
    }
    spec, errors = parse_action_spec(raw)
    assert spec is None
    assert errors == [
        "version is not a known field of an action",
        "name must be a non-empty string of at most 200 characters",
        "description must be a string",
        "executionParams.0.type must be one of string, number, integer, boolean, timestamp, array<string>, "
        "array<number>",
        "executionParams.0.default is not allowed here (only userParams have defaults)",
        "userParams.0.default must be an integer (64-bit)",
        "rules.0.expression must be a non-empty string",
    ]
    assert parse_action_spec([PAYMENT]) == (
        None,
        ["an action must be an object with name, executionParams, userParams and rules"],
    )


def test_check_spec_refuses_rules_publishing_must_refuse() -> None:
    raw = copy.deepcopy(PAYMENT)
    raw["rules"] += [
        {"name": "broken", "expression": "executionParams.amount <"},
        {"name": "undeclared", "expression": "userParams.limit > executionParams.amount"},
        {"name": "not_boolean", "expression": "userParams.max + 1"},
    ]
    spec, errors = parse_action_spec(raw)
    assert errors == [] and spec is not None
    problems = check_spec(spec)
    assert len(problems) == 3
    assert problems[0].startswith("rules.3 (broken) does not compile")
    assert problems[1] == "rules.4 (undeclared) refers to undeclared field userParams.limit"
    assert problems[2] == "rules.5 (not_boolean) yields double, not a boolean"


def test_check_spec_rechecks_specs_built_by_hand() -> None:
    spec = ActionSpec(
        name="x",
        description=None,
        execution_params=[Param("a", "string"), Param("a", "decimal")],
        user_params=[],
        rules=[Rule("r", "true")],
    )
    assert check_spec(spec) == [
        "executionParams.1.name 'a' is declared twice",
        "executionParams.1.type must be one of string, number, integer, boolean, timestamp, array<string>, "
        "array<number>",
    ]
