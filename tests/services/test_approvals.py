"""services.approvals: approvals of each type checked and stored with numbered versions, archived,
listed with their filters; workflows; the credentials POST /request makes of them. On SQLite and
PostgreSQL."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from core.secretbox import SecretCipher
from core.settings import Settings
from services import approvals
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store.tables import Approval, AuditRecord
from tests.conftest import new_org
from tests.support.actions import published
from tests.support.api_client import Credentials
from tests.support.approvals import ALICE, DOCUMENT, FORM, JSON, approval_spec, make, pdf, policy
from tests.support.audit import chain
from trust.credentials import sri_sha256
from wire.approvals import WorkflowSpec


@pytest.fixture
def other(engine: Engine, cipher: SecretCipher, settings: Settings) -> Credentials:
    return new_org(engine, cipher, settings)


def count_approvals(engine: Engine, org_id: str) -> int:
    with Session(engine) as session:
        return len(list(session.exec(select(Approval).where(Approval.organization_id == org_id))))


def test_each_type_is_stored_with_its_content(ctx: Context, org: Credentials, engine: Engine) -> None:
    org_id = org.organization_id
    action_id, _ = published(engine, org_id)
    document = pdf(pages=2)
    ids = {
        raw["type"]: make(ctx, org_id, raw, document if raw is DOCUMENT else None)
        for raw in (FORM, JSON, DOCUMENT)
    }
    ids["POLICY"] = make(ctx, org_id, policy(action_id))
    form = approvals.get(ctx, org_id, ids["FORM"])
    assert (form.approval.type, form.approval.version, form.approval.active) == ("FORM", 1, True)
    assert [f["name"] for f in form.current.content["fields"]] == [
        "fullName",
        "age",
        "start",
        "newsletter",
        "plan",
    ]
    assert approvals.get(ctx, org_id, ids["JSON"]).current.content == {"json": JSON["json"]}
    doc = approvals.get(ctx, org_id, ids["DOCUMENT"]).current
    assert doc.content["pdf"] == {"digestSRI": sri_sha256(document), "size": len(document), "pages": 2}
    assert doc.pdf == document and doc.content["placements"][0]["type"] == "SIGNATURE"
    assert approvals.get(ctx, org_id, ids["POLICY"]).current.content["action"]["id"] == action_id
    with Session(engine) as session:
        kinds = session.exec(select(AuditRecord.type).where(AuditRecord.organization_id == org_id)).all()
    assert kinds.count("APPROVAL_CHANGED") == 4


@pytest.mark.parametrize(
    ("raw", "document", "message"),
    [
        (DOCUMENT, None, "needs its PDF"),
        (DOCUMENT, b"hello", "not a PDF"),
        (DOCUMENT, b"%PDF-1.4 garbage", "cannot be read"),
        (DOCUMENT, b"%PDF-" + b"x" * (5 * 1024 * 1024), "at most"),
        (JSON, b"%PDF-1.4", "takes no PDF"),
        (
            {**DOCUMENT, "placements": [{**DOCUMENT["placements"][0], "pageIndex": 3}]},
            "pdf",
            "page 3 is off the PDF, which has 1 page ",
        ),
        (
            policy("urn:via:action:00000000-0000-4000-8000-000000000000"),
            None,
            "unknown or unpublished action",
        ),
    ],
)
def test_bad_content_is_refused_and_nothing_stored(
    ctx: Context, org: Credentials, engine: Engine, raw: dict, document: bytes | str | None, message: str
) -> None:
    given = pdf() if document == "pdf" else document
    with pytest.raises(Invalid, match=message):
        approvals.create(ctx, ALICE, org.organization_id, approval_spec(raw), given)  # type: ignore[arg-type]
    assert count_approvals(engine, org.organization_id) == 0


def test_a_policy_whose_user_params_the_action_refuses(
    ctx: Context, org: Credentials, engine: Engine
) -> None:
    action_id, _ = published(engine, org.organization_id)
    raw = policy(action_id)
    raw["action"] = {"id": action_id, "userParams": {"maxAmount": "lots"}}
    with pytest.raises(Invalid, match="maxAmount"):
        approvals.create(ctx, ALICE, org.organization_id, approval_spec(raw))
    assert count_approvals(engine, org.organization_id) == 0


def test_versions_and_archiving(ctx: Context, org: Credentials, other: Credentials, engine: Engine) -> None:
    org_id = org.organization_id
    approval_id = make(ctx, org_id, JSON)
    view = approvals.new_version(
        ctx, ALICE, org_id, approval_id, approval_spec(JSON, name="Terms v4", json={"terms": "v4"})
    )
    assert (view.approval.version, view.current.number, view.approval.name) == (2, 2, "Terms v4")
    assert view.current.content == {"json": {"terms": "v4"}}
    with pytest.raises(Conflict, match="keeps its type"):
        approvals.new_version(ctx, ALICE, org_id, approval_id, approval_spec(FORM))
    with pytest.raises(NotFound):
        approvals.new_version(ctx, ALICE, other.organization_id, approval_id, approval_spec(JSON))
    with pytest.raises(NotFound):
        approvals.archive(ctx, ALICE, other.organization_id, approval_id)
    approvals.archive(ctx, ALICE, org_id, approval_id)
    assert approvals.get(ctx, org_id, approval_id).approval.active is False
    with pytest.raises(Conflict, match="archived"):
        approvals.new_version(ctx, ALICE, org_id, approval_id, approval_spec(JSON))
    with pytest.raises(Invalid, match="not an approval id"):
        approvals.archive(ctx, ALICE, org_id, "nope")
    # each change recorded with the approval's name; a new version with the version and name before it
    mine = {"approvalId": approval_id, "type": "JSON"}
    assert [(r.actor, r.data) for r in chain(engine, org_id) if r.type == "APPROVAL_CHANGED"] == [
        ("operator:alice", {**mine, "change": "created", "version": 1, "name": "Terms"}),
        (
            "operator:alice",
            {
                **mine,
                "change": "version",
                "version": 2,
                "name": "Terms v4",
                "previous": {"version": 1, "name": "Terms"},
            },
        ),
        ("operator:alice", {**mine, "change": "archived", "version": 2, "name": "Terms v4"}),
    ]


async def test_list_filters(ctx: Context, org: Credentials, other: Credentials) -> None:
    org_id = org.organization_id
    form, terms = make(ctx, org_id, FORM), make(ctx, org_id, JSON)
    doc = make(ctx, org_id, DOCUMENT)
    make(ctx, other.organization_id, JSON)
    approvals.archive(ctx, ALICE, org_id, terms)

    async def ids(**query: object) -> tuple[list[str], int]:
        found, total = await approvals.find(ctx, org_id, approvals.Filter(**query))  # type: ignore[arg-type]
        return [v.approval.id for v in found], total

    assert await ids() == ([form, terms, doc], 3)
    assert await ids(search="TERM") == ([terms], 1)
    assert await ids(search="%") == ([], 0)
    assert await ids(active=True) == ([form, doc], 2)
    assert await ids(active=False) == ([terms], 1)
    assert await ids(types=("DOCUMENT", "FORM")) == ([form, doc], 2)
    assert await ids(internal_id="lease-1") == ([doc], 1)
    assert await ids(page_index=1, page_size=2) == ([doc], 3)
    with pytest.raises(Invalid, match="CONSENT"):
        await ids(types=("CONSENT",))


async def test_workflows(ctx: Context, org: Credentials, other: Credentials) -> None:
    org_id = org.organization_id
    form, terms, doc = make(ctx, org_id, FORM), make(ctx, org_id, JSON), make(ctx, org_id, DOCUMENT)
    foreign = make(ctx, other.organization_id, JSON)
    flow = approvals.create_workflow(
        ctx, ALICE, org_id, WorkflowSpec(name="Onboarding", approvals=[doc, form])
    )
    assert [a.id for a in flow.approvals] == [doc, form]
    with pytest.raises(NotFound, match=foreign):
        approvals.create_workflow(ctx, ALICE, org_id, WorkflowSpec(name="x", approvals=[terms, foreign]))
    approvals.archive(ctx, ALICE, org_id, terms)
    with pytest.raises(Conflict, match=terms):
        approvals.create_workflow(ctx, ALICE, org_id, WorkflowSpec(name="x", approvals=[terms]))
    found, total = await approvals.find_workflows(ctx, org_id, approvals.Filter())
    assert total == 1 and [a.id for a in found[0].approvals] == [doc, form]
    assert approvals.get(ctx, org_id, doc).workflow_ids == [flow.workflow.id]
    for query, hits in [
        (approvals.Filter(search="onboard"), 1),
        (approvals.Filter(search="lease"), 1),  # an approval's name
        (approvals.Filter(types=("JSON",)), 0),
        (approvals.Filter(internal_id="form-1"), 1),
        (approvals.Filter(active=False), 0),
    ]:
        assert (await approvals.find_workflows(ctx, org_id, query))[1] == hits, query
    assert (await approvals.find_workflows(ctx, other.organization_id, approvals.Filter()))[1] == 0
    approvals.archive_workflow(ctx, ALICE, org_id, flow.workflow.id)
    assert (await approvals.find_workflows(ctx, org_id, approvals.Filter(active=False)))[1] == 1


def test_credentials_for_a_request(ctx: Context, org: Credentials, engine: Engine) -> None:
    org_id = org.organization_id
    action_id, version_id = published(engine, org_id)
    document = pdf()
    form, terms, doc = make(ctx, org_id, FORM), make(ctx, org_id, JSON), make(ctx, org_id, DOCUMENT, document)
    rent = make(ctx, org_id, policy(action_id))
    flow = approvals.create_workflow(ctx, ALICE, org_id, WorkflowSpec(name="Both", approvals=[doc, form]))
    made = approvals.credentials_for_request(ctx, org_id, [rent, terms], [flow.workflow.id])
    assert made.problems == [] and made.forms == 1
    kinds = [(c.resource_type, c.source.approval_id if c.source else None) for c in made.credentials]
    assert kinds == [("POLICY", rent), ("DOCUMENT", terms), ("DOCUMENT", doc), ("DOCUMENT", form)]
    policy_cred, json_cred, doc_cred, form_cred = made.credentials
    assert policy_cred.action is not None and policy_cred.action["version"] == version_id
    assert policy_cred.action["userParams"]["maxAmount"] == 900
    assert json.loads(json_cred.data[0]["value"]) == JSON["json"]  # type: ignore[index]
    item = doc_cred.data[0]  # type: ignore[index]
    assert (
        item["value"] == sri_sha256(document)
        and item["fields"][0]["url"] == f"/approvals/{doc}/document?version=1"
    )
    assert doc_cred.source is not None and doc_cred.source.workflow_id == flow.workflow.id
    assert [i["label"] for i in form_cred.data or ()] == [
        "Full name",
        "Age",
        "Start date",
        "Newsletter",
        "Plan",
    ]


def test_request_refusals_name_each_id(ctx: Context, org: Credentials, other: Credentials) -> None:
    org_id = org.organization_id
    terms, archived = make(ctx, org_id, JSON), make(ctx, org_id, JSON)
    foreign = make(ctx, other.organization_id, JSON)
    approvals.archive(ctx, ALICE, org_id, archived)
    missing = "0" * 24
    made = approvals.credentials_for_request(ctx, org_id, [terms, foreign, archived], [missing])
    assert made.problems == [
        f"groupIds.0: workflow {missing} not found",
        f"resourcesIds.1: approval {foreign} not found",
        f"resourcesIds.2: approval {archived} is archived",
    ]
    assert approvals.credentials_for_request(ctx, org_id, ["x'"], []).problems == [
        'resourcesIds.0: "x\'" is not an approval id'
    ]
