"""GET /approvals, GET /approvals/workflow, GET /approvals/{id}/document, and POST /request taking
approvals (resourcesIds) and workflows (groupIds): the newest shapes, 2026-05-20's and
2026-09-01's as the SDK's models read them, and every refusal with nothing stored."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import Engine, func
from sqlmodel import Session, select

from core.secretbox import SecretCipher
from core.settings import Settings
from services import approvals
from services.context import Context
from store.tables import CredentialApproval, CredentialRequest
from tests.conftest import new_org
from tests.support.actions import published
from tests.support.api_client import Credentials, SignedClient, error_messages
from tests.support.approvals import ALICE, DOCUMENT, FORM, JSON, make, pdf, policy
from tests.support.sdk import RELEASES, loaded
from trust.credentials import sri_sha256
from wire.approvals import WorkflowSpec

pytestmark = pytest.mark.usefixtures("no_server_errors")


@pytest.fixture
def other(engine: Engine, cipher: SecretCipher, settings: Settings) -> Credentials:
    return new_org(engine, cipher, settings)


def requests_of(engine: Engine, org_id: str) -> int:
    with Session(engine) as session:
        return session.exec(
            select(func.count())
            .select_from(CredentialRequest)
            .where(CredentialRequest.organization_id == org_id)
        ).one()


def setup(ctx: Context, engine: Engine, org_id: str) -> dict[str, str]:
    action_id, _ = published(engine, org_id)
    ids = {raw["type"]: make(ctx, org_id, raw) for raw in (FORM, JSON, DOCUMENT)}
    ids["POLICY"] = make(ctx, org_id, policy(action_id))
    flow = approvals.create_workflow(
        ctx, ALICE, org_id, WorkflowSpec(name="Lease", approvals=[ids["DOCUMENT"], ids["JSON"]])
    )
    ids["workflow"] = flow.workflow.id
    return ids


async def test_the_newest_shapes(api: SignedClient, ctx: Context, engine: Engine, other: Credentials) -> None:
    org_id = api.creds.organization_id
    ids = setup(ctx, engine, org_id)
    make(ctx, other.organization_id, JSON)
    got = await api.get("/approvals")
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["totalPages"] == 1 and [a["id"] for a in body["data"]] == [
        ids[t] for t in ("FORM", "JSON", "DOCUMENT", "POLICY")
    ]
    form, terms, doc, rent = body["data"]
    assert set(form) == {
        "id",
        "name",
        "type",
        "active",
        "internalId",
        "description",
        "workflowIds",
        "version",
        "content",
        "createdAt",
        "updatedAt",
    }
    assert (form["name"], form["internalId"], form["version"], form["active"]) == (
        "Onboarding form",
        "form-1",
        1,
        True,
    )
    assert form["content"]["fields"][4] == {
        "name": "plan",
        "label": "Plan",
        "type": "choice",
        "required": True,
        "options": ["basic", "pro"],
    }
    assert terms["content"] == {"json": JSON["json"]} and terms["workflowIds"] == [ids["workflow"]]
    assert doc["content"]["pdf"] == {
        "digestSRI": sri_sha256(pdf()),
        "size": len(pdf()),
        "pages": 1,
        "url": f"/approvals/{ids['DOCUMENT']}/document?version=1",
    }
    assert rent["content"]["action"]["userParams"] == {"maxAmount": 900}
    fetched = await api.get(doc["content"]["pdf"]["url"])
    assert fetched.status_code == 200 and fetched.headers["content-type"] == "application/pdf"
    assert sri_sha256(fetched.content) == doc["content"]["pdf"]["digestSRI"]
    flows = (await api.get("/approvals/workflow")).json()
    assert flows["totalPages"] == 1
    [flow] = flows["data"]
    assert (flow["id"], flow["name"], flow["active"]) == (ids["workflow"], "Lease", True)
    assert [(a["id"], a["type"]) for a in flow["approvals"]] == [
        (ids["DOCUMENT"], "DOCUMENT"),
        (ids["JSON"], "JSON"),
    ]


async def test_filters(api: SignedClient, ctx: Context, engine: Engine) -> None:
    ids = setup(ctx, engine, api.creds.organization_id)
    approvals.archive(ctx, ALICE, api.creds.organization_id, ids["FORM"])

    async def found(path: str, params: Any) -> list[str]:
        got = await api.get(path, params=params)
        assert got.status_code == 200, got.text
        return [a["id"] for a in got.json()["data"]]

    assert await found("/approvals", [("types", "FORM"), ("types", "JSON")]) == [ids["FORM"], ids["JSON"]]
    assert await found("/approvals", {"types": "POLICY,DOCUMENT"}) == [ids["DOCUMENT"], ids["POLICY"]]
    assert await found("/approvals", {"active": "false"}) == [ids["FORM"]]
    assert await found("/approvals", {"search": "LEASE", "active": "true"}) == [ids["DOCUMENT"]]
    assert await found("/approvals", {"internalId": "form-1"}) == [ids["FORM"]]
    assert await found("/approvals", {"pageSize": 5, "pageIndex": 1}) == []
    assert await found("/approvals/workflow", {"types": "FORM"}) == []
    assert await found("/approvals/workflow", {"search": "terms"}) == [ids["workflow"]]
    assert await found("/approvals/workflow", {"internalId": "lease-1"}) == [ids["workflow"]]


@pytest.mark.parametrize(
    ("path", "query", "fragment"),
    [
        ("/approvals", "types=CONSENT", "CONSENT"),
        ("/approvals", "pageSize=4", "pageSize"),
        ("/approvals", "pageSize=101", "pageSize"),
        ("/approvals", "active=yes", "active"),
        ("/approvals", "search=" + "x" * 101, "search"),
        ("/approvals", "frobnicate=1", "frobnicate"),
        ("/approvals/workflow", "types=FORM&types=PAYMENT", "PAYMENT"),
        ("/approvals/workflow", "approvalId=1", "approvalId"),
    ],
)
async def test_bad_queries_are_refused(api: SignedClient, path: str, query: str, fragment: str) -> None:
    got = await api.get(f"{path}?{query}")
    assert any(fragment in line for line in error_messages(got)), got.text


async def test_a_document_of_another_organization_is_not_found(
    api: SignedClient, ctx: Context, other: Credentials
) -> None:
    theirs = make(ctx, other.organization_id, DOCUMENT)
    mine = make(ctx, api.creds.organization_id, JSON)
    for path in (
        f"/approvals/{theirs}/document",
        f"/approvals/{mine}/document",
        f"/approvals/{mine}/document?version=9",
    ):
        assert (await api.get(path)).status_code == 404, path
    assert (await api.get("/approvals/nothex/document")).status_code == 400


@pytest.mark.parametrize("release", RELEASES, ids=[r.id for r in RELEASES])
async def test_the_releases_models_read_the_older_shapes(
    api: SignedClient, ctx: Context, engine: Engine, release: Any
) -> None:
    ids = setup(ctx, engine, api.creds.organization_id)
    pinned = {"headers": {"API-Version": release.api_version}}
    listed = await api.get("/approvals", params={"types": ["FORM", "DOCUMENT", "JSON", "POLICY"]}, **pinned)
    flows = await api.get("/approvals/workflow", **pinned)
    assert listed.status_code == flows.status_code == 200, (listed.text, flows.text)
    with loaded(release) as sdk:
        page = sdk.model("ResourcesEntity").from_dict(listed.json())
        by_type = {r.type: r for r in page.data}
        assert json.loads(by_type["FORM"].content)["fields"][0]["name"] == "fullName"
        assert json.loads(by_type["JSON"].content) == JSON["json"]
        assert json.loads(by_type["POLICY"].content)["userParams"] == {"maxAmount": 900}
        assert by_type["DOCUMENT"].content == f"/approvals/{ids['DOCUMENT']}/document?version=1"
        assert by_type["DOCUMENT"].placements == [[{"signer": 0, **DOCUMENT["placements"][0]}]]
        assert by_type["JSON"].group_ids == [ids["workflow"]] and by_type["FORM"].placements is None
        groups = sdk.model("GroupsEntity").from_dict(flows.json())
        [group] = groups.data
        assert [r.id for r in group.resources] == [ids["DOCUMENT"], ids["JSON"]]


# --- POST /request --------------------------------------------------------------------------------


def request_body(**fields: Any) -> dict[str, Any]:
    return {"contacts": ["ana@example.com"], "securityLevel": "CONTACT", **fields}


async def test_a_request_takes_approvals_and_workflows(
    api: SignedClient, ctx: Context, engine: Engine
) -> None:
    ids = setup(ctx, engine, api.creds.organization_id)
    created = await api.post(
        "/request", request_body(resourcesIds=[ids["POLICY"], ids["FORM"]], groupIds=[ids["workflow"]])
    )
    assert created.status_code == 201, created.text
    credentials = created.json()["data"]["credentials"]
    assert [(c["resourceType"], c["name"]) for c in credentials] == [
        ("POLICY", "Rent payments"),
        ("DOCUMENT", "Onboarding form"),
        ("DOCUMENT", "Lease contract"),
        ("DOCUMENT", "Terms"),
    ]
    assert credentials[0]["action"]["userParams"]["maxAmount"] == 900
    assert credentials[2]["data"][0]["value"] == sri_sha256(pdf())
    assert json.loads(credentials[3]["data"][0]["value"]) == JSON["json"]
    with Session(engine) as session:
        sources = {r.credential_id: r for r in session.exec(select(CredentialApproval))}
    assert [(sources[c["id"]].approval_id, sources[c["id"]].version) for c in credentials] == [
        (ids["POLICY"], 1),
        (ids["FORM"], 1),
        (ids["DOCUMENT"], 1),
        (ids["JSON"], 1),
    ]
    assert sources[credentials[3]["id"]].workflow_id == ids["workflow"]


async def test_an_older_version_takes_them_too(api: SignedClient, ctx: Context, engine: Engine) -> None:
    ids = setup(ctx, engine, api.creds.organization_id)
    body = {
        "users": [{"contact": "ana@example.com"}],
        "securityLevel": "CONTACT",
        "resourcesIds": [ids["JSON"]],
    }
    created = await api.post("/request", body, headers={"API-Version": "2026-09-01"})
    assert created.status_code == 201, created.text
    assert [c["name"] for c in created.json()["credentials"]] == ["Terms"]


async def test_refusals_name_the_id_and_store_nothing(
    api: SignedClient, ctx: Context, engine: Engine, other: Credentials
) -> None:
    org_id = api.creds.organization_id
    ids = setup(ctx, engine, org_id)
    theirs = make(ctx, other.organization_id, JSON)
    archived = make(ctx, org_id, JSON)
    approvals.archive(ctx, ALICE, org_id, archived)
    missing = "0" * 24
    cases = [
        (request_body(resourcesIds=[missing]), f"resourcesIds.0: approval {missing} not found"),
        (request_body(resourcesIds=[ids["JSON"], theirs]), f"resourcesIds.1: approval {theirs} not found"),
        (request_body(resourcesIds=[archived]), f"resourcesIds.0: approval {archived} is archived"),
        (request_body(groupIds=[missing]), f"groupIds.0: workflow {missing} not found"),
        (request_body(resourcesIds=["nothex"]), "resourcesIds.0: 'nothex' is not an approval id"),
        (request_body(resourcesIds=[ids["JSON"]] * 9, groupIds=[ids["workflow"]]), "11 credentials"),
        (request_body(resourcesIds=[ids["FORM"]], contacts=["a@example.com", "b@example.com"]), "FORM"),
        (request_body(), "give credentials, resourcesIds"),
        (request_body(resourcesIds=[ids["JSON"]] * 11), "resourcesIds"),
    ]
    for body, message in cases:
        got = await api.post("/request", body)
        assert any(message in line for line in error_messages(got)), (message, got.text)
    assert requests_of(engine, org_id) == 0


async def test_the_subject_reads_the_pdf_on_the_approval_page(
    api: SignedClient, http: Any, ctx: Context, engine: Engine, other: Credentials
) -> None:
    ids = setup(ctx, engine, api.creds.organization_id)
    created = await api.post("/request", request_body(resourcesIds=[ids["DOCUMENT"], ids["JSON"]]))
    assert created.status_code == 201, created.text
    request = created.json()["data"]
    document, terms = (c["id"] for c in request["credentials"])
    link = await api.get(f"/request/link/{request['id']}", params={"contact": "ana@example.com"})
    url = link.json()["data"]["url"].removeprefix("https://mandatum.test")
    page = await http.get(url)
    assert f"{url}/document/{document}" in page.text and f"/document/{terms}" not in page.text
    got = await http.get(f"{url}/document/{document}")
    assert got.status_code == 200 and got.headers["content-type"] == "application/pdf"
    assert got.content == pdf() and got.headers["cache-control"] == "no-store"
    for wrong in (
        f"{url}/document/{terms}",
        f"{url}/document/{'0' * 24}",
        f"/r/{'A' * 59}/document/{document}",
    ):
        assert (await http.get(wrong)).status_code == 404, wrong
