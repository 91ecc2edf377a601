"""What each SDK release reads beside requests and credentials: the organization's actions and
their versions (``ActionsApi``), and DID documents (``DIDApi.resolve``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from cli.devstack import EXAMPLE_ACTION, EXAMPLE_ACTION_ID
from store import actions as action_store
from tests.support.actions import RENT, published, spec
from tests.support.api_client import Credentials
from tests.support.live_stack import LiveStack
from tests.support.sdk import Sdk, new_org, raw
from trust.did import web_service_did

# "Utility bills" version 2: bounds declared on two params (issue 30), in the version's content
BOUNDED_BILLS: dict[str, Any] = {
    **RENT,
    "name": "Utility bills",
    "executionParams": [RENT["executionParams"][0], {**RENT["executionParams"][1], "maxLength": 64}],
    "userParams": [RENT["userParams"][0], {**RENT["userParams"][1], "maxLength": 30, "maxItems": 10}],
}


@dataclass
class Catalogue:
    """An organization with the example action (version 1) and "Utility bills" (versions 1 and 2
    published, 2 with declared bounds, 3 a draft), as ``GET /actions`` shows them in the set-up's
    version."""

    creds: Credentials
    bills_id: str
    shown: dict[str, dict[str, Any]]  # action id -> the action with its published versions


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def catalogue(sdk: Sdk, live: LiveStack) -> Catalogue:
    creds = new_org(live, sdk.release)
    org_id = creds.organization_id
    bills_id, _ = published(live.engine, org_id, {**RENT, "name": "Utility bills"})
    second = action_store.add_version(live.engine, org_id, bills_id, spec(BOUNDED_BILLS))
    action_store.publish(live.engine, second.id, org_id, actor="operator:tests")
    action_store.add_version(
        live.engine, org_id, bills_id, spec({**RENT, "name": "Utility bills"})
    )  # a draft
    listed = await raw(live, creds, "GET", "/actions")
    assert listed.status_code == 200, listed.text
    return Catalogue(creds, bills_id, {a["id"]: a for a in listed.json()["data"]})


async def test_list_actions(sdk: Sdk, live: LiveStack, catalogue: Catalogue) -> None:
    client = sdk.client(live.url, catalogue.creds)
    page = await client.call(client.api.actions.list, returns="ActionListEntity")
    assert {a.id for a in page.data} == {EXAMPLE_ACTION_ID, catalogue.bills_id}
    assert page.total_pages == 1
    for action in page.data:
        shown = catalogue.shown[action.id]
        assert action.name == shown["name"]
        assert action.updated_at.tzinfo is not None
        assert [(v.id, v.version, v.digest_sri) for v in action.versions] == [
            (v["id"], v["number"], v["digestSRI"]) for v in reversed(shown["versions"])
        ]  # newest first, as the releases document it
        assert all(v.created_at.tzinfo is not None for v in action.versions)
    [example] = [a for a in page.data if a.id == EXAMPLE_ACTION_ID]
    assert example.name == EXAMPLE_ACTION["name"] and example.description == EXAMPLE_ACTION["description"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"search": "utility"}, {"bills"}),
        ({"search": "RENT PAY"}, {"example"}),
        ({"search": "nothing like it"}, set()),
        ({"active": True}, {"example", "bills"}),
        ({"page_index": 0, "page_size": 5}, {"example", "bills"}),
    ],
    ids=["search-one", "search-case", "search-none", "active", "page"],
)
async def test_list_actions_with_a_filter(
    sdk: Sdk, live: LiveStack, catalogue: Catalogue, filters: dict[str, Any], expected: set[str]
) -> None:
    ids = {"example": EXAMPLE_ACTION_ID, "bills": catalogue.bills_id}
    client = sdk.client(live.url, catalogue.creds)
    page = await client.call(client.api.actions.list, returns="ActionListEntity", **filters)
    assert {a.id for a in page.data} == {ids[name] for name in expected}, filters


async def test_versions_of_an_action(sdk: Sdk, live: LiveStack, catalogue: Catalogue) -> None:
    client = sdk.client(live.url, catalogue.creds)
    page = await client.call(
        client.api.actions.versions, catalogue.bills_id, returns="ActionVersionListEntity"
    )
    shown = catalogue.shown[catalogue.bills_id]["versions"]
    assert [(v.id, v.version, v.digest_sri) for v in page.data] == [
        (v["id"], v["number"], v["digestSRI"]) for v in reversed(shown)
    ]  # published versions only (the draft is not among them), newest first
    assert page.total_pages == 1
    for version in page.data:
        assert version.action_id == catalogue.bills_id
        assert version.published is True
        assert version.created_at.tzinfo is not None and version.updated_at.tzinfo is not None
        assert version.content is not None
        assert [r["name"] for r in version.content["rules"]] == [r["name"] for r in RENT["rules"]]
        assert [p["name"] for p in version.content["executionParams"]] == ["amount", "payee"]
    bounds = {
        v.version: [(p["name"], p.get("maxLength"), p.get("maxItems")) for p in v.content["userParams"]]
        for v in page.data
        if v.content is not None
    }  # present only where declared
    assert bounds == {
        1: [("maxAmount", None, None), ("payees", None, None)],
        2: [("maxAmount", None, None), ("payees", 30, 10)],
    }
    assert [v.content["executionParams"][1] for v in page.data if v.content is not None] == [
        {"name": "payee", "type": "string", "maxLength": 64},
        {"name": "payee", "type": "string"},
    ]  # newest first


async def test_versions_of_the_example_action(sdk: Sdk, live: LiveStack, catalogue: Catalogue) -> None:
    client = sdk.client(live.url, catalogue.creds)
    page = await client.call(
        client.api.actions.versions, EXAMPLE_ACTION_ID, returns="ActionVersionListEntity"
    )
    [version] = page.data
    [shown] = catalogue.shown[EXAMPLE_ACTION_ID]["versions"]
    assert (version.id, version.action_id, version.version) == (shown["id"], EXAMPLE_ACTION_ID, 1)
    assert version.digest_sri == shown["digestSRI"] and version.published is True


async def test_resolve_the_service_did(sdk: Sdk, live: LiveStack, catalogue: Catalogue) -> None:
    did = web_service_did(live.url)
    served = await live.http.get("/.well-known/did.json")
    assert served.status_code == 200, served.text
    client = sdk.client(live.url, catalogue.creds)
    document = await client.call(client.api.did.resolve, did, returns="DidDocumentEntity")
    assert document.id == did
    assert document.context == served.json()["@context"]
    assert [m.id for m in document.verification_method] == [
        m["id"] for m in served.json()["verificationMethod"]
    ]
    for method in document.verification_method:
        assert method.controller == did and method.type == "Multikey"
        assert method.public_key_multibase.startswith("z")
    assert document.assertion_method and set(document.assertion_method) <= {
        m.id for m in document.verification_method
    }


async def test_resolve_an_organization_did(sdk: Sdk, live: LiveStack, catalogue: Catalogue) -> None:
    did = catalogue.creds.did
    served = await live.http.get(f"/orgs/{catalogue.creds.organization_id}/did.json")
    assert served.status_code == 200, served.text
    client = sdk.client(live.url, catalogue.creds)
    document = await client.call(client.api.did.resolve, did, returns="DidDocumentEntity")
    assert document.id == did
    assert [m.id for m in document.verification_method] == [
        m["id"] for m in served.json()["verificationMethod"]
    ]
