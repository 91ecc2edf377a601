"""Rules of an action: parsing, publish-time checks, and evaluation at verify time (CONTRACT 5, 6)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import celpy
import lark
from celpy import celtypes

from policy import cel, checks, cost
from policy.meter import LimitReached, metered
from policy.params import Param

MAX_RULE_NAME_LENGTH = 100
_RULE_KEYS = {"name", "expression", "description"}


@dataclass(frozen=True)
class Rule:
    name: str
    expression: str
    description: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out["expression"] = self.expression
        return out


@dataclass(frozen=True)
class Evaluation:
    rule: str
    expression: str
    result: str  # "pass" | "fail" | "error"
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "expression": self.expression, "result": self.result}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def parse_rules(raw: Any, *, where: str = "rules") -> tuple[list[Rule], list[str]]:
    """Rules from their JSON form `[{name, description?, expression}]`; names are unique."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"{where} must be an array"]
    rules: list[Rule] = []
    errors: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        place = f"{where}.{i}"
        if not isinstance(item, dict):
            errors.append(f"{place} must be an object with name and expression")
            continue
        item_errors = [f"{place}.{key} is not a known field" for key in sorted(set(item) - _RULE_KEYS)]
        name: Any = item.get("name")
        expression: Any = item.get("expression")
        description: Any = item.get("description")
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_RULE_NAME_LENGTH:
            item_errors.append(f"{place}.name must be a non-empty string of at most {MAX_RULE_NAME_LENGTH}")
        elif name in seen:
            item_errors.append(f"{place}.name {name!r} is used by two rules")
        if not isinstance(expression, str) or not expression.strip():
            item_errors.append(f"{place}.expression must be a non-empty string")
        elif len(expression) > cel.MAX_EXPRESSION_LENGTH:
            item_errors.append(f"{place}.expression is longer than {cel.MAX_EXPRESSION_LENGTH} characters")
        if description is not None and not isinstance(description, str):
            item_errors.append(f"{place}.description must be a string")
        if item_errors:
            errors.extend(item_errors)
            continue
        seen.add(name)
        rules.append(Rule(name=name, expression=expression, description=description))
    return rules, errors


def check_rules(
    rules: list[Rule],
    execution_params: list[Param],
    user_params: list[Param],
    *,
    where: str = "rules",
    limits: Sequence[str] = (),
) -> list[str]:
    """What publishing refuses: a rule that does not compile, refers to an undeclared field or
    identifier, or does not yield a boolean (see policy.checks for how that is decided). ``limits``
    are the names of the limits the action declares: rules may read ``usage.<limit>.used`` and
    ``.remaining`` of those only (not of a request's ``maxExecutions``, which not every request has)."""
    declared = checks.declare(execution_params, user_params, limits)
    activations = checks.sample_activations(execution_params, user_params, limits)
    roots = cost.declared_roots(execution_params, user_params, limits)
    errors: list[str] = []
    total = 0
    for i, rule in enumerate(rules):
        place = f"{where}.{i} ({rule.name})"
        try:
            tree = cel.parse(rule.expression)
        except Exception as exc:  # CELParseError, or lark errors for odd input
            errors.append(f"{place} does not compile: {cel.describe_parse_error(exc)}")
            continue
        try:
            problems, steps = _rule_problems(tree, declared, roots, activations)
        except RecursionError:
            problems, steps = ["is nested too deeply"], 0
        total += steps
        errors.extend(f"{place} {problem}" for problem in problems)
    if total > cost.RULE_BUDGET and not any(TOO_COSTLY in e for e in errors):
        errors.append(
            f"{where} together may take up to {total:,} steps at their params' maximum sizes, more "
            f"than the {cost.RULE_BUDGET:,} one verification may take: {ADVICE}"
        )
    return errors


TOO_COSTLY = "steps at its params' maximum sizes"
ADVICE = "lower the maxItems or maxLength of the params they read, or simplify them"


def _rule_problems(
    tree: Any, declared: checks.Declared, roots: cost.Roots, activations: list[dict[str, Any]]
) -> tuple[list[str], int]:
    """The rule's problems, and its estimated steps (``policy.cost``) once it refers only to
    declared names. A rule over the budget is not run on the samples: what it would cost is
    exactly what the check must not spend."""
    problems = checks.references(tree, declared)
    if problems:
        return problems, 0
    static = checks.boolean_problem(checks.result_kinds(tree, declared))
    if static:
        return [static], 0
    steps = cost.estimate(tree, roots)
    if steps > cost.RULE_BUDGET:
        return [
            f"may take up to {steps:,} {TOO_COSTLY}, more than the {cost.RULE_BUDGET:,} one "
            f"verification may take: {ADVICE.replace('they read', 'it reads').replace('them', 'it')}"
        ], steps
    try:
        with metered(cost.RULE_BUDGET * len(activations)):
            sampled = checks.sample_problem(tree, activations)
    except LimitReached:  # the estimate bounds the samples' steps: only a flaw in it gets here
        sampled = f"took more than {cost.RULE_BUDGET:,} steps on sample values"
    return ([sampled] if sampled else []), steps


class _ProgramCache:
    """Compiled rules by (version key, rule name, expression), bounded LRU, safe across threads.

    The expression is part of the key so a draft edited under the same key never runs stale code.
    """

    def __init__(self, maxsize: int = 4096) -> None:
        self.maxsize = maxsize
        self.compiles = 0
        self._items: OrderedDict[tuple[str, str, str], celpy.Runner | Exception] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, version_key: str, rule: Rule) -> celpy.Runner | Exception:
        key = (version_key, rule.name, rule.expression)
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        compiled: celpy.Runner | Exception
        try:
            compiled = cel.program(cel.parse(rule.expression))
        except Exception as exc:  # kept, so a broken rule is not recompiled on every call
            compiled = exc
        with self._lock:
            self.compiles += 1
            self._items[key] = compiled
            if len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return compiled

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_CACHE = _ProgramCache()


def program_tree(version_key: str, rule: Rule) -> lark.Tree | None:
    """The tree the rule's compiled program runs (``cel.runnable_tree``), None when it does not
    compile."""
    compiled = _CACHE.get(version_key, rule)
    return None if isinstance(compiled, Exception) else compiled.ast


def compile_count() -> int:
    """How many rule programs this process has compiled (for tests of the cache)."""
    return _CACHE.compiles


def clear_cache() -> None:
    _CACHE.clear()


@dataclass(frozen=True)
class RulesRun:
    """The evaluations of one verification's rules, the steps they took (``policy.meter``) and
    whether they were stopped at the budget (every rule from the one stopped on is an "error")."""

    evaluations: list[Evaluation]
    steps: int = 0
    limit_reached: bool = False


LIMIT_REASON = "stopped: the rules took more than the {budget:,} steps one verification may take"
NOT_RUN_REASON = "not evaluated: an earlier rule used up the steps one verification may take"


def run_rules(
    version_key: str,
    rules: list[Rule],
    execution_params: dict[str, Any],
    user_params: dict[str, Any],
    now: datetime,
    *,
    execution_types: list[Param],
    user_types: list[Param],
    budget: int = cost.RULE_BUDGET,
    usage: Mapping[str, Mapping[str, int | float]] | None = None,
) -> RulesRun:
    """One evaluation per rule, in declared order, all of them within ``budget`` steps. Never
    raises for a bad rule or bad values: such a rule gets result "error" with a reason (and the
    caller denies); so does the rule the budget runs out on, and each after it. ``usage`` is what
    rules read as ``usage.<limit>.used`` and ``.remaining`` (``policy.limits.usage_fields``); a
    limit not in it is a field without a value, as a param not sent is."""
    if not rules:
        return RulesRun([])
    activation = {
        "executionParams": cel.params_map(execution_types, execution_params or {}),
        "userParams": cel.params_map(user_types, user_params or {}),
        cel.USAGE: cel.usage_map(usage),
        # A naive `now` is taken as UTC rather than failing every rule.
        "now": cel.timestamp(now if now.tzinfo else now.replace(tzinfo=UTC)),
    }
    evaluations: list[Evaluation] = []
    with metered(budget) as meter:
        try:
            for rule in rules:
                evaluations.append(_evaluate_one(version_key, rule, activation))
        except LimitReached:
            stopped = rules[len(evaluations)]
            evaluations.append(_failed(stopped, LIMIT_REASON.format(budget=budget)))
            evaluations.extend(_failed(rule, NOT_RUN_REASON) for rule in rules[len(evaluations) :])
            return RulesRun(evaluations, meter.spent, limit_reached=True)
    return RulesRun(evaluations, meter.spent)


def _failed(rule: Rule, reason: str) -> Evaluation:
    return Evaluation(rule=rule.name, expression=rule.expression, result="error", reason=reason)


def evaluate(
    version_key: str,
    rules: list[Rule],
    execution_params: dict[str, Any],
    user_params: dict[str, Any],
    now: datetime,
    *,
    execution_types: list[Param],
    user_types: list[Param],
    usage: Mapping[str, Mapping[str, int | float]] | None = None,
) -> list[Evaluation]:
    """``run_rules``' evaluations, within the budget of one verification."""
    return run_rules(
        version_key,
        rules,
        execution_params,
        user_params,
        now,
        execution_types=execution_types,
        user_types=user_types,
        usage=usage,
    ).evaluations


def _evaluate_one(version_key: str, rule: Rule, activation: dict[str, Any]) -> Evaluation:
    def done(result: str, reason: str | None = None) -> Evaluation:
        return Evaluation(rule=rule.name, expression=rule.expression, result=result, reason=reason)

    compiled = _CACHE.get(version_key, rule)
    if isinstance(compiled, Exception):
        return done("error", f"does not compile: {cel.describe_parse_error(compiled)}")
    try:
        value = compiled.evaluate(activation)
    except Exception as exc:  # CELEvalError mostly; RecursionError and others must not escape either
        return done("error", cel.describe_eval_error(exc))
    if not isinstance(value, celtypes.BoolType | bool):
        return done("error", f"yielded {cel.type_name(value)}, not a boolean")
    return done("pass" if value else "fail")
