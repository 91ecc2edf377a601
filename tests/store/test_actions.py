"""store.actions: drafts, numbered versions, publishing, immutability, what POST /request pins.

Written from CONTRACT section 6; runs on SQLite and, when reachable, PostgreSQL.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from core.secretbox import SecretCipher
from core.settings import Settings
from policy.actions import canonical_content
from store import actions
from store.db import write_connection
from tests.conftest import new_org
from tests.support.actions import RENT, published, spec
from tests.support.api_client import Credentials
from trust.credentials import digest_sri

UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
ACTION_URN = re.compile(rf"^urn:via:action:{UUID4}$")
VERSION_URN = re.compile(rf"^urn:via:action-version:{UUID4}$")
SRI = re.compile(r"^sha256-[A-Za-z0-9+/]{43}=$")


@pytest.fixture
def other_org(engine: Engine, cipher: SecretCipher, settings: Settings) -> Credentials:
    return new_org(engine, cipher, settings)


def test_create_makes_a_draft_version_one(engine: Engine, org: Credentials) -> None:
    action, version = actions.create_action(engine, org.organization_id, spec())
    assert ACTION_URN.match(action.id) and VERSION_URN.match(version.id)
    assert (action.organization_id, action.name) == (org.organization_id, "Pay rent")
    assert action.description == RENT["description"]
    assert (version.action_id, version.number, version.status) == (action.id, 1, "draft")
    assert version.content == canonical_content(spec())
    assert version.digest_sri is None and version.published_at is None


def test_versions_are_numbered_and_publish_fixes_the_digest(engine: Engine, org: Credentials) -> None:
    action, v1 = actions.create_action(engine, org.organization_id, spec())
    v2 = actions.add_version(engine, org.organization_id, action.id, spec(name="Pay rent v2"))
    v3 = actions.add_version(engine, org.organization_id, action.id, spec())
    assert [v1.number, v2.number, v3.number] == [1, 2, 3]
    assert len({v1.id, v2.id, v3.id}) == 3

    done = actions.publish(engine, v2.id, actor="operator:tests")
    assert done.status == "published" and done.published_at is not None
    assert done.digest_sri is not None and SRI.match(done.digest_sri)
    assert done.digest_sri == digest_sri(canonical_content(spec(name="Pay rent v2")))
    view = actions.get_action(engine, org.organization_id, action.id)
    assert view is not None and [v.id for v in view.versions] == [v2.id]  # drafts never shown
    assert view.action.name == "Pay rent v2"  # the action shows what is published


def test_a_published_version_is_immutable(engine: Engine, org: Credentials) -> None:
    _, version_id = published(engine, org.organization_id)
    with pytest.raises(actions.ActionRefused, match="already published"):
        actions.publish(engine, version_id, actor="operator:tests")
    with pytest.raises(actions.ActionRefused, match="immutable"):
        actions.update_draft(engine, version_id, spec(name="Changed"))
    before = actions.get_version(engine, version_id)
    # the database refuses too, whatever code writes to it
    with pytest.raises(DBAPIError, match="immutable"), write_connection(engine) as conn:
        conn.execute(
            text("UPDATE action_version SET content = :c WHERE id = :id"),
            {"c": '{"name": "tampered"}', "id": version_id},
        )
    after = actions.get_version(engine, version_id)
    assert before is not None and after is not None and after.content == before.content
    assert after.digest_sri == before.digest_sri


def test_a_draft_can_be_edited_then_published(engine: Engine, org: Credentials) -> None:
    _, draft = actions.create_action(engine, org.organization_id, spec())
    edited = actions.update_draft(engine, draft.id, spec(description="Edited"))
    assert edited.content == canonical_content(spec(description="Edited"))
    assert actions.publish(engine, draft.id, actor="operator:tests").digest_sri == digest_sri(edited.content)


def test_publish_refuses_with_every_failed_check(engine: Engine, org: Credentials) -> None:
    bad = {
        **RENT,
        "rules": [
            {"name": "undeclared", "expression": "executionParams.nope > 1"},
            {"name": "notBoolean", "expression": "executionParams.amount + 1"},
            {"name": "broken", "expression": "executionParams.amount <="},
        ],
    }
    _, draft = actions.create_action(engine, org.organization_id, spec(bad))
    with pytest.raises(actions.ActionRefused) as refused:
        actions.publish(engine, draft.id, actor="operator:tests")
    assert len(refused.value.messages) >= 3, refused.value.messages
    for name in ("undeclared", "notBoolean", "broken"):
        assert any(name in m or "rules" in m for m in refused.value.messages), refused.value.messages
    still = actions.get_version(engine, draft.id)
    assert still is not None and still.status == "draft" and still.digest_sri is None


def test_newest_published_version_is_what_requests_pin(engine: Engine, org: Credentials) -> None:
    org_id = org.organization_id
    action_id, v1 = published(engine, org_id)
    v2 = actions.add_version(engine, org_id, action_id, spec(name="Second"))
    resolved = actions.resolve_for_request(engine, org_id, action_id)
    assert resolved is not None and resolved[0].id == v1  # a draft is never pinned
    assert [p.name for p in resolved[1].user_params] == ["maxAmount", "payees"]
    actions.publish(engine, v2.id, actor="operator:tests")
    resolved = actions.resolve_for_request(engine, org_id, action_id)
    assert resolved is not None and resolved[0].id == v2.id and resolved[1].name == "Second"


def test_unknown_unpublished_and_foreign_actions_resolve_to_nothing(
    engine: Engine, org: Credentials, other_org: Credentials
) -> None:
    draft_only, _ = actions.create_action(engine, org.organization_id, spec())
    theirs, _ = published(engine, other_org.organization_id)
    for action_id in (draft_only.id, theirs, "urn:via:action:00000000-0000-4000-8000-000000000000"):
        assert actions.resolve_for_request(engine, org.organization_id, action_id) is None
        assert actions.get_action(engine, org.organization_id, action_id) is None
    assert draft_only.id not in {v.action.id for v in actions.list_actions(engine, org.organization_id)}
    everything = actions.list_actions(engine, org.organization_id, published_only=False)
    assert draft_only.id in {v.action.id for v in everything}


def test_pin_for_request_checks_and_fills_user_params(engine: Engine, org: Credentials) -> None:
    action_id, version_id = published(engine, org.organization_id)
    version = actions.get_version(engine, version_id)
    assert version is not None
    where = "credentials.0.action"
    pin, problems = actions.pin_for_request(
        engine, org.organization_id, action_id, {"maxAmount": 1200}, where=where
    )
    assert problems == []
    assert pin == {
        "id": action_id,
        "version": version_id,
        "digestSRI": version.digest_sri,
        "userParams": {"maxAmount": 1200, "payees": []},
    }
    pin, problems = actions.pin_for_request(
        engine,
        org.organization_id,
        action_id,
        {"maxAmount": "lots", "payees": [1], "extra": True},
        where=where,
    )
    assert pin is None
    for name in ("maxAmount", "payees", "extra"):
        assert any(m.startswith(f"{where}.userParams.{name}") for m in problems), problems
    _, problems = actions.pin_for_request(engine, org.organization_id, action_id, {}, where=where)
    assert any(m.startswith(f"{where}.userParams.maxAmount") for m in problems), problems


def test_the_same_urn_in_two_organizations(engine: Engine, org: Credentials, other_org: Credentials) -> None:
    """An action can be installed under a known URN (staging and production share ids)."""
    action_id = "urn:via:action:6f0c1d2e-3a4b-4c5d-8e6f-708192a3b4c5"
    _, mine = published(engine, org.organization_id, action_id=action_id)
    _, theirs = published(engine, other_org.organization_id, {**RENT, "name": "Theirs"}, action_id)
    assert mine != theirs
    resolved = actions.resolve_for_request(engine, other_org.organization_id, action_id)
    assert resolved is not None and resolved[0].id == theirs and resolved[1].name == "Theirs"
    assert set(actions.organizations_with_action(engine, action_id)) == {
        org.organization_id,
        other_org.organization_id,
    }
    with pytest.raises(actions.ActionRefused, match="already exists"):
        actions.create_action(engine, org.organization_id, spec(), action_id=action_id)
    with pytest.raises(actions.ActionRefused, match="not an action URN"):
        actions.create_action(engine, org.organization_id, spec(), action_id="urn:via:action:1")


def test_unknown_organization_and_action(engine: Engine, org: Credentials) -> None:
    with pytest.raises(actions.NotFound):
        actions.create_action(engine, "0" * 24, spec())
    missing = "urn:via:action:00000000-0000-4000-8000-000000000000"
    with pytest.raises(actions.NotFound):
        actions.add_version(engine, org.organization_id, missing, spec())
    with pytest.raises(actions.NotFound):
        actions.publish(
            engine, "urn:via:action-version:00000000-0000-4000-8000-000000000000", actor="operator:tests"
        )
    with pytest.raises(actions.NotFound):
        actions.delete_action(engine, org.organization_id, missing, actor="operator:tests")


def test_an_unreferenced_action_can_be_deleted(engine: Engine, org: Credentials) -> None:
    action_id, version_id = published(engine, org.organization_id)
    actions.add_version(engine, org.organization_id, action_id, spec())
    actions.delete_action(engine, org.organization_id, action_id, actor="operator:tests")
    assert actions.get_action(engine, org.organization_id, action_id, published_only=False) is None
    assert actions.get_version(engine, version_id) is None


def test_concurrent_new_versions_get_distinct_numbers(engine: Engine, org: Credentials) -> None:
    action, _ = actions.create_action(engine, org.organization_id, spec())
    with ThreadPoolExecutor(max_workers=6) as pool:
        added = list(
            pool.map(lambda _: actions.add_version(engine, org.organization_id, action.id, spec()), range(6))
        )
    assert sorted(v.number for v in added) == [2, 3, 4, 5, 6, 7]
