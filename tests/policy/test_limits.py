"""policy.limits (issue 31): declaring limits, resolving their bounds per request, UTC calendar
periods, and what one verification uses against a mandate's usage."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from policy import check_spec, parse_action_spec
from policy.limits import (
    Bound,
    assess,
    executions_remaining,
    exhausted,
    parse_limits,
    resolve,
    signed_bounds,
    spent,
    usage_fields,
    window,
    with_max_executions,
)

NOW = datetime(2026, 11, 27, 20, 0, tzinfo=UTC)
MONTHLY = {"name": "monthly", "kind": "sum", "param": "amount", "max": "userParams.cap", "period": "P1M"}


def errors_of(raw: Any) -> list[str]:
    return parse_limits(raw)[1]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"name": "1x", "kind": "executions", "max": 1}, "limits[0].name must be an identifier"),
        ({"name": "maxExecutions", "kind": "executions", "max": 1}, "is the request's own bound"),
        ({"name": "a", "kind": "count", "max": 1}, "limits[0].kind must be one of executions, sum, rate"),
        ({"name": "a", "kind": "executions", "max": 2.5}, "max of an executions limit must be a whole"),
        ({"name": "a", "kind": "executions", "max": -1}, "max must be between 0 and"),
        ({"name": "a", "kind": "executions", "max": "5"}, "max must be a number or userParams.<name>"),
        ({"name": "a", "kind": "executions", "max": True}, "max must be a number or userParams.<name>"),
        ({"name": "a", "kind": "sum", "max": 5}, "param must name the numeric execution param"),
        ({"name": "a", "kind": "rate", "max": 5}, "period is required for a rate limit"),
        ({"name": "a", "kind": "rate", "max": 5, "period": "P2D"}, "period must be one of P1D, P1W, P1M"),
        ({"name": "a", "kind": "executions", "max": 5, "period": "P1D"}, "counts over the mandate's life"),
        ({"name": "a", "kind": "rate", "max": 5, "period": "P1D", "param": "x"}, "param is only for a sum"),
        ({"name": "a", "kind": "rate", "max": 5, "period": "P1D", "unit": "EUR"}, "unit is only for a sum"),
        ({**MONTHLY, "unit": "E\nUR"}, "unit must be one line of 1 to 16 characters"),
        ({"name": "a", "kind": "executions", "max": 1, "extra": 1}, "limits[0].extra is not a known field"),
    ],
)
def test_a_malformed_limit_is_refused_by_its_place(item: dict[str, Any], message: str) -> None:
    found = errors_of([item])
    assert any(message in e for e in found), found


def test_names_are_unique_and_the_list_is_bounded() -> None:
    twice = [{"name": "a", "kind": "executions", "max": 1}] * 2
    assert errors_of(twice) == ["limits[1].name a is declared twice"]
    many = [{"name": f"l{i}", "kind": "executions", "max": 1} for i in range(21)]
    assert errors_of(many) == ["limits has 21 items, more than the 20 an action may have"]
    assert errors_of("uses") == ["limits must be a list of limits"]
    assert parse_limits(None) == ([], [])


def test_publishing_checks_the_params_a_limit_reads() -> None:
    raw = {
        "name": "Pay",
        "executionParams": [{"name": "amount", "type": "number"}, {"name": "payee", "type": "string"}],
        "userParams": [{"name": "cap", "type": "number"}, {"name": "label", "type": "string"}],
        "limits": [
            MONTHLY,
            {**MONTHLY, "name": "byPayee", "param": "payee"},
            {**MONTHLY, "name": "missing", "param": "nothing"},
            {**MONTHLY, "name": "labelled", "max": "userParams.label"},
            {**MONTHLY, "name": "unknown", "max": "userParams.nope"},
        ],
    }
    spec, errors = parse_action_spec(raw)
    assert spec is not None and not errors
    assert check_spec(spec) == [
        "limit byPayee: executionParams.payee is a string; a sum needs a number",
        "limit missing: executionParams has no param nothing",
        "limit labelled: userParams.label is a string; a max needs a number",
        "limit unknown: userParams has no param nope",
    ]


def test_a_version_without_limits_keeps_its_content() -> None:
    from policy import canonical_content

    spec, _ = parse_action_spec({"name": "Door"})
    assert spec is not None and "limits" not in canonical_content(spec)
    spec, _ = parse_action_spec({"name": "Door", "limits": [{"name": "u", "kind": "executions", "max": 2}]})
    assert spec is not None and canonical_content(spec)["limits"] == [
        {"name": "u", "kind": "executions", "max": 2}
    ]


def test_each_request_resolves_its_own_budget() -> None:
    limits, _ = parse_limits(
        [{**MONTHLY, "unit": "EUR"}, {"name": "uses", "kind": "executions", "max": "userParams.n"}]
    )
    bounds, errors = resolve(limits, {"cap": 500, "n": 3.0})
    assert errors == [] and [b.as_json() for b in bounds] == [
        {"name": "monthly", "kind": "sum", "max": 500, "param": "amount", "period": "P1M", "unit": "EUR"},
        {"name": "uses", "kind": "executions", "max": 3},
    ]
    assert isinstance(bounds[1].max, int)
    _, errors = resolve(limits, {"cap": "500", "n": 2.5})
    assert errors == [
        "limit monthly: userParams.cap must be a number between 0 and 1,000,000,000,000,000",
        "limit uses: userParams.n must be a whole number (a count)",
    ]


@pytest.mark.parametrize(
    ("period", "now", "key", "resets"),
    [
        (None, NOW, "", None),
        ("P1D", NOW, "2026-11-27", datetime(2026, 11, 28, tzinfo=UTC)),
        ("P1W", datetime(2026, 11, 29, 23, 59, tzinfo=UTC), "2026-W48", datetime(2026, 11, 30, tzinfo=UTC)),
        ("P1W", datetime(2026, 11, 30, tzinfo=UTC), "2026-W49", datetime(2026, 12, 7, tzinfo=UTC)),
        ("P1M", datetime(2026, 12, 31, 23, 59, tzinfo=UTC), "2026-12", datetime(2027, 1, 1, tzinfo=UTC)),
        ("P1M", datetime(2027, 2, 1, 0, 30, tzinfo=UTC), "2027-02", datetime(2027, 3, 1, tzinfo=UTC)),
    ],
)
def test_periods_are_utc_calendar_periods(
    period: str | None, now: datetime, key: str, resets: datetime | None
) -> None:
    assert window(period, now) == (key, resets)


def test_a_period_in_another_time_zone_is_read_in_utc() -> None:
    from datetime import timedelta, timezone

    lisbon_evening = datetime(2026, 11, 30, 0, 30, tzinfo=timezone(timedelta(hours=2)))  # 29th, 22:30 UTC
    assert window("P1D", lisbon_evening)[0] == "2026-11-29"


def test_a_use_counts_only_when_everything_fits_and_a_new_period_starts_at_zero() -> None:
    bounds = [Bound("monthly", "sum", 0.3, "amount", "P1M"), Bound("daily", "rate", 2, None, "P1D")]
    usage = spent(None, assess(bounds, None, {"amount": 0.1}, NOW))
    usage = spent(usage, assess(bounds, usage, {"amount": 0.2}, NOW))
    assert usage["monthly"] == {"p": "2026-11", "u": "0.3"}  # decimals: exactly the budget
    full = assess(bounds, usage, {"amount": 0}, NOW)
    assert [u.fits for u in full] == [True, False]  # the day's two uses are spent
    assert full[1].evaluation(allowed=False)["reason"] == "needs 1, 0 left"
    tomorrow = datetime(2026, 11, 28, tzinfo=UTC)
    assert [u.fits for u in assess(bounds, usage, {"amount": 0}, tomorrow)] == [True, True]
    december = assess(bounds, usage, {"amount": 0.3}, datetime(2026, 12, 1, tzinfo=UTC))
    assert december[0].used == Decimal(0) and december[0].fits


def test_a_sum_refuses_a_negative_or_missing_amount() -> None:
    bound = [Bound("monthly", "sum", 100, "amount", "P1M")]
    [negative] = assess(bound, None, {"amount": -5}, NOW)
    [missing] = assess(bound, None, {}, NOW)
    assert not negative.fits and negative.problem == "executionParams.amount is negative"
    assert not missing.fits and missing.problem == "executionParams.amount is not a number"


def test_the_evaluation_reports_after_an_allowed_use_and_as_it_stands_on_a_denial() -> None:
    [use] = assess(
        [Bound("monthly", "sum", 500, "amount", "P1M", "EUR")],
        {"monthly": {"p": "2026-11", "u": "100"}},
        {"amount": 150.5},
        NOW,
    )
    assert use.evaluation(allowed=True) == {
        "name": "monthly",
        "kind": "sum",
        "max": 500,
        "used": 250.5,
        "remaining": 249.5,
        "amount": 150.5,
        "result": "pass",
        "param": "amount",
        "period": "P1M",
        "resetsAt": "2026-12-01T00:00:00Z",
    }
    assert use.evaluation(allowed=False)["used"] == 100


def test_the_last_use_of_an_executions_bound_exhausts_the_mandate() -> None:
    bounds = with_max_executions([Bound("daily", "rate", 1, None, "P1D")], 2)
    first = assess(bounds, None, {}, NOW)
    assert not exhausted(first)  # a spent rate is not a spent mandate
    usage = spent(None, first)
    assert executions_remaining(bounds, usage, NOW) == 1
    second = assess(bounds, usage, {}, datetime(2026, 11, 28, tzinfo=UTC))
    assert exhausted(second) and executions_remaining(bounds, spent(usage, second), NOW) == 0
    assert executions_remaining([Bound("daily", "rate", 1, None, "P1D")], None, NOW) is None


def test_rules_read_the_use_before_this_verification() -> None:
    bounds = [Bound("monthly", "sum", 500, "amount", "P1M")]
    assert usage_fields(bounds, {"monthly": {"p": "2026-11", "u": "120.5"}}, NOW) == {
        "monthly": {"used": 120.5, "remaining": 379.5}
    }
    assert usage_fields(bounds, {"monthly": {"p": "2026-10", "u": "499"}}, NOW)["monthly"]["used"] == 0


@pytest.mark.parametrize(
    "mandate",
    [
        {"limits": "uses"},
        {"limits": [{"name": "a", "kind": "count", "max": 1}]},
        {"limits": [{"name": "a", "kind": "sum", "max": 1}]},
        {"limits": [{"name": "a", "kind": "rate", "max": "1", "period": "P1D"}]},
        {"maxExecutions": 0},
        {"maxExecutions": True},
    ],
)
def test_bounds_a_mandate_does_not_sign_this_way_are_refused(mandate: dict[str, Any]) -> None:
    assert signed_bounds(mandate) is None


def test_the_signed_bounds_are_read_back() -> None:
    signed = {
        "limits": [{"name": "monthly", "kind": "sum", "max": 9, "param": "amount", "unit": "EUR"}],
        "maxExecutions": 4,
    }
    assert signed_bounds(signed) == [
        Bound("monthly", "sum", 9, "amount", None, "EUR"),
        Bound("maxExecutions", "executions", 4),
    ]
