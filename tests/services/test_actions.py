"""services.actions: create, add a version, publish, by a named actor; publish refusals list every
problem. What the dashboard calls: renaming that reaches drafts only, deletion only while no
credential names the action (its checks and trials of a draft: test_action_drafts.py)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from cli.devstack import EXAMPLE_ACTION_ID
from core.actors import Actor
from core.kinds import ActionVersionStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from policy.actions import ActionSpec, parse_action_spec
from services import actions
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import issued_mandate

BOB = Actor.shell_operator("bob")
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
