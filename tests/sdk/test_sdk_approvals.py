"""Approvals and workflows through the public SDK's release 1.2.0, unchanged: ``approval.list``
with its filters and ``approval.workflows`` read into its typed ``ResourcesEntity`` and
``GroupsEntity``; ``requests.create`` with ``resources_ids`` and ``group_ids`` makes a credential
of each approval (a workflow's in order), which ``requests.detail`` shows; an unknown id is a 400
naming it, and nothing is created. The approvals are made as an operator would (``mandatum
approval``, here its service)."""

from __future__ import annotations

import json

from cli.devstack import EXAMPLE_ACTION_ID
from services import approvals
from services.context import Context
from tests.support.approvals import ALICE, DOCUMENT, FORM, JSON, make, pdf, policy
from tests.support.live_stack import LiveStack
from tests.support.sdk import RELEASE_120, Sdk, SdkClient, new_contact, new_org, only
from trust.credentials import sri_sha256
from wire.approvals import WorkflowSpec

pytestmark = only(RELEASE_120)


def made(ctx: Context, org_id: str) -> dict[str, str]:
    ids = {raw["type"]: make(ctx, org_id, raw) for raw in (FORM, JSON, DOCUMENT)}
    rent = policy(EXAMPLE_ACTION_ID)
    rent["action"]["userParams"] = {"maxAmount": 900}
    ids["POLICY"] = make(ctx, org_id, rent)
    spec = WorkflowSpec(name="Lease", description="Sign the lease", approvals=[ids["DOCUMENT"], ids["JSON"]])
    ids["workflow"] = approvals.create_workflow(ctx, ALICE, org_id, spec).workflow.id
    return ids


async def listed(client: SdkClient, **filters: object) -> list[str]:
    page = await client.call(client.api.approval.list, returns="ResourcesEntity", **filters)
    return [r.id for r in page.data]


async def test_list_and_workflows(sdk: Sdk, live: LiveStack, ctx: Context) -> None:
    creds = new_org(live, sdk.release)
    ids = made(ctx, creds.organization_id)
    approvals.archive(ctx, ALICE, creds.organization_id, ids["FORM"])
    stranger = new_org(live, sdk.release)
    make(ctx, stranger.organization_id, JSON)
    client = sdk.client(live.url, creds)

    page = await client.call(client.api.approval.list, returns="ResourcesEntity")
    assert page.total_pages == 1
    by_type = {r.type: r for r in page.data}
    assert set(by_type) == {"FORM", "JSON", "DOCUMENT", "POLICY"}
    assert by_type["FORM"].active is False and by_type["JSON"].active is True
    assert json.loads(by_type["JSON"].content) == JSON["json"]
    assert json.loads(by_type["POLICY"].content) == {
        "id": EXAMPLE_ACTION_ID,
        "userParams": {"maxAmount": 900},
    }
    assert by_type["DOCUMENT"].internal_id == "lease-1" and by_type["DOCUMENT"].group_ids == [ids["workflow"]]
    # a DOCUMENT's placements by page, each in percent of the page with the signer it names
    assert by_type["DOCUMENT"].placements == [[{"signer": 0, **DOCUMENT["placements"][0]}]]
    fetched = await live.api(creds).get(by_type["DOCUMENT"].content)  # the reference: its PDF
    assert fetched.status_code == 200 and sri_sha256(fetched.content) == sri_sha256(pdf())

    assert await listed(client, types=["JSON", "POLICY"]) == [ids["JSON"], ids["POLICY"]]
    assert await listed(client, active=False) == [ids["FORM"]]
    assert await listed(client, search="LEASE CON") == [ids["DOCUMENT"]]
    assert await listed(client, internal_id="form-1") == [ids["FORM"]]
    assert await listed(client, page_size=5, page_index=1) == []

    groups = await client.call(client.api.approval.workflows, returns="GroupsEntity")
    [group] = groups.data
    assert (group.id, group.name, group.description, group.active) == (
        ids["workflow"],
        "Lease",
        "Sign the lease",
        True,
    )
    assert [(r.id, r.type) for r in group.resources] == [(ids["DOCUMENT"], "DOCUMENT"), (ids["JSON"], "JSON")]
    none = await client.call(client.api.approval.workflows, types=["POLICY"], returns="GroupsEntity")
    assert none.data == [] and none.total_pages == 0


async def test_a_request_of_approvals_and_a_workflow(sdk: Sdk, live: LiveStack, ctx: Context) -> None:
    creds = new_org(live, sdk.release)
    ids = made(ctx, creds.organization_id)
    client = sdk.client(live.url, creds)
    m = sdk.models
    body = m.GenerateRequestDto(
        users=[m.GenerateRequestUserDto(contact=new_contact("approvals"))],
        name="Lease and rent",
        securityLevel="CONTACT",
        resources_ids=[ids["POLICY"]],
        group_ids=[ids["workflow"]],
    )
    created = await client.call(client.api.requests.create, body, returns="GenerateRequestEntity")
    detail = await client.call(client.api.requests.detail, created.id, returns="RequestDetailEntity")
    assert [(c.name, c.resource_type) for c in detail.credentials] == [
        ("Rent payments", "POLICY"),
        ("Lease contract", "DOCUMENT"),
        ("Terms", "DOCUMENT"),
    ]
    assert [c.internal_id for c in detail.credentials] == [None, "lease-1", None]

    missing = "0" * 24
    refused_body = m.GenerateRequestDto(
        users=[m.GenerateRequestUserDto(contact=new_contact("approvals"))],
        securityLevel="CONTACT",
        resources_ids=[missing],
    )
    refused = await client.refusal(
        client.api.requests.create, refused_body, status=400, returns="RequestsCreate400Response"
    )
    assert refused.message == f"resourcesIds.0: approval {missing} not found"
    second = {**DOCUMENT, "placements": [{**DOCUMENT["placements"][0], "signer": 1}]}
    two_signers = make(ctx, creds.organization_id, second)
    refused_body.resources_ids = [two_signers]
    refused = await client.refusal(
        client.api.requests.create, refused_body, status=400, returns="RequestsCreate400Response"
    )
    assert refused.message == (
        f"resourcesIds.0: approval {two_signers} placements.0.signer is 1, but the request names "
        "1 contact (signer counts from 0)"
    )
    page = await client.call(client.api.requests.list, returns="RequestsEntity")
    assert [r.id for r in page.data] == [created.id]
