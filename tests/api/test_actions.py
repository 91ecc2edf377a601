"""GET /actions, GET /actions/{id}, and POST /request against published actions (CONTRACT 2, 4, 6)."""

from __future__ import annotations

import copy
import re
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from policy.actions import canonical_content
from store import actions
from tests.conftest import new_org
from tests.support.actions import RENT, published, spec
from tests.support.api_client import Credentials, SignedClient, assert_error_shape, policy_request
from tests.support.openapi import Oracle
from trust.credentials import digest_sri

pytestmark = pytest.mark.usefixtures("no_server_errors")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
UNKNOWN = "urn:via:action:00000000-0000-4000-8000-000000000000"
VERSION_FIELDS = {
    "id",
    "number",
    "digestSRI",
    "publishedAt",
    "name",
    "description",
    "executionParams",
    "userParams",
    "rules",
}  # description only when the version has one


@pytest.fixture
def other_org(engine: Engine, cipher: SecretCipher, settings: Settings) -> Credentials:
    return new_org(engine, cipher, settings)


def messages(resp: httpx.Response) -> list[str]:
    msg = assert_error_shape(resp, 400)["message"]
    return [msg] if isinstance(msg, str) else list(msg)


def with_action(action_id: str, user_params: Any = None, **credential: Any) -> dict[str, Any]:
    action: dict[str, Any] = {"id": action_id}
    if user_params is not None:
        action["userParams"] = user_params
    return policy_request(credentials=[{"type": "POLICY", "name": "Rent", "action": action, **credential}])


# --- GET /actions ---------------------------------------------------------------------------------


async def test_list_shows_published_versions_only(api: SignedClient, engine: Engine) -> None:
    org_id = api.creds.organization_id
    action_id, v1 = published(engine, org_id)
    actions.add_version(engine, org_id, action_id, spec(name="Draft, never shown"))
    draft_only, _ = actions.create_action(engine, org_id, spec())

    resp = await api.get("/actions")
    assert resp.status_code == 200, resp.text
    assert set(resp.json()) == {"data", "totalPages"} and resp.json()["totalPages"] == 1
    listed = {a["id"]: a for a in resp.json()["data"]}
    assert draft_only.id not in listed
    item = listed[action_id]
    assert set(item) == {"id", "name", "description", "createdAt", "currentVersion", "versions"}
    assert (item["name"], item["description"]) == (RENT["name"], RENT["description"])
    assert RFC3339.match(item["createdAt"])
    [version] = item["versions"]
    assert item["currentVersion"] == version["id"] == v1
    assert set(version) == VERSION_FIELDS
    assert version["number"] == 1 and RFC3339.match(version["publishedAt"])
    assert [p["name"] for p in version["executionParams"]] == ["amount", "payee"]
    assert version["userParams"][1] == {"name": "payees", "type": "array<string>", "default": []}
    assert [r["name"] for r in version["rules"]] == ["underMax", "knownPayee"]


async def test_active_is_true_or_false(api: SignedClient, engine: Engine) -> None:
    action_id, _ = published(engine, api.creds.organization_id)
    for spelling, shown in (("true", True), ("TRUE", True), ("false", False), ("False", False)):
        resp = await api.get("/actions", params={"active": spelling})
        assert resp.status_code == 200, resp.text
        listed = [a["id"] for a in resp.json()["data"]]
        assert (action_id in listed, bool(listed)) == (shown, shown), spelling
    for loose in ("1", "0", "yes", "no", "on", "off"):
        resp = await api.get("/actions", params={"active": loose})
        assert resp.status_code == 400, (loose, resp.text)
        assert messages(resp) == ["active: must be true or false"], loose


async def test_digest_can_be_recomputed_from_what_is_shown(api: SignedClient, engine: Engine) -> None:
    action_id, _ = published(engine, api.creds.organization_id)
    resp = await api.get(f"/actions/{quote(action_id, safe='')}")
    assert resp.status_code == 200, resp.text
    [version] = resp.json()["data"]["versions"]
    content = {k: v for k, v in version.items() if k not in {"id", "number", "digestSRI", "publishedAt"}}
    assert content == canonical_content(spec())
    assert version["digestSRI"] == digest_sri(content)


async def test_declared_bounds_are_shown_as_declared_and_documented(
    api: SignedClient, engine: Engine
) -> None:
    """A param's maxLength and maxItems are in the answer exactly when the version declares them
    (its content, which the digestSRI covers), and the OpenAPI document describes them."""
    bounded = copy.deepcopy(RENT)
    bounded["executionParams"][1] |= {"maxLength": 64}
    bounded["userParams"][1] |= {"maxLength": 30, "maxItems": 10}
    action_id, _ = published(engine, api.creds.organization_id, bounded)
    resp = await api.get(f"/actions/{quote(action_id, safe='')}")
    assert resp.status_code == 200, resp.text
    [version] = resp.json()["data"]["versions"]
    assert version["executionParams"] == [
        {"name": "amount", "type": "number", "description": "Amount to pay"},
        {"name": "payee", "type": "string", "maxLength": 64},
    ]
    assert version["userParams"][1] == {
        "name": "payees",
        "type": "array<string>",
        "default": [],
        "maxLength": 30,
        "maxItems": 10,
    }
    content = {k: v for k, v in version.items() if k not in {"id", "number", "digestSRI", "publishedAt"}}
    assert content == canonical_content(spec(bounded)) and version["digestSRI"] == digest_sri(content)

    document = (await api.http.get("/openapi.json")).json()
    oracle = Oracle(document)
    assert oracle.answer_problems("GET", "/actions/{actionId}", resp) == []
    listed = await api.get("/actions")
    assert oracle.answer_problems("GET", "/actions", listed) == []
    members = document["components"]["schemas"]["ActionParam"]["properties"]
    assert {k: members["maxLength"][k] for k in ("type", "minimum", "maximum")} == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10_000,
    }
    assert {k: members["maxItems"][k] for k in ("type", "minimum", "maximum")} == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10_000,
    }
    assert "when absent, 1,000" in members["maxLength"]["description"]
    assert "when absent, 100" in members["maxItems"]["description"]
    assert oracle.problems(
        {"name": "x", "type": "string", "maxLength": 10_001}, "components", "schemas", "ActionParam"
    )


async def test_get_one_action_raw_and_percent_encoded(api: SignedClient, engine: Engine) -> None:
    org_id = api.creds.organization_id
    action_id, v1 = published(engine, org_id)
    v2 = actions.add_version(engine, org_id, action_id, spec(name="Pay rent, again"))
    actions.publish(engine, v2.id, actor="operator:tests")
    for path in (f"/actions/{action_id}", f"/actions/{quote(action_id, safe='')}"):
        resp = await api.get(path)
        assert resp.status_code == 200, resp.text
        data = resp.json()["data"]
        assert data["id"] == action_id and data["name"] == "Pay rent, again"
        assert [v["id"] for v in data["versions"]] == [v1, v2.id]
        assert [v["number"] for v in data["versions"]] == [1, 2]
        assert data["currentVersion"] == v2.id


async def test_unknown_foreign_draft_only_and_malformed_ids(
    api: SignedClient, engine: Engine, other_org: Credentials
) -> None:
    theirs, _ = published(engine, other_org.organization_id)
    draft_only, _ = actions.create_action(engine, api.creds.organization_id, spec())
    for action_id in (UNKNOWN, theirs, draft_only.id):
        body = assert_error_shape(await api.get(f"/actions/{quote(action_id, safe='')}"), 404)
        assert action_id in body["message"]
    for bad in (
        "urn:via:action:123",
        "rent",
        "urn:via:action-version:00000000-0000-4000-8000-000000000000",
        UNKNOWN.upper(),
    ):
        assert any("actionId" in m for m in messages(await api.get(f"/actions/{quote(bad, safe='')}")))
    listed = (await api.get("/actions")).json()["data"]
    assert theirs not in {a["id"] for a in listed}


async def test_actions_routes_are_read_only_and_signed(api: SignedClient, http: httpx.AsyncClient) -> None:
    assert_error_shape(await api.post("/actions", {"name": "x"}), 405)
    assert_error_shape(await api.delete(f"/actions/{UNKNOWN}"), 405)
    assert_error_shape(await http.get("/actions"), 401)


# --- POST /request --------------------------------------------------------------------------------


async def test_request_pins_the_newest_published_version(api: SignedClient, engine: Engine) -> None:
    org_id = api.creds.organization_id
    action_id, v1 = published(engine, org_id)
    first = await api.post("/request", with_action(action_id, {"maxAmount": 1200}))
    assert first.status_code == 201, first.text
    digest1 = actions.get_version(engine, v1).digest_sri  # type: ignore[union-attr]
    assert first.json()["data"]["credentials"][0]["action"] == {
        "id": action_id,
        "version": v1,
        "digestSRI": digest1,
        "userParams": {"maxAmount": 1200, "payees": []},
    }  # the default filled the omitted one

    v2 = actions.add_version(engine, org_id, action_id, spec(name="Second"))
    actions.publish(engine, v2.id, actor="operator:tests")
    second = await api.post("/request", with_action(action_id, {"maxAmount": 5, "payees": ["Bob"]}))
    assert second.status_code == 201, second.text
    pinned = second.json()["data"]["credentials"][0]["action"]
    assert pinned["version"] == v2.id and pinned["userParams"] == {"maxAmount": 5, "payees": ["Bob"]}
    # republishing changes nothing already recorded
    again = await api.get(f"/request/{first.json()['data']['id']}")
    assert again.json()["credentials"][0]["action"]["version"] == v1


async def test_unknown_unpublished_and_foreign_actions_are_400(
    api: SignedClient, engine: Engine, other_org: Credentials
) -> None:
    theirs, _ = published(engine, other_org.organization_id)
    draft_only, _ = actions.create_action(engine, api.creds.organization_id, spec())
    for action_id in (UNKNOWN, theirs, draft_only.id):
        lines = messages(await api.post("/request", with_action(action_id, {"maxAmount": 1})))
        assert lines == [f"credentials.0.action.id: unknown or unpublished action {action_id}"], lines
    assert (await api.get("/request")).json()["data"] == []  # nothing was created


async def test_user_params_must_match_the_declared_ones(api: SignedClient, engine: Engine) -> None:
    action_id, _ = published(engine, api.creds.organization_id)
    cases: list[tuple[Any, tuple[str, ...]]] = [
        ({}, ("maxAmount",)),  # missing, no default
        ({"maxAmount": "1200"}, ("maxAmount",)),  # wrong type
        ({"maxAmount": 1, "payees": "Bob"}, ("payees",)),
        ({"maxAmount": 1, "payees": ["Bob", 7]}, ("payees",)),
        ({"maxAmount": 1, "maxAmountt": 2}, ("maxAmountt",)),  # not declared
        ({"maxAmount": True, "payee": "x"}, ("maxAmount", "payee")),  # every problem at once
    ]
    for user_params, names in cases:
        lines = messages(await api.post("/request", with_action(action_id, user_params)))
        for name in names:
            assert any(line.startswith(f"credentials.0.action.userParams.{name}") for line in lines), (
                user_params,
                lines,
            )
    lines = messages(await api.post("/request", with_action(action_id)))  # userParams absent = {}
    assert any(line.startswith("credentials.0.action.userParams.maxAmount") for line in lines), lines


async def test_action_and_contact_problems_are_listed_together(api: SignedClient, engine: Engine) -> None:
    action_id, _ = published(engine, api.creds.organization_id)
    body = policy_request(
        contacts=["ana@example.com", "not a contact"],
        credentials=[
            {"type": "POLICY", "name": "Fine", "action": {"id": action_id, "userParams": {"maxAmount": 1}}},
            {"type": "POLICY", "name": "Unknown", "action": {"id": UNKNOWN, "userParams": {}}},
            {"type": "POLICY", "name": "Typed", "action": {"id": action_id, "userParams": {"maxAmount": []}}},
        ],
    )
    lines = messages(await api.post("/request", body))
    assert any(line.startswith("contacts.1") for line in lines), lines
    assert any(line.startswith("credentials.1.action.id: unknown") for line in lines), lines
    assert any(line.startswith("credentials.2.action.userParams.maxAmount") for line in lines), lines
    assert not any(line.startswith("credentials.0") for line in lines), lines


async def test_a_pinned_action_cannot_be_deleted(api: SignedClient, engine: Engine) -> None:
    action_id, _ = published(engine, api.creds.organization_id)
    resp = await api.post("/request", with_action(action_id, {"maxAmount": 10}))
    assert resp.status_code == 201, resp.text
    with pytest.raises(actions.ActionRefused, match="cannot be deleted"):
        actions.delete_action(engine, api.creds.organization_id, action_id, actor="operator:tests")
    assert actions.get_action(engine, api.creds.organization_id, action_id) is not None
