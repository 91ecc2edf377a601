"""services.actions: create, add a version, publish, by a named actor; publish refusals list every
problem. What the dashboard calls: a draft checked with publishing's checks (each problem placed by
its param or rule, even while the draft does not parse), rules tried as verification evaluates
them, renaming that reaches drafts only, deletion only while no credential names the action."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine

from cli.devstack import EXAMPLE_ACTION_ID
from core.actors import Actor
from core.kinds import ActionVersionStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from policy.actions import ActionSpec, check_spec, parse_action_spec
from services import actions
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from tests.conftest import new_org
from tests.support.audit_helpers import issued_mandate
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


# --- what the dashboard calls -----------------------------------------------------------------------

MIA = Actor.member("mia")
ORG = "org-of-mia"  # the organization whose turn costly rules wait for (none here: all run inline)


def test_a_draft_is_checked_with_the_checks_publishing_runs(ctx: Context) -> None:
    broken = {
        **SPEC,
        "rules": [
            {"name": "undeclared", "expression": "executionParams.nope > 1"},
            {"name": "notBoolean", "expression": "executionParams.amount + 1.0"},
            {"name": "fine", "expression": "executionParams.amount <= userParams.max"},
        ],
    }
    checked = actions.check(ctx, MIA, broken)
    assert checked.spec is not None and not checked.publishable
    assert checked.problems == [
        actions.Problem("rules", 0, "refers to undeclared field executionParams.nope"),
        actions.Problem("rules", 1, "yields double, not a boolean"),
    ]
    # the same messages as check_spec, which publishing runs, each placed
    assert actions.placed(check_spec(checked.spec), checked.spec) == checked.problems
    assert actions.check(ctx, MIA, SPEC).publishable


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
    checked = actions.check(ctx, MIA, typing)
    assert checked.spec is None and not checked.publishable
    assert checked.problems == [
        actions.Problem("executionParams", 1, "name must match ^[a-zA-Z_][a-zA-Z0-9_]*$"),
        actions.Problem(
            "userParams",
            0,
            "type must be one of string, number, integer, boolean, timestamp, array<string>, array<number>",
        ),
        actions.Problem("rules", 0, "name must be a non-empty string of at most 100"),
        actions.Problem("rules", 2, "expression must be a non-empty string"),
        # the rule being typed is checked against the params that parse: max does not (yet)
        actions.Problem("rules", 1, "refers to undeclared field userParams.max"),
    ]
    unsignable = {**SPEC, "userParams": [{"name": "max", "type": "integer", "default": 2**60}]}
    (problem,) = actions.check(ctx, MIA, unsignable).problems
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
    tried = await actions.try_rules(ctx, MIA, ORG, spec, "draft", {"amount": 5}, {"max": 10}, at)
    assert [(e.rule, e.result, e.reason) for e in tried.evaluations] == [
        ("under", "pass", None),
        ("divides", "error", "modulus or divide by zero"),  # the default [] filled the omitted tags
        ("early", "pass", None),
    ]
    later = await actions.try_rules(
        ctx, MIA, ORG, spec, "draft", {"amount": 11}, {"max": 10, "tags": ["a"]}, at.replace(2031)
    )
    assert [e.result for e in later.evaluations] == ["fail", "pass", "fail"]
    refused = await actions.try_rules(ctx, MIA, ORG, spec, "draft", {"amount": "5", "extra": 1}, {}, at)
    assert refused == actions.Tried(
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
        tried = await actions.try_rules(ctx, MIA, ORG, small, "draft", {"items": ["a", "b"]}, {}, at)
        assert [e.result for e in tried.evaluations] == ["pass"] and not ctx.rules.ran_in  # inline
        twenty = {"items": [f"i{n}" for n in range(20)]}
        tried = await actions.try_rules(ctx, MIA, ORG, large, "draft", twenty, {}, at)
        assert [e.result for e in tried.evaluations] == ["pass"] and sum(ctx.rules.ran_in.values()) == 1
        assert actions.draft_key("draft", small) != actions.draft_key("draft", large)
        stopped = await actions.try_rules(
            ctx, MIA, ORG, large, "draft", {"items": [f"i{n}" for n in range(100)]}, {}, at
        )
        assert (stopped.limit_reached, stopped.steps >= 10_000, stopped.evaluations[0].result) == (
            True,
            True,
            "error",
        )
    finally:
        await ctx.rules.close()


def test_renaming_reaches_the_drafts_and_never_a_published_version(ctx: Context, org: Credentials) -> None:
    action, first = actions.new_action(ctx, MIA, org.organization_id, "  Pay  ", "")
    assert (action.name, action.description) == ("Pay", None)
    actions.save_draft(ctx, MIA, org.organization_id, first.id, parse_spec(SPEC))
    actions.publish(ctx, MIA, first.id, org.organization_id)
    second = actions.new_version(ctx, MIA, org.organization_id, action.id)
    renamed = actions.update(ctx, MIA, org.organization_id, action.id, "Pay out", "Up to a limit\r\nonly")
    assert (renamed.name, renamed.description) == ("Pay out", "Up to a limit\nonly")
    detail = actions.detail(ctx, MIA, org.organization_id, action.id)
    assert [(v.version.number, v.spec.name, v.spec.description) for v in detail.versions] == [
        (1, "Pay", None),
        (2, "Pay out", "Up to a limit\nonly"),
    ]
    assert detail.versions[1].spec.rules == detail.versions[0].spec.rules  # a copy of version 1
    with pytest.raises(Conflict, match="published"):
        actions.save_draft(ctx, MIA, org.organization_id, first.id, parse_spec(SPEC))
    with pytest.raises(Invalid) as refused:
        actions.update(ctx, MIA, org.organization_id, action.id, "x" * 201, "tab\there")
    assert refused.value.message == [
        "The name is 1 to 200 characters.",
        "The description holds characters it may not: U+0009.",
    ]
    assert actions.publish(ctx, MIA, second.id, org.organization_id).status == ActionVersionStatus.PUBLISHED


def test_an_action_is_deleted_only_while_no_credential_names_it(
    ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    action, _ = actions.new_action(ctx, MIA, org.organization_id, "Unused", "")
    actions.delete(ctx, MIA, org.organization_id, action.id)
    with pytest.raises(NotFound):
        actions.detail(ctx, MIA, org.organization_id, action.id)
    issued_mandate(engine, cipher, settings, org.organization_id)  # the example action, version 1
    example = actions.detail(ctx, MIA, org.organization_id, EXAMPLE_ACTION_ID)
    assert (example.credentials, [v.mandates for v in example.versions]) == (1, [1])
    newer = actions.new_version(ctx, MIA, org.organization_id, EXAMPLE_ACTION_ID)
    assert actions.detail(ctx, MIA, org.organization_id, EXAMPLE_ACTION_ID).versions[1].version.id == newer.id
    with pytest.raises(Conflict, match=r"1 request credential names it \(1 issued mandate\)"):
        actions.delete(ctx, MIA, org.organization_id, EXAMPLE_ACTION_ID)
    other = new_org(engine, cipher, settings)  # has the example action under the same URN, unused
    assert actions.detail(ctx, MIA, other.organization_id, EXAMPLE_ACTION_ID).credentials == 0
    with pytest.raises(NotFound):
        actions.version(ctx, MIA, other.organization_id, EXAMPLE_ACTION_ID, 2)
