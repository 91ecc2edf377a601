"""An action version's use limits (issue 31) in GET /actions and GET /actions/version/{id}: shown
as declared beside the params and rules, absent where a version declares none (so the content,
which the digestSRI covers, is what is shown), described by the OpenAPI document, and kept in the
older versions' ``content``, which the SDK releases' models read as any object."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine

from policy.actions import canonical_content
from tests.support.actions import RENT, published, spec
from tests.support.api_client import SignedClient
from tests.support.openapi import Oracle
from tests.support.sdk import RELEASES, loaded
from trust.credentials import digest_sri

pytestmark = pytest.mark.usefixtures("no_server_errors")
META = {"id", "number", "digestSRI", "publishedAt"}
LIMITS: list[dict[str, Any]] = [
    {"name": "uses", "kind": "executions", "max": 5},
    {
        "name": "monthly",
        "kind": "sum",
        "param": "amount",
        "max": "userParams.maxAmount",
        "period": "P1M",
        "unit": "EUR",
    },
    {"name": "daily", "kind": "rate", "max": 3, "period": "P1D", "description": "Three payments a day"},
]
LIMITED = {**RENT, "name": "Pay rent, within budgets", "limits": LIMITS}


def content_of(version: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in version.items() if k not in META}


async def test_limits_are_shown_as_declared_and_the_digest_covers_them(
    api: SignedClient, engine: Engine
) -> None:
    org_id = api.creds.organization_id
    limited_id, _ = published(engine, org_id, LIMITED)
    plain_id, _ = published(engine, org_id, {**RENT, "name": "Pay rent, no budget"})

    resp = await api.get(f"/actions/{quote(limited_id, safe='')}")
    assert resp.status_code == 200, resp.text
    [version] = resp.json()["data"]["versions"]
    assert version["limits"] == LIMITS  # in the declared order, each member as declared
    assert content_of(version) == canonical_content(spec(LIMITED))
    assert version["digestSRI"] == digest_sri(content_of(version))
    assert digest_sri(content_of(version) | {"limits": []}) != version["digestSRI"]

    plain = (await api.get(f"/actions/{quote(plain_id, safe='')}")).json()["data"]["versions"][0]
    assert "limits" not in plain  # not [] either: a version without limits has none in its content
    assert plain["digestSRI"] == digest_sri(content_of(plain))

    listed = {a["id"]: a for a in (await api.get("/actions")).json()["data"]}
    assert listed[limited_id]["versions"][0]["limits"] == LIMITS
    assert "limits" not in listed[plain_id]["versions"][0]
    versions = (await api.get(f"/actions/version/{quote(limited_id, safe='')}")).json()["data"]
    assert versions[0]["limits"] == LIMITS and versions[0]["actionId"] == limited_id


async def test_the_document_describes_a_limit(api: SignedClient, engine: Engine) -> None:
    limited_id, _ = published(engine, api.creds.organization_id, LIMITED)
    document = (await api.http.get("/openapi.json")).json()
    oracle = Oracle(document)
    for path in ("/actions", f"/actions/{quote(limited_id, safe='')}"):
        resp = await api.get(path)
        template = "/actions/{actionId}" if path != "/actions" else path
        assert oracle.answer_problems("GET", template, resp) == [], path
    versions = await api.get(f"/actions/version/{quote(limited_id, safe='')}")
    assert oracle.answer_problems("GET", "/actions/version/{actionId}", versions) == []

    schema = document["components"]["schemas"]["ActionLimit"]
    assert schema["additionalProperties"] is False and set(schema["required"]) == {"name", "kind", "max"}
    members = schema["properties"]
    assert members["kind"]["enum"] == ["executions", "sum", "rate"]
    assert members["period"]["enum"] == ["P1D", "P1W", "P1M"]
    assert "UTC" in members["period"]["description"]
    assert "maxExecutions" in members["name"]["description"]
    shown = document["components"]["schemas"]["ActionVersionOut"]["properties"]["limits"]
    assert shown["items"] == {"allOf": [{"$ref": "#/components/schemas/ActionLimit"}]}
    at = ("components", "schemas", "ActionLimit")
    for limit in LIMITS:
        assert oracle.problems(limit, *at) == [], limit
    for wrong in (
        {"name": "x", "kind": "budget", "max": 1},
        {"name": "x", "kind": "rate", "max": 1, "period": "P1Y"},
        {"name": "x", "kind": "sum", "param": "amount", "max": "request.max"},
        {"name": "x", "kind": "sum", "param": "amount", "max": -1},
        {"name": "x", "kind": "executions", "max": 1, "resetsAt": "never"},
        {"kind": "executions", "max": 1},
    ):
        assert oracle.problems(wrong, *at), wrong


@pytest.mark.parametrize("release", RELEASES, ids=[r.id for r in RELEASES])
async def test_older_versions_keep_limits_in_the_content(
    api: SignedClient, engine: Engine, release: Any
) -> None:
    """2026-05-20 and 2026-09-01 list an action's versions as summaries (no content, so no limits)
    and its versions with their ``content``, which holds the limits, so the digest still checks;
    the release's own models read both."""
    org_id = api.creds.organization_id
    limited_id, version_id = published(engine, org_id, LIMITED)
    pinned = {"headers": {"API-Version": release.api_version}}
    listed = await api.get("/actions", **pinned)
    versions = await api.get(f"/actions/version/{quote(limited_id, safe='')}", **pinned)
    assert listed.status_code == versions.status_code == 200, (listed.text, versions.text)
    [summary] = next(a for a in listed.json()["data"] if a["id"] == limited_id)["versions"]
    assert set(summary) == {"id", "version", "digestSRI", "createdAt"}
    [shown] = versions.json()["data"]
    assert shown["content"]["limits"] == LIMITS
    assert digest_sri(shown["content"]) == shown["digestSRI"]
    with loaded(release) as sdk:
        page = sdk.model("ActionVersionListEntity").from_dict(versions.json())
        [read] = page.data
        assert (read.id, read.digest_sri) == (version_id, shown["digestSRI"])
        assert read.content["limits"] == LIMITS
        actions = sdk.model("ActionListEntity").from_dict(listed.json())
        assert limited_id in {a.id for a in actions.data}
