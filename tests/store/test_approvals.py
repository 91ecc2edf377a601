"""store.approvals: numbered versions scoped to one organization, archived approvals and
workflows, what a request takes (in order, every problem named) and which version each request
credential came from. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from store import approval_credentials, approvals
from store import requests as request_store
from tests.conftest import new_org
from tests.support.api_client import Credentials

ACTOR = "operator:tests"


@pytest.fixture
def other(engine: Engine, cipher: SecretCipher, settings: Settings) -> Credentials:
    return new_org(engine, cipher, settings)


def json_version(name: str, value: int) -> approvals.NewVersion:
    return approvals.NewVersion(
        name=name, type="JSON", content={"json": {"v": value}}, internal_id=f"in-{name}"
    )


def test_versions_count_up_and_keep_what_they_were(engine: Engine, org: Credentials) -> None:
    org_id = org.organization_id
    first = approvals.create_approval(engine, org_id, json_version("a", 1), actor=ACTOR)
    approval_id = first.approval.id
    for value in (2, 3):
        approvals.add_version(engine, org_id, approval_id, json_version("a", value), actor=ACTOR)
    assert approvals.get_approval(engine, org_id, approval_id).current.content == {"json": {"v": 3}}  # type: ignore[union-attr]
    old = approvals.version_of(engine, org_id, approval_id, 1)
    assert old is not None and (old.number, old.content, old.id) == (1, {"json": {"v": 1}}, first.current.id)
    assert approvals.version_of(engine, org_id, approval_id, 4) is None
    with pytest.raises(approvals.Refused, match="keeps its type"):
        approvals.add_version(
            engine, org_id, approval_id, approvals.NewVersion("a", "FORM", {"fields": []}), actor=ACTOR
        )


def test_another_organization_sees_nothing(engine: Engine, org: Credentials, other: Credentials) -> None:
    approval_id = approvals.create_approval(
        engine, org.organization_id, json_version("a", 1), actor=ACTOR
    ).approval.id
    theirs = other.organization_id
    assert approvals.get_approval(engine, theirs, approval_id) is None
    assert approvals.version_of(engine, theirs, approval_id) is None
    assert approvals.list_approvals(engine, theirs, approvals.Filter()) == ([], 0)
    with pytest.raises(approvals.NotFound):
        approvals.add_version(engine, theirs, approval_id, json_version("a", 2), actor=ACTOR)
    with pytest.raises(approvals.NotFound):
        approvals.archive_approval(engine, theirs, approval_id, actor=ACTOR)
    with pytest.raises(approvals.NotFound):
        approvals.create_workflow(engine, theirs, "w", None, [approval_id], actor=ACTOR)
    taken, problems = approvals.take_for_request(engine, theirs, [approval_id], [])
    assert taken == [] and problems == [f"resourcesIds.0: approval {approval_id} not found"]


def test_take_expands_workflows_in_order(engine: Engine, org: Credentials) -> None:
    org_id = org.organization_id
    a, b, c = (
        approvals.create_approval(engine, org_id, json_version(n, 1), actor=ACTOR).approval.id for n in "abc"
    )
    flow = approvals.create_workflow(engine, org_id, "flow", "d", [c, a], actor=ACTOR).workflow.id
    approvals.add_version(engine, org_id, a, json_version("a", 2), actor=ACTOR)
    taken, problems = approvals.take_for_request(engine, org_id, [b], [flow])
    assert problems == []
    assert [(t.approval.id, t.version.number, t.workflow_id) for t in taken] == [
        (b, 1, None),
        (c, 1, flow),
        (a, 2, flow),
    ]
    approvals.archive_approval(engine, org_id, c, actor=ACTOR)
    _, problems = approvals.take_for_request(engine, org_id, [], [flow])
    assert problems == [f"groupIds.0: approval {c} is archived"]
    approvals.archive_workflow(engine, org_id, flow, actor=ACTOR)
    _, problems = approvals.take_for_request(engine, org_id, [], [flow])
    assert problems == [f"groupIds.0: workflow {flow} is archived"]


def test_a_request_keeps_the_version_its_credential_came_from(engine: Engine, org: Credentials) -> None:
    org_id = org.organization_id
    view = approvals.create_approval(engine, org_id, json_version("a", 1), actor=ACTOR)
    source = request_store.ApprovalSource(view.approval.id, view.current.id, 1, "JSON")
    new = request_store.NewRequest(
        security_level="CONTACT",
        contacts=[request_store.NewContact("ann@example.com", "email")],
        credentials=[
            request_store.NewCredential(
                "DOCUMENT", "inline", data=[{"label": "x", "type": "t", "value": "v"}]
            ),
            request_store.NewCredential(
                "DOCUMENT", "a", data=[{"label": "a", "type": "JSON", "value": "{}"}], source=source
            ),
        ],
    )
    bundle = request_store.create_request(
        engine, org_id, new, timedelta(days=1), 100, None, lambda b: {}, ACTOR
    )
    assert isinstance(bundle, request_store.RequestBundle)
    approvals.add_version(engine, org_id, view.approval.id, json_version("a", 2), actor=ACTOR)
    found = approval_credentials.sources_of(engine, [c.id for c in bundle.credentials])
    inline, made = bundle.credentials
    assert inline.id not in found
    assert (found[made.id].approval_id, found[made.id].version_id, found[made.id].version) == (
        view.approval.id,
        view.current.id,
        1,
    )
