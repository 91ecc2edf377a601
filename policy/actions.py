"""Action specs: the content of an action version, as read from YAML/JSON or the dashboard."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from policy.limits import Limit, check_limits, parse_limits
from policy.params import Param, parse_params
from policy.rules import Rule, check_rules, parse_rules

MAX_NAME_LENGTH = 200
MAX_PARAMS = 100  # of each kind: wire.presentations reads at most this many executionParams
MAX_RULES = 100
_SPEC_KEYS = {"name", "description", "executionParams", "userParams", "rules", "limits"}


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str | None
    execution_params: list[Param] = field(default_factory=list)
    user_params: list[Param] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    limits: list[Limit] = field(default_factory=list)  # issue 31: use limits and budgets


def parse_action_spec(raw: Any) -> tuple[ActionSpec | None, list[str]]:
    """An ActionSpec from `{name, description?, executionParams?, userParams?, rules?, limits?}`
    (absent lists are empty; unknown keys are errors). Returns None with the errors when anything
    is wrong. Publish-time rule checks are `check_spec`."""
    if not isinstance(raw, dict):
        return None, ["an action must be an object with name, executionParams, userParams and rules"]
    errors = [f"{key} is not a known field of an action" for key in sorted(set(raw) - _SPEC_KEYS, key=str)]
    name, description = raw.get("name"), raw.get("description")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_LENGTH:
        errors.append(f"name must be a non-empty string of at most {MAX_NAME_LENGTH} characters")
    if description is not None and not isinstance(description, str):
        errors.append("description must be a string")
    execution, execution_errors = parse_params(
        raw.get("executionParams"), where="executionParams", allow_defaults=False
    )
    user, user_errors = parse_params(raw.get("userParams"), where="userParams", allow_defaults=True)
    rules, rule_errors = parse_rules(raw.get("rules"), where="rules")
    limits, limit_errors = parse_limits(raw.get("limits"), where="limits")
    errors += execution_errors + user_errors + rule_errors + limit_errors
    if errors:
        return None, errors
    assert isinstance(name, str)
    spec = ActionSpec(
        name=name,
        description=description,
        execution_params=execution,
        user_params=user,
        rules=rules,
        limits=limits,
    )
    return spec, []


def check_spec(spec: ActionSpec) -> list[str]:
    """Everything publishing checks: the params' shape (again, for specs not made by
    parse_action_spec) and every rule (compiles, declared fields only, yields a boolean)."""
    _, errors = parse_action_spec(canonical_content(spec))
    if errors:
        return errors
    for where, count, most in (
        ("executionParams", len(spec.execution_params), MAX_PARAMS),
        ("userParams", len(spec.user_params), MAX_PARAMS),
        ("rules", len(spec.rules), MAX_RULES),
    ):
        if count > most:
            errors.append(f"{where} has {count} items, more than the {most} an action may have")
    if errors:
        return errors
    return check_limits(spec.limits, spec.execution_params, spec.user_params) + check_rules(
        spec.rules, spec.execution_params, spec.user_params, limits=[limit.name for limit in spec.limits]
    )


def canonical_content(spec: ActionSpec) -> dict[str, Any]:
    """The JSON content of a version; its JCS SHA-256 is the version's digestSRI. Lists keep their
    declared order; a missing description is omitted; nothing volatile (ids, dates) is included."""
    content: dict[str, Any] = {"name": spec.name}
    if spec.description is not None:
        content["description"] = spec.description
    content["executionParams"] = [p.as_json() for p in spec.execution_params]
    content["userParams"] = [p.as_json() for p in spec.user_params]
    content["rules"] = [r.as_json() for r in spec.rules]
    if spec.limits:  # absent when none: the content (and digest) of a version without limits is unchanged
        content["limits"] = [limit.as_json() for limit in spec.limits]
    return content
