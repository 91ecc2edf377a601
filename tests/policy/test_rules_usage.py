"""Rules that read a mandate's use (issue 31): ``usage.<limit>.used`` and ``.remaining``, before this
verification, for the limits the action declares; checked at publish time like a number param,
evaluated at verify time from ``policy.limits.usage_fields``, carried by a rules job."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from policy import cel, cost
from policy.actions import check_spec, parse_action_spec
from policy.jobs import RulesJob, decode_job, decode_run
from policy.limits import Bound, usage_fields
from policy.params import Param
from policy.process import READY, serve
from policy.rules import Rule, RulesRun, check_rules, evaluate, run_rules

EXECUTION = [Param("amount", "number"), Param("count", "integer"), Param("tags", "array<string>")]
USER = [Param("max", "number")]
NOW = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)
SPENDING = "usage.monthly.remaining >= executionParams.amount"


def check(expression: str, limits: list[str] | None = None) -> list[str]:
    return check_rules(
        [Rule("r", expression)], EXECUTION, USER, limits=["monthly"] if limits is None else limits
    )


def run(
    expression: str, usage: dict[str, dict[str, Any]] | None, amount: float = 40.0, key: str = "usage-v1"
) -> RulesRun:
    return run_rules(
        key,
        [Rule("r", expression)],
        {"amount": amount, "count": 2, "tags": ["a"]},
        {"max": 100.0},
        NOW,
        execution_types=EXECUTION,
        user_types=USER,
        usage=usage,
    )


# --- publish-time checks --------------------------------------------------------------------------


def test_a_rule_on_a_declared_limit_is_accepted_and_on_an_undeclared_one_refused() -> None:
    assert check(SPENDING) == []
    assert check(SPENDING, limits=[]) == [
        "rules.0 (r) refers to undeclared field usage.monthly.remaining (no limit monthly is declared)"
    ]
    assert check(SPENDING, limits=["daily"]) == [
        "rules.0 (r) refers to undeclared field usage.monthly.remaining (no limit monthly is declared)"
    ]


@pytest.mark.parametrize(
    "expression",
    [
        SPENDING,
        "usage.monthly.used < 10",
        "usage.monthly.used <= userParams.max",
        "usage.monthly.used + executionParams.amount <= userParams.max",
        "usage.monthly.remaining - executionParams.amount >= 0.0",
        "usage.monthly.remaining > 0 && usage.daily.used < 3",
        "has(usage.monthly.used)",
        "executionParams.tags.all(usage, usage != 'x')",  # a macro's variable may take the name
        "size(executionParams.tags) <= int(usage.daily.remaining)",
    ],
)
def test_rules_reading_used_and_remaining_are_accepted(expression: str) -> None:
    assert check(expression, limits=["monthly", "daily"]) == []


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "usage.monthly.foo > 1",
            "refers to undeclared field usage.monthly.foo (a limit has used and remaining)",
        ),
        (
            "usage.weekly.used > 1",
            "refers to undeclared field usage.weekly.used (no limit weekly is declared)",
        ),
        (
            "usage.maxExecutions.remaining > 0",
            "refers to undeclared field usage.maxExecutions.remaining (no limit maxExecutions is declared)",
        ),
        ("size(usage) > 0", "uses usage other than as usage.<declared limit>.used or .remaining"),
        ("usage['monthly'].used > 1.0", "uses usage other than as usage.<declared limit>.used or .remaining"),
        (
            "usage.all(k, k == 'monthly')",
            "uses usage other than as usage.<declared limit>.used or .remaining",
        ),
        ("size(usage.monthly) == 2", "uses usage.monthly other than as usage.monthly.used or .remaining"),
        ("has(usage.monthly)", "uses usage.monthly other than as usage.monthly.used or .remaining"),
        ("size(usage.weekly) == 2", "refers to undeclared field usage.weekly (no limit weekly is declared)"),
        ("usage.monthly.used", "yields double, not a boolean"),
        ("usage.monthly.used + 1.0", "yields double, not a boolean"),
        # a number, as a `number` param: int minus double is CEL's type error, found on the samples
        (
            "executionParams.count - usage.monthly.remaining >= 0",
            "has a type error: no matching overload for '-' applied to (int, double)",
        ),
        ("usage.monthly.used.size() > 0", "has a type error"),
        (
            "account.used > 1",
            "refers to unknown identifier 'account' (only executionParams, userParams, usage, now)",
        ),
    ],
)
def test_other_uses_of_usage_are_refused(expression: str, message: str) -> None:
    errors = check(expression)
    assert errors, expression
    assert errors[0].startswith("rules.0 (r) ")
    assert message in errors[0], errors


def _spec(limits: list[dict[str, Any]], expression: str) -> Any:
    spec, errors = parse_action_spec(
        {
            "name": "Pay",
            "executionParams": [{"name": "amount", "type": "number"}],
            "rules": [{"name": "within", "expression": expression}],
            "limits": limits,
        }
    )
    assert errors == [] and spec is not None
    return spec


def test_check_spec_lets_rules_read_the_limits_the_version_declares() -> None:
    monthly = {"name": "monthly", "kind": "sum", "max": 500, "param": "amount", "period": "P1M"}
    runs = {"name": "runs", "kind": "executions", "max": 10}
    assert check_spec(_spec([monthly, runs], f"{SPENDING} && usage.runs.remaining >= 1")) == []
    assert check_spec(_spec([runs], SPENDING)) == [
        "rules.0 (within) refers to undeclared field usage.monthly.remaining (no limit monthly is declared)"
    ]
    # the request's own maxExecutions is not the action's: a rule cannot rely on it
    assert check_spec(_spec([monthly], "usage.maxExecutions.remaining > 0")) == [
        "rules.0 (within) refers to undeclared field usage.maxExecutions.remaining "
        "(no limit maxExecutions is declared)"
    ]


# --- verify-time evaluation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "amount", "result"),
    [
        ({"monthly": {"used": 10, "remaining": 90}}, 40.0, "pass"),
        ({"monthly": {"used": 60, "remaining": 40}}, 40.0, "pass"),  # exactly what is left
        ({"monthly": {"used": 60.5, "remaining": 39.5}}, 40.0, "fail"),
        ({"monthly": {"used": 100, "remaining": 0}}, 0.5, "fail"),
        ({"monthly": {"used": 0, "remaining": 1_000_000_000_000_000}}, 40.0, "pass"),
    ],
)
def test_a_rule_passes_or_fails_on_the_usage_given(
    usage: dict[str, dict[str, Any]], amount: float, result: str
) -> None:
    assert [e.result for e in run(SPENDING, usage, amount).evaluations] == [result]


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("usage.monthly.used == 60", "pass"),  # a JSON int read as a number (double) compares by value
        ("usage.monthly.used == 60.0", "pass"),
        ("usage.monthly.used + executionParams.amount <= userParams.max", "pass"),  # double + double
        ("usage.monthly.used + executionParams.amount < userParams.max", "fail"),
        ("usage.runs.remaining > 0 && usage.runs.used < 3", "fail"),
        ("usage.runs.remaining > 0 && usage.runs.used <= 3", "pass"),
    ],
)
def test_used_and_remaining_are_numbers(expression: str, result: str) -> None:
    usage = {"monthly": {"used": 60, "remaining": 40}, "runs": {"used": 3, "remaining": 7}}
    assert run(expression, usage).evaluations[0].result == result


def test_the_usage_fields_of_a_mandate_are_what_rules_read() -> None:
    """From the signed bounds and the credential's row (policy.limits) to a rule's result: 60 of a
    monthly 100 used in March, 40 left; February's use is a past period and does not count."""
    bounds = [Bound("monthly", "sum", 100, "amount", "P1M"), Bound("maxExecutions", "executions", 5)]
    row = {"monthly": {"p": "2025-03", "u": "60"}, "maxExecutions": {"p": "", "u": "2"}}
    fields = usage_fields(bounds, row, NOW)
    assert fields == {"monthly": {"used": 60, "remaining": 40}, "maxExecutions": {"used": 2, "remaining": 3}}
    assert [e.result for e in run(SPENDING, fields, 40.0).evaluations] == ["pass"]
    assert [e.result for e in run(SPENDING, fields, 40.5).evaluations] == ["fail"]
    february = usage_fields(bounds, {"monthly": {"p": "2025-02", "u": "99"}}, NOW)
    assert [e.result for e in run(SPENDING, february, 99.0).evaluations] == ["pass"]


@pytest.mark.parametrize(
    ("usage", "reason"),
    [
        (None, "no value for field 'monthly'"),
        ({}, "no value for field 'monthly'"),
        ({"daily": {"used": 1, "remaining": 2}}, "no value for field 'monthly'"),
        ({"monthly": {"used": 1}}, "no value for field 'remaining'"),
        ({"monthly": {"used": 1, "remaining": "lots"}}, "no value for field 'remaining'"),
        ({"monthly": {"used": 1, "remaining": True}}, "no value for field 'remaining'"),
        ({"monthly": {"used": 0, "remaining": 10**400}}, "no value for field 'remaining'"),  # no double
    ],
)
def test_a_rule_on_usage_not_given_errors_and_the_others_still_run(
    usage: dict[str, dict[str, Any]] | None, reason: str
) -> None:
    rules = [Rule("spending", SPENDING), Rule("small", "executionParams.amount < 50.0")]
    evaluations = run_rules(
        "usage-missing",
        rules,
        {"amount": 40.0},
        {},
        NOW,
        execution_types=EXECUTION,
        user_types=USER,
        usage=usage,
    ).evaluations
    assert [e.as_json() for e in evaluations] == [
        {"rule": "spending", "expression": SPENDING, "result": "error", "reason": reason},
        {"rule": "small", "expression": "executionParams.amount < 50.0", "result": "pass"},
    ]


def test_evaluate_hands_usage_on() -> None:
    [evaluation] = evaluate(
        "usage-evaluate",
        [Rule("r", SPENDING)],
        {"amount": 40.0},
        {},
        NOW,
        execution_types=EXECUTION,
        user_types=USER,
        usage={"monthly": {"used": 70, "remaining": 30}},
    )
    assert evaluation.result == "fail"


# --- a rules job carries usage --------------------------------------------------------------------


def _job(usage: dict[str, dict[str, Any]]) -> RulesJob:
    return RulesJob(
        "usage-job",
        [Rule("spending", SPENDING), Rule("runs", "usage.runs.remaining >= 1")],
        EXECUTION,
        USER,
        {"amount": 40.0},
        {"max": 100.0},
        NOW,
        cost.RULE_BUDGET,
        usage,
    )


def test_a_job_encoded_and_decoded_carries_usage_and_runs_the_same() -> None:
    job = _job({"monthly": {"used": 60, "remaining": 40}, "runs": {"used": 10, "remaining": 0}})
    line = job.encode()
    assert json.loads(line)["usage"] == {
        "monthly": {"used": 60, "remaining": 40},
        "runs": {"used": 10, "remaining": 0},
    }
    again = decode_job(line)
    assert again == job
    assert again.usage == job.usage
    assert [e.result for e in job.run().evaluations] == ["pass", "fail"]
    assert again.run() == job.run()


def test_the_evaluation_process_answers_a_job_with_usage() -> None:
    job = _job({"monthly": {"used": 60.5, "remaining": 39.5}, "runs": {"used": 1, "remaining": 9}})
    answers = io.BytesIO()
    serve(io.BytesIO(job.encode()), answers)
    ready, answer = answers.getvalue().splitlines(keepends=True)
    assert ready == READY
    assert [e.result for e in decode_run(answer).evaluations] == ["fail", "pass"]
    assert decode_run(answer) == job.run()


def test_a_job_made_without_usage_has_none_and_its_rules_on_usage_error() -> None:
    job = RulesJob("usage-job", [Rule("spending", SPENDING)], EXECUTION, USER, {"amount": 1.0}, {}, NOW, 100)
    assert job.usage == {}
    assert json.loads(job.encode())["usage"] == {}
    run_ = job.run()
    assert [(e.result, e.reason) for e in run_.evaluations] == [("error", "no value for field 'monthly'")]
    # a line written before jobs carried usage
    older = json.loads(job.encode())
    del older["usage"]
    assert decode_job(json.dumps(older).encode()) == job


@pytest.mark.parametrize("usage", [[], {"monthly": 3}, "monthly"])
def test_a_line_with_usage_of_another_shape_is_not_a_job(usage: Any) -> None:
    line = json.loads(_job({}).encode())
    line["usage"] = usage
    with pytest.raises(ValueError, match="not a rules job"):
        decode_job(json.dumps(line).encode())


# --- the cost estimate stays an upper bound -------------------------------------------------------

TWENTY = {f"limit{i}": {"used": i * 1.5, "remaining": 1_000_000_000_000_000} for i in range(20)}
COSTED = [
    SPENDING.replace("monthly", "limit3"),
    "usage.limit0.used < 1.0 && usage.limit19.remaining > 0 || usage.limit7.used == 10.5",
    "executionParams.tags.all(t, usage.limit1.remaining > double(size(t)))",
    "executionParams.tags.exists(t, usage.limit2.used + executionParams.amount <= userParams.max)",
    "size(usage) == 20",  # refused by the check; its estimate still bounds it
    "usage == usage",
    "usage.limit4 == usage.limit5",
]


def _steps(expression: str, tags: list[str]) -> int:
    return run_rules(
        "usage-cost",
        [Rule("r", expression)],
        {"amount": 3.0, "tags": tags},
        {"max": 10.0},
        NOW,
        execution_types=EXECUTION,
        user_types=USER,
        budget=10**12,
        usage=TWENTY,
    ).steps


@pytest.mark.parametrize("expression", COSTED)
def test_the_estimate_bounds_the_steps_of_rules_on_usage(expression: str) -> None:
    """With 20 limits (the most an action declares) and params at their bounds, as declared and as
    sent: the meter never counts more than the estimate."""
    tags = ["x" * 1000] * 100  # the default maxItems and maxLength
    spent = _steps(expression, tags)
    tree = cel.parse(expression)
    declared = cost.estimate(tree, cost.declared_roots(EXECUTION, USER, list(TWENTY)))
    values = cost.estimate(tree, cost.value_roots({"amount": 3.0, "tags": tags}, {"max": 10.0}, TWENTY))
    assert spent <= declared, (spent, declared)
    assert spent <= values, (spent, values)


def test_a_jobs_estimate_counts_its_usage() -> None:
    eighteen = dict(list(TWENTY.items())[:18])
    job = _job({**eighteen, "monthly": {"used": 0, "remaining": 40}, "runs": {"used": 0, "remaining": 1}})
    assert [e.result for e in job.run().evaluations] == ["pass", "pass"]
    assert job.run().steps <= job.steps_at_most() <= job.steps_at_most(declared=True)
    wide = RulesJob(
        "usage-job-wide",
        [Rule("all", "usage == usage")],
        [],
        [],
        {},
        {},
        NOW,
        cost.RULE_BUDGET,
        TWENTY,
    )
    narrow = RulesJob("usage-job-wide", wide.rules, [], [], {}, {}, NOW, cost.RULE_BUDGET)
    # the declared estimate is remembered per limits too: the same version and rules with 20
    # limits is not given the estimate made with none
    assert narrow.steps_at_most(declared=True) < wide.steps_at_most(declared=True)
    assert wide.run().steps <= wide.steps_at_most(declared=True)
    assert wide.run().steps <= wide.steps_at_most()
