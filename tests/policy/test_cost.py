"""The static cost of a rule (policy.cost) bounds what the meter (policy.meter) counts when the rule
runs: on any values within the params' bounds, and on the values themselves. Rules are generated
(hypothesis, derandomized) from the parts CEL rules are made of: macros nested in macros, ``in``,
``==`` and ``+`` over lists and strings, string methods, conversions, literals, ternaries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy import cel, cost
from policy.meter import LimitReached, metered
from policy.params import Param
from policy.rules import Rule, check_rules, run_rules

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
EXECUTION = [
    Param("items", "array<string>", max_items=12, max_length=40),
    Param("amounts", "array<number>", max_items=9),
    Param("memo", "string", max_length=5000),
    Param("amount", "number"),
]
USER = [
    Param("allowed", "array<string>", max_items=15, max_length=30),
    Param("limit", "number"),
    Param("prefix", "string", max_length=20),
]
LISTS = [
    "executionParams.items",
    "userParams.allowed",
    "executionParams.amounts",
    "['a', 'bb', 'ccc']",
    "[1, 2]",
]
STRINGS = ["executionParams.memo", "userParams.prefix", "'xyz'"]
NUMBERS = ["executionParams.amount", "userParams.limit", "1.5", "2.0"]


def _expression(depth: int, variables: tuple[str, ...]) -> st.SearchStrategy[str]:
    """A CEL expression (not always well typed: errors are counted like any other run)."""
    leaves = st.sampled_from([*NUMBERS, *STRINGS, *variables, "true"])
    if depth == 0:
        return leaves
    inner = _expression(depth - 1, variables)
    lists = st.sampled_from(LISTS) | st.builds(
        lambda a, b: f"({a} + {b})", st.sampled_from(LISTS), st.sampled_from(LISTS)
    )
    name = f"v{depth}"

    def macro(target: str, kind: str, body: str) -> str:
        return f"{target}.{kind}({name}, {body})"

    body = _expression(depth - 1, (*variables, name))
    return st.one_of(
        leaves,
        st.builds(lambda a, b: f"({a} == {b})", inner, inner),
        st.builds(lambda a, b: f"({a} in {b})", inner, lists),
        st.builds(lambda a, b: f"({a} + {b})", inner, inner),
        st.builds(lambda a, b: f"({a} || {b})", inner, inner),
        st.builds(lambda a, b, c: f"({a} ? {b} : {c})", inner, inner, inner),
        st.builds(lambda s: f"{s}.contains('q')", st.sampled_from(STRINGS)),
        st.builds(lambda s: f"{s}.matches('^x+z$')", st.sampled_from(STRINGS)),
        st.builds(lambda a: f"size(string({a}))", inner),
        st.builds(macro, lists, st.sampled_from(["all", "exists", "exists_one", "map", "filter"]), body),
    )


def _values(draw: Any, full: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    def strings(count: int, length: int) -> list[str]:
        return ["x" * (length if full else draw(st.integers(0, length))) for _ in range(count)]

    def count(limit: int) -> int:
        return limit if full else draw(st.integers(0, limit))

    execution = {
        "items": strings(count(12), 40),
        "amounts": [float(i) for i in range(count(9))],
        "memo": "x" * count(5000),
        "amount": 3.0,
    }
    user = {"allowed": strings(count(15), 30), "limit": 10.0, "prefix": "x" * count(20)}
    return execution, user


def _spent(expression: str, execution: dict[str, Any], user: dict[str, Any]) -> int:
    run = run_rules(
        "cost-test",
        [Rule("r", expression)],
        execution,
        user,
        NOW,
        execution_types=EXECUTION,
        user_types=USER,
        budget=10**12,
    )
    return run.steps


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=_expression(3, ()), data=st.data())
def test_the_estimate_bounds_the_steps_on_any_values_within_the_bounds(
    expression: str, data: st.DataObject
) -> None:
    tree = cel.parse(expression)
    at_bounds = cost.estimate(tree, cost.declared_roots(EXECUTION, USER))
    execution, user = _values(data.draw, full=data.draw(st.booleans()))
    spent = _spent(expression, execution, user)
    assert spent <= at_bounds, expression
    assert spent <= cost.estimate(tree, cost.value_roots(execution, user)), expression


def test_the_estimate_grows_with_the_declared_bounds() -> None:
    rule = "executionParams.items.all(x, x in userParams.allowed)"
    small = cost.estimate(cel.parse(rule), cost.declared_roots(EXECUTION, USER))
    wide = [Param("items", "array<string>", max_items=1200)]
    large = cost.estimate(cel.parse(rule), cost.declared_roots(wide, USER))
    assert large >= 100 * small // 2
    nested = "executionParams.items.all(x, executionParams.items.exists_one(y, y == x))"
    assert cost.estimate(cel.parse(nested), cost.declared_roots(wide, USER)) > 1200 * 1200


def test_a_rule_over_the_budget_is_refused_by_name_without_running(monkeypatch: Any) -> None:
    """The issue's editor check: four nested all() over a 10-item literal took 3.6 s to check; its
    estimate refuses it, and nothing of it runs."""
    from policy import checks

    ran: list[str] = []
    monkeypatch.setattr(checks, "sample_problem", lambda tree, activations: ran.append("ran"))
    ten = "[1,2,3,4,5,6,7,8,9,10]"
    four_deep = f"{ten}.all(a, {ten}.all(b, {ten}.all(c, {ten}.all(d, a + b + c + d > 0))))"
    problems = check_rules([Rule("deep", four_deep)], EXECUTION, USER)
    assert len(problems) == 1
    assert problems[0].startswith("rules.0 (deep) may take up to ")
    assert f"more than the {cost.RULE_BUDGET:,} one verification may take" in problems[0]
    assert ran == []


def test_rules_each_within_the_budget_but_not_together_are_refused() -> None:
    each = "executionParams.items.all(x, x in userParams.allowed)"
    steps = cost.estimate(cel.parse(each), cost.declared_roots(EXECUTION, USER))
    count = cost.RULE_BUDGET // steps + 1
    rules = [Rule(f"r{i}", each) for i in range(count)]
    problems = check_rules(rules, EXECUTION, USER)
    assert problems == [
        f"rules together may take up to {steps * count:,} steps at their params' maximum sizes, more "
        f"than the {cost.RULE_BUDGET:,} one verification may take: lower the maxItems or maxLength "
        "of the params they read, or simplify them"
    ]
    assert check_rules(rules[:-1], EXECUTION, USER) == []


def test_the_meter_stops_an_evaluation_that_an_or_would_otherwise_absorb() -> None:
    """cel-python evaluates both sides of ``||`` and turns errors into values: the end of the
    budget is not an error value, it ends the evaluation."""
    program = cel.program(
        cel.parse("true || [1,2,3,4,5,6,7,8].all(x, [1,2,3,4,5,6,7,8].all(y, x != y || true))")
    )
    activation = {"now": cel.timestamp(NOW)}
    with metered(50) as meter:
        try:
            program.evaluate(activation)
        except LimitReached as stopped:
            assert stopped.budget == 50
        else:
            raise AssertionError("the evaluation went past its budget")
    assert 50 < meter.spent <= 60


def test_a_flaw_in_the_estimate_is_a_problem_of_the_rule_not_an_escape(monkeypatch: Any) -> None:
    """Were the estimate ever below what a rule takes on the samples, the check names the rule
    rather than letting the meter's stop escape as an error of the page or command."""
    monkeypatch.setattr(cost, "estimate", lambda tree, roots, runnable=False: 1)
    ten = "[1,2,3,4,5,6,7,8,9,10]"
    problems = check_rules(
        [Rule("deep", f"{ten}.all(a, {ten}.all(b, {ten}.all(c, a + b + c > 0)))")], EXECUTION, USER
    )
    assert problems == [f"rules.0 (deep) took more than {cost.RULE_BUDGET:,} steps on sample values"]


@pytest.mark.parametrize(
    "expression",
    [
        "executionParams.items.all(x, true)",
        "executionParams.items.all(x, x in userParams.allowed)",
        "userParams.allowed.exists(a, executionParams.items.exists(b, a == b))",
        "executionParams.items.map(x, x + userParams.prefix).size() > 0",
        "(executionParams.items + userParams.allowed).filter(x, x.contains('q')).size() == 0",
    ],
)
def test_the_estimate_is_close_at_the_bounds(expression: str) -> None:
    """At values filling every bound the estimate is what the meter counts, give or take the few
    nodes the evaluator skips (a relation's operator node, a macro's argument list): it bounds
    the count without being loose enough to hide a step the meter counts that it does not."""
    execution, user = _values(lambda strategy: strategy.example(), full=True)
    spent = _spent(expression, execution, user)
    estimate = cost.estimate(cel.parse(expression), cost.declared_roots(EXECUTION, USER))
    assert spent <= estimate <= spent * 1.25 + 10, (spent, estimate)
