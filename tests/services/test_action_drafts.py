"""services.action_drafts: a draft checked with publishing's checks (each problem placed by its
param or rule, even while the draft does not parse), and its rules tried as a verification runs
them: within the step budget, inline or in an evaluation process, a draft's changed bounds never
estimated from its earlier content."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.actors import Actor
from policy.actions import ActionSpec, check_spec, parse_action_spec
from services import action_drafts
from services.context import Context

MIA = Actor.member("mia")
ORG = "org-of-mia"  # the organization whose turn costly rules wait for
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


def test_a_draft_is_checked_with_the_checks_publishing_runs(ctx: Context) -> None:
    broken = {
        **SPEC,
        "rules": [
            {"name": "undeclared", "expression": "executionParams.nope > 1"},
            {"name": "notBoolean", "expression": "executionParams.amount + 1.0"},
            {"name": "fine", "expression": "executionParams.amount <= userParams.max"},
        ],
    }
    checked = action_drafts.check(ctx, MIA, broken)
    assert checked.spec is not None and not checked.publishable
    assert checked.problems == [
        action_drafts.Problem("rules", 0, "refers to undeclared field executionParams.nope"),
        action_drafts.Problem("rules", 1, "yields double, not a boolean"),
    ]
    # the same messages as check_spec, which publishing runs, each placed
    assert action_drafts.placed(check_spec(checked.spec), checked.spec) == checked.problems
    assert action_drafts.check(ctx, MIA, SPEC).publishable


def test_a_draft_that_does_not_parse_still_has_its_rules_checked(ctx: Context) -> None:
    typing = {
        "name": "Pay",
        "executionParams": [{"name": "amount", "type": "number"}, {"name": "2nd", "type": "number"}],
        "userParams": [{"name": "max", "type": "money"}],
        "rules": [
            {"name": "", "expression": "executionParams.amount > 0"},
            {"name": "cmp", "expression": "executionParams.amount <= userParams.max"},
            {"name": "empty", "expression": " "},
        ],
    }
    checked = action_drafts.check(ctx, MIA, typing)
    assert checked.spec is None and not checked.publishable
    assert checked.problems == [
        action_drafts.Problem("executionParams", 1, "name must match ^[a-zA-Z_][a-zA-Z0-9_]*$"),
        action_drafts.Problem(
            "userParams",
            0,
            "type must be one of string, number, integer, boolean, timestamp, array<string>, array<number>",
        ),
        action_drafts.Problem("rules", 0, "name must be a non-empty string of at most 100"),
        action_drafts.Problem("rules", 2, "expression must be a non-empty string"),
        # the rule being typed is checked against the params that parse: max does not (yet)
        action_drafts.Problem("rules", 1, "refers to undeclared field userParams.max"),
    ]
    unsignable = {**SPEC, "userParams": [{"name": "max", "type": "integer", "default": 2**60}]}
    (problem,) = action_drafts.check(ctx, MIA, unsignable).problems
    assert (problem.part, problem.index) == ("userParams", 0) and "within ±(2^53-1)" in problem.text


async def test_rules_are_tried_as_verification_evaluates_them(ctx: Context) -> None:
    spec = parse_spec(
        {
            **SPEC,
            "userParams": [*SPEC["userParams"], {"name": "tags", "type": "array<string>", "default": []}],
            "rules": [
                *SPEC["rules"],
                {"name": "divides", "expression": "1 / size(userParams.tags) == 1"},
                {"name": "early", "expression": "now < timestamp('2030-01-01T00:00:00Z')"},
            ],
        }
    )
    at = datetime(2029, 1, 1, tzinfo=UTC)
    tried = await action_drafts.try_rules(ctx, MIA, ORG, spec, "draft", {"amount": 5}, {"max": 10}, at)
    assert [(e.rule, e.result, e.reason) for e in tried.evaluations] == [
        ("under", "pass", None),
        ("divides", "error", "modulus or divide by zero"),  # the default [] filled the omitted tags
        ("early", "pass", None),
    ]
    later = await action_drafts.try_rules(
        ctx, MIA, ORG, spec, "draft", {"amount": 11}, {"max": 10, "tags": ["a"]}, at.replace(2031)
    )
    assert [e.result for e in later.evaluations] == ["fail", "pass", "fail"]
    refused = await action_drafts.try_rules(ctx, MIA, ORG, spec, "draft", {"amount": "5", "extra": 1}, {}, at)
    assert refused == action_drafts.Tried(
        [],
        [
            "executionParams.amount must be a number",
            "executionParams.extra is not declared",
            "userParams.max is missing",
        ],
    )


async def test_a_draft_tried_with_a_larger_bound_is_estimated_again(ctx: Context) -> None:
    """A draft changes under its version's id, and a version's estimate at its params' bounds is
    remembered by key and expressions (``policy.jobs``): the same rule tried again after its param's
    maxItems grew must not run inline on the smaller bound's estimate, but in an evaluation process."""
    quadratic = "executionParams.items.all(x, executionParams.items.exists_one(y, y == x))"
    raw = {"name": "Batch", "rules": [{"name": "distinct", "expression": quadratic}]}
    small = parse_spec(raw | {"executionParams": [{"name": "items", "type": "array<string>", "maxItems": 3}]})
    large = parse_spec(raw | {"executionParams": [{"name": "items", "type": "array<string>"}]})
    at = datetime(2029, 1, 1, tzinfo=UTC)
    try:
        tried = await action_drafts.try_rules(ctx, MIA, ORG, small, "draft", {"items": ["a", "b"]}, {}, at)
        assert [e.result for e in tried.evaluations] == ["pass"] and not ctx.rules.ran_in  # inline
        twenty = {"items": [f"i{n}" for n in range(20)]}
        tried = await action_drafts.try_rules(ctx, MIA, ORG, large, "draft", twenty, {}, at)
        assert [e.result for e in tried.evaluations] == ["pass"] and sum(ctx.rules.ran_in.values()) == 1
        assert action_drafts.draft_key("draft", small) != action_drafts.draft_key("draft", large)
        stopped = await action_drafts.try_rules(
            ctx, MIA, ORG, large, "draft", {"items": [f"i{n}" for n in range(100)]}, {}, at
        )
        assert (stopped.limit_reached, stopped.steps >= 10_000, stopped.evaluations[0].result) == (
            True,
            True,
            "error",
        )
    finally:
        await ctx.rules.close()
