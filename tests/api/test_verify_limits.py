"""Use limits at verify (issue 31): a request's maxExecutions counted down to its automatic
revocation; an action's sum and rate limits, each max a number or a user param; denials that name
the limit and use nothing; what the signed mandate, the receipts and the credential views say."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from core.settings import Settings
from store import actions
from store.db import read_session
from store.tables import AuditRecord, Credential
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.mandates import PAY_WITH_LIMITS as PAY
from tests.support.mandates import accept_all, issued_mandate
from tests.support.presentations import GOOD, checked, present, presented, verify

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]


def row_of(engine: Engine, mandate_id: str) -> Credential:
    with read_session(engine) as session:
        found = session.exec(select(Credential).where(Credential.mandate_id == mandate_id)).one()
    return found


async def pay_mandate(api: SignedClient, temporal: Any, engine: Engine, monthly: float) -> dict[str, Any]:
    version = actions.install_published(engine, api.creds.organization_id, PAY)
    credential = {
        "type": "POLICY",
        "name": "Invoices",
        "scope": "invoices",
        "action": {"id": version.action_id, "userParams": {"monthlyLimit": monthly}},
    }
    return await issued_mandate(api, temporal, credentials=[credential])


async def verified(api: SignedClient, mandate: dict[str, Any], execution: Any) -> Any:
    vp = (await presented(api, mandate["id"]))["presentation"]
    return await verify(api, vp, execution)


def use(name: str, kind: str, most: float, used: float, amount: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "max": most,
        "used": used,
        "remaining": most - used,
        "amount": amount,
        "result": "pass",
        **extra,
    }


async def test_max_executions_counts_down_then_the_mandate_revokes_itself(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings
) -> None:
    mandate = await issued_mandate(
        api, temporal, credentials=[{**policy_request()["credentials"][0], "maxExecutions": 3}]
    )
    signed = mandate["w3cCredential"]["credentialSubject"]["mandate"]
    assert signed["maxExecutions"] == 3 and "limits" not in signed
    assert (mandate["maxExecutions"], mandate["executionsRemaining"]) == (3, 3)
    for used in (1, 2, 3):
        body = checked(await verified(api, mandate, GOOD), engine, settings)
        assert body["limits"] == [use("maxExecutions", "executions", 3, used, 1)]
        got = (await api.get(f"/request/{mandate['requestId']}")).json()["credentials"][0]
        assert got["executionsRemaining"] == 3 - used
    row = row_of(engine, mandate["id"])
    assert (row.status, row.revocation_reason) == ("REVOKED", "exhausted") and row.revoked_at is not None
    assert row.revocation_receipt is not None and row.revocation_receipt["reason"] == "exhausted"
    assert [p["actionType"] for p in (row.document_credential or {})["proof"]][-1] == "REVOKE"
    with read_session(engine) as session:
        records = session.exec(
            select(AuditRecord).where(
                AuditRecord.credential_id == mandate["id"], AuditRecord.type == "MANDATE_REVOKED"
            )
        ).all()
    assert [(r.actor, r.data["reason"]) for r in records] == [("system", "exhausted")]
    refused = assert_error_shape(await present(api, mandate["id"]), 400)
    assert refused["reason"] == "credential_revoked"
    detail = (await api.get(f"/credential/{mandate['id']}")).json()["credential"]
    assert (detail["status"], detail["executionsRemaining"], detail["revocationReason"]) == (
        "REVOKED",
        0,
        "exhausted",
    )


async def test_a_budget_allows_what_fits_and_a_denial_uses_nothing(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings
) -> None:
    mandate = await pay_mandate(api, temporal, engine, 300)
    [monthly, daily] = mandate["w3cCredential"]["credentialSubject"]["mandate"]["limits"]
    assert monthly == {
        "name": "monthly",
        "kind": "sum",
        "max": 300,
        "param": "amount",
        "period": "P1M",
        "unit": "EUR",
    }
    assert daily == {"name": "daily", "kind": "rate", "max": 10, "period": "P1D"}
    assert mandate["executionsRemaining"] is None

    body = checked(await verified(api, mandate, {"amount": 100}), engine, settings)
    first = {u["name"]: u for u in body["limits"]}
    assert (first["monthly"]["used"], first["monthly"]["remaining"], first["monthly"]["amount"]) == (
        100,
        200,
        100,
    )
    assert first["monthly"]["resetsAt"].endswith("-01T00:00:00Z") and first["daily"]["used"] == 1

    body = checked(await verified(api, mandate, {"amount": 250}), engine, settings, "limit_exceeded")
    denied = {u["name"]: u for u in body["limits"]}
    assert (denied["monthly"]["result"], denied["monthly"]["used"], denied["monthly"]["remaining"]) == (
        "fail",
        100,
        200,
    )
    assert denied["daily"]["result"] == "pass" and denied["daily"]["used"] == 1
    assert "monthly" in body["message"] and [e["result"] for e in body["evaluations"]] == ["pass"]

    checked(await verified(api, mandate, {"amount": -5}), engine, settings, "rule_failed")
    body = checked(await verified(api, mandate, {"amount": 200}), engine, settings)
    assert {u["name"]: u["remaining"] for u in body["limits"]} == {"monthly": 0, "daily": 8}
    checked(await verified(api, mandate, {"amount": 0.5}), engine, settings, "limit_exceeded")

    row = row_of(engine, mandate["id"])
    assert row.status == "ACTIVE"  # a spent budget is not a spent count: the period will reset
    assert {name: held["u"] for name, held in (row.usage or {}).items()} == {"monthly": "300", "daily": "2"}
    detail = (await api.get(f"/credential/{mandate['id']}")).json()["credential"]
    assert [(u["name"], u["used"], u["remaining"]) for u in detail["limits"]] == [
        ("monthly", 300, 0),
        ("daily", 2, 8),
    ]


async def test_a_user_param_bound_that_is_no_count_is_refused_at_request(
    api: SignedClient, engine: Engine
) -> None:
    version = actions.install_published(
        engine,
        api.creds.organization_id,
        {
            "name": "Uses",
            "userParams": [{"name": "uses", "type": "number"}],
            "limits": [{"name": "uses", "kind": "executions", "max": "userParams.uses"}],
        },
    )
    credential = {
        "type": "POLICY",
        "name": "Uses",
        "scope": "uses",
        "action": {"id": version.action_id, "userParams": {"uses": 2.5}},
    }
    body = assert_error_shape(await api.post("/request", policy_request(credentials=[credential])), 400)
    assert "credentials.0.action.userParams: limit uses: userParams.uses must be a whole number" in str(
        body["message"]
    )


@pytest.mark.parametrize("bad", [0, -1, 2.5, "5", True, 10**10])
async def test_max_executions_is_a_whole_number_of_at_least_one(api: SignedClient, bad: Any) -> None:
    credential = {**policy_request()["credentials"][0], "maxExecutions": bad}
    body = assert_error_shape(await api.post("/request", policy_request(credentials=[credential])), 400)
    assert "maxExecutions" in str(body["message"])


async def test_a_document_takes_no_max_executions(api: SignedClient) -> None:
    document = {
        "type": "DOCUMENT",
        "name": "Terms",
        "data": [{"label": "Terms", "type": "text", "value": "Yes", "hidden": False}],
        "maxExecutions": 2,
    }
    body = assert_error_shape(await api.post("/request", policy_request(credentials=[document])), 400)
    assert "DOCUMENT credential has none" in str(body["message"])


async def test_rules_read_the_use_before_this_verification(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings
) -> None:
    version = actions.install_published(
        engine,
        api.creds.organization_id,
        {
            "name": "Two quick ones",
            "limits": [{"name": "uses", "kind": "executions", "max": 5}],
            "rules": [
                {"name": "firstTwo", "expression": "usage.uses.used < 2.0 && usage.uses.remaining > 3.0"}
            ],
        },
    )
    credential = {"type": "POLICY", "name": "Two", "scope": "two", "action": {"id": version.action_id}}
    mandate = await issued_mandate(api, temporal, credentials=[credential])
    for used in (1, 2):
        body = checked(await verified(api, mandate, None), engine, settings)
        assert body["limits"][0]["used"] == used
    body = checked(await verified(api, mandate, None), engine, settings, "rule_failed")
    assert body["evaluations"][0]["result"] == "fail" and "limits" not in body
    assert row_of(engine, mandate["id"]).usage == {"uses": {"p": "", "u": "2"}}  # the denial used nothing


@pytest.mark.parametrize("version", ["2026-05-20", "2026-09-01"])
async def test_every_api_version_takes_max_executions_and_reads_what_is_left(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings, version: str
) -> None:
    headers = {"api-version": version}
    body = policy_request(credentials=[{**policy_request()["credentials"][0], "maxExecutions": 2}])
    created = await api.post("/request", body, headers=headers)
    assert created.status_code == 201, created.text
    request_id = created.json()["id"]  # the older versions answer a summary
    got = await api.get(f"/request/{request_id}", headers=headers)
    assert got.json()["credentials"][0]["executionsRemaining"] == 2
    request = (await api.get(f"/request/{request_id}")).json()
    [cred] = await accept_all(api, temporal, request)
    checked(await verified(api, cred, GOOD), engine, settings)
    got = await api.get(f"/request/{request_id}", headers=headers)
    [shown] = got.json()["credentials"]
    assert shown["executionsRemaining"] == 1 and "limits" not in shown and "maxExecutions" not in shown
    unlimited = await api.post("/request", policy_request(), headers=headers)
    got = await api.get(f"/request/{unlimited.json()['id']}", headers=headers)
    assert got.json()["credentials"][0]["executionsRemaining"] == -1  # the releases' "no limit"
