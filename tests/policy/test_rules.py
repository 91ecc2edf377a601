"""CEL rules: publish-time checks and verify-time evaluation (CONTRACT sections 5 and 6)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from policy.params import Param
from policy.rules import Evaluation, Rule, check_rules, compile_count, evaluate, parse_rules

EXECUTION = [
    Param("amount", "number"),
    Param("count", "integer"),
    Param("currency", "string"),
    Param("when", "timestamp"),
    Param("tags", "array<string>"),
    Param("urgent", "boolean"),
]
USER = [
    Param("max", "number"),
    Param("max_count", "integer"),
    Param("currencies", "array<string>"),
    Param("prices", "array<number>"),
    Param("not_after", "timestamp"),
    Param("allow_urgent", "boolean"),
]
NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def check(expression: str) -> list[str]:
    return check_rules([Rule("r", expression)], EXECUTION, USER)


@pytest.mark.parametrize(
    "expression",
    [
        "executionParams.amount <= userParams.max",
        "executionParams.count <= userParams.max",
        "executionParams.amount <= userParams.max_count",
        "executionParams.count < 10",
        "executionParams.amount < 10",
        "executionParams.amount <= 99.5",
        "executionParams.currency in userParams.currencies",
        "executionParams.count in userParams.prices",
        "executionParams.when < now",
        "executionParams.when <= userParams.not_after && userParams.not_after > now",
        "executionParams.when > now - duration('24h')",
        "size(executionParams.tags) <= 3",
        "executionParams.tags.size() > 0",
        "executionParams.tags.all(t, t in userParams.currencies)",
        "userParams.prices.exists(p, p >= executionParams.amount)",
        "!executionParams.urgent || userParams.allow_urgent",
        "userParams.allow_urgent",
        "executionParams.currency.startsWith('E') && executionParams.currency.size() == 3",
        "has(executionParams.currency)",
        "executionParams.urgent ? userParams.allow_urgent : true",
        "double(executionParams.count) * userParams.max > 0.0",
        "executionParams.amount / 0.0 > 1.0",
        "executionParams.tags[0] == 'a'",
        "now.getFullYear() >= 2025",
        "// a comment\nexecutionParams.count >= 0",
    ],
)
def test_typical_rules_are_accepted(expression: str) -> None:
    assert check(expression) == []


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("executionParams.amount <=", "does not compile: syntax error at line 1, column"),
        ("executionParams.amount < = 3", "does not compile"),
        ("'unterminated", "does not compile"),
        ("executionParams.missing > 1", "refers to undeclared field executionParams.missing"),
        ("userParams.amount > 1", "refers to undeclared field userParams.amount"),
        ("has(userParams.nope)", "refers to undeclared field userParams.nope"),
        ("account.balance > 1", "refers to unknown identifier 'account'"),
        ("executionParams.tags.exists(t, u == t)", "refers to unknown identifier 'u'"),
        ("size(executionParams) == 6", "uses executionParams other than as executionParams.<declared field>"),
        ("executionParams['amount'] > 1", "uses executionParams other than as"),
        ("nosuch(1) == 1", "calls unknown function nosuch()"),
        ("executionParams.currency.upper() == 'EUR'", "calls unknown function upper()"),
        ("userParams.max + 1", "yields double, not a boolean"),
        ("executionParams.count * 2", "yields int, not a boolean"),
        ("executionParams.currency", "yields string, not a boolean"),
        ("now", "yields timestamp, not a boolean"),
        ("executionParams.tags", "yields list, not a boolean"),
        ("size(executionParams.tags)", "yields int, not a boolean"),
        ("executionParams.urgent ? true : 1", "may yield int instead of a boolean"),
        ("executionParams.tags[0]", "yields string, not a boolean"),
        ("dyn(executionParams.count)", "yields int, not a boolean"),
        (
            "executionParams.currency > 1",
            "has a type error: no matching overload for '>' applied to (string, int)",
        ),
        ("executionParams.count + userParams.max > 1.0", "has a type error"),
        ("executionParams.when < 5", "has a type error"),
        ("executionParams.amount.value > 1", "has a type error"),
        ("Foo{a: 1}", "constructs a message"),
    ],
)
def test_bad_rules_are_refused(expression: str, message: str) -> None:
    errors = check(expression)
    assert len(errors) >= 1
    assert errors[0].startswith("rules.0 (r) ")
    assert message in errors[0], errors


def test_check_rules_names_every_bad_rule_by_position() -> None:
    rules = [
        Rule("ok", "executionParams.amount <= userParams.max"),
        Rule("bad_field", "executionParams.x == 1"),
        Rule("bad_result", "userParams.max"),
    ]
    assert check_rules(rules, EXECUTION, USER) == [
        "rules.1 (bad_field) refers to undeclared field executionParams.x",
        "rules.2 (bad_result) yields double, not a boolean",
    ]


def test_no_rules_and_no_params_is_fine() -> None:
    assert check_rules([], [], []) == []
    assert check_rules([Rule("always", "true")], [], []) == []


def test_parse_rules() -> None:
    rules, errors = parse_rules([{"name": "a", "expression": "true", "description": "d"}])
    assert errors == [] and rules == [Rule("a", "true", "d")]
    assert rules[0].as_json() == {"name": "a", "description": "d", "expression": "true"}
    assert Rule("b", "false").as_json() == {"name": "b", "expression": "false"}
    _, errors = parse_rules(
        [
            {"name": "a", "expression": "true"},
            {"name": "a", "expression": "true"},
            {"name": "", "expression": "true"},
            {"name": "c", "expression": " "},
            {"name": "d", "expression": "true", "when": 1},
            "x",
        ]
    )
    assert errors == [
        "rules.1.name 'a' is used by two rules",
        "rules.2.name must be a non-empty string of at most 100",
        "rules.3.expression must be a non-empty string",
        "rules.4.when is not a known field",
        "rules.5 must be an object with name and expression",
    ]
    assert parse_rules("x") == ([], ["rules must be an array"])
    _, errors = parse_rules([{"name": "long", "expression": "true || " * 1000 + "true"}])
    assert errors == ["rules.0.expression is longer than 4096 characters"]


EXECUTION_VALUES: dict[str, Any] = {
    "amount": 40,
    "count": 2,
    "currency": "EUR",
    "when": "2025-03-01T11:00:00Z",
    "tags": ["EUR"],
    "urgent": False,
}
USER_VALUES: dict[str, Any] = {
    "max": 50.5,
    "max_count": 3,
    "currencies": ["EUR", "USD"],
    "prices": [2, 40.0],
    "not_after": "2025-03-01T13:00:00+01:00",
    "allow_urgent": False,
}


def run(rules: list[Rule], execution: dict[str, Any] | None = None, key: str = "v-test") -> list[Evaluation]:
    values = EXECUTION_VALUES if execution is None else execution
    return evaluate(key, rules, values, USER_VALUES, NOW, execution_types=EXECUTION, user_types=USER)


def test_evaluate_passes_and_fails_in_declared_order() -> None:
    rules = [
        Rule("max_amount", "executionParams.amount <= userParams.max"),
        Rule("currency", "executionParams.currency in userParams.currencies"),
        Rule("few", "executionParams.count > userParams.max_count"),
    ]
    results = run(rules)
    assert [e.as_json() for e in results] == [
        {"rule": "max_amount", "expression": "executionParams.amount <= userParams.max", "result": "pass"},
        {
            "rule": "currency",
            "expression": "executionParams.currency in userParams.currencies",
            "result": "pass",
        },
        {"rule": "few", "expression": "executionParams.count > userParams.max_count", "result": "fail"},
    ]
    results = run(rules, {**EXECUTION_VALUES, "amount": 51, "currency": "GBP"})
    assert [e.result for e in results] == ["fail", "fail", "fail"]


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("executionParams.amount <= userParams.max", "pass"),  # int JSON value declared number
        ("executionParams.count <= userParams.max", "pass"),  # int <= double
        ("userParams.max >= executionParams.count", "pass"),  # double >= int
        ("executionParams.amount == 40", "pass"),  # double == int literal
        ("executionParams.count == 2.0", "pass"),
        ("executionParams.count != 2.0", "fail"),
        ("executionParams.amount in userParams.prices", "pass"),  # 40.0 in [2.0, 40.0]
        ("executionParams.count in userParams.prices", "pass"),  # 2 in [2.0, 40.0]
        ("executionParams.count in [1, 3]", "fail"),
        ("executionParams.count * 3 <= userParams.max_count", "fail"),
        ("executionParams.count / 2 == 1", "pass"),
    ],
)
def test_evaluate_mixes_integers_and_doubles(expression: str, result: str) -> None:
    assert run([Rule("r", expression)])[0].result == result


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("executionParams.when < now", "pass"),
        ("executionParams.when > now", "fail"),
        ("userParams.not_after > now", "fail"),  # 13:00+01:00 is exactly 12:00Z
        ("userParams.not_after == now", "pass"),
        ("executionParams.when >= now - duration('1h')", "pass"),
        ("executionParams.when >= now - duration('59m')", "fail"),
        ("now.getHours() == 12", "pass"),
    ],
)
def test_evaluate_timestamps_against_now(expression: str, result: str) -> None:
    assert run([Rule("r", expression)])[0].result == result


def test_now_in_another_zone_is_the_same_instant() -> None:
    rules = [Rule("r", "executionParams.when < now")]
    pacific = NOW.astimezone(timezone(timedelta(hours=-8)))
    [result] = evaluate(
        "k", rules, EXECUTION_VALUES, USER_VALUES, pacific, execution_types=EXECUTION, user_types=USER
    )
    assert result.result == "pass"


DROP = object()


@pytest.mark.parametrize(
    ("expression", "overrides", "reason"),
    [
        ("executionParams.amount <= userParams.max", {"amount": DROP}, "no value for field 'amount'"),
        # Values that bypassed validation never reach CEL with the wrong type.
        ("executionParams.amount <= userParams.max", {"amount": "lots"}, "no value for field 'amount'"),
        ("executionParams.when < now", {"when": "yesterday"}, "no value for field 'when'"),
        ("executionParams.currency > 1", {}, "no matching overload for '>' applied to (string, int)"),
        ("executionParams.count / 0 == 1", {}, "divide by zero"),
        ("executionParams.tags[5] == 'a'", {}, "list index out of range"),
        ("executionParams.count * 9223372036854775807 > 0", {}, "integer overflow"),
        ("userParams.max + 1", {}, "yielded double, not a boolean"),
        ("executionParams.amount <=", {}, "does not compile"),
        ("nosuch(1)", {}, "undeclared reference to 'nosuch'"),
    ],
)
def test_a_rule_that_errors_gives_result_error_with_a_reason(
    expression: str, overrides: dict[str, Any], reason: str
) -> None:
    execution = {k: v for k, v in {**EXECUTION_VALUES, **overrides}.items() if v is not DROP}
    [result] = run([Rule("r", expression)], execution)
    assert result.result == "error"
    assert result.reason is not None and reason in result.reason
    assert "Activation" not in result.reason
    assert set(result.as_json()) == {"rule", "expression", "result", "reason"}


def test_an_error_does_not_stop_the_other_rules() -> None:
    rules = [Rule("a", "executionParams.nope == 1"), Rule("b", "true"), Rule("c", "false")]
    assert [e.result for e in run(rules)] == ["error", "pass", "fail"]


def test_no_rules_means_no_evaluations() -> None:
    assert run([]) == []


def test_programs_are_compiled_once_per_version_and_rule() -> None:
    rules = [Rule("a", "executionParams.amount <= userParams.max"), Rule("b", "executionParams.count > 0")]
    run(rules, key="cache-v1")
    before = compile_count()
    for _ in range(5):
        run(rules, key="cache-v1")
    assert compile_count() == before
    run(rules, key="cache-v2")
    assert compile_count() == before + 2
    run([Rule("a", "executionParams.amount > 0")], key="cache-v1")  # same name, edited expression
    assert compile_count() == before + 3


def test_evaluate_is_safe_from_many_threads() -> None:
    rules = [Rule("a", "executionParams.amount <= userParams.max"), Rule("b", "executionParams.count > 5")]
    outcomes: list[list[str]] = []

    def worker() -> None:
        for _ in range(20):
            outcomes.append([e.result for e in run(rules, key="threads")])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == [["pass", "fail"]] * 160


def test_deeply_nested_rules_are_refused_and_never_raise() -> None:
    deep = "(" * 100 + "true" + ")" * 100
    assert check_rules([Rule("deep", deep)], [], []) == ["rules.0 (deep) is nested too deeply"]
    [result] = evaluate("deep", [Rule("deep", deep)], {}, {}, NOW, execution_types=[], user_types=[])
    assert result.as_json() == {
        "rule": "deep",
        "expression": deep,
        "result": "error",
        "reason": "expression is nested too deeply",
    }
