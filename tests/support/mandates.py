"""Getting an issued mandate in a test: a request created over the API, accepted by every subject
through the request workflow's ``decide`` update (what the approval page will do)."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from orchestration.temporal import request_handle
from tests.support.api_client import SignedClient, policy_request
from tests.support.workflow import decide, subject_uuid


async def create_request(api: SignedClient, **overrides: Any) -> dict[str, Any]:
    resp = await api.post("/request", policy_request(**overrides))
    assert resp.status_code == 201, resp.text
    return dict(resp.json()["data"])


async def accept_all(api: SignedClient, temporal: Client, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Every subject accepts every credential; returns the request's credentials as now stored."""
    handle = request_handle(temporal, request["id"])
    for cred in request["credentials"]:
        for subject in request["subjects"]:
            await decide(handle, subject_uuid(subject["id"]), cred["id"], accept=True)
    got = await api.get(f"/request/{request['id']}")
    assert got.status_code == 200, got.text
    return list(got.json()["credentials"])


async def issued_mandate(api: SignedClient, temporal: Client, **overrides: Any) -> dict[str, Any]:
    """An ACTIVE mandate of the caller's organization (the example action unless ``credentials``
    is overridden): the credential record, whose ``id`` is the mandate URN and ``w3cCredential``
    the signed mandate. Needs the ``worker`` fixture."""
    request = await create_request(api, **overrides)
    [cred, *_] = await accept_all(api, temporal, request)
    assert cred["status"] == "ACTIVE", cred
    return {**cred, "requestId": request["id"]}


# an action with use limits (issue 31): a monthly budget each request sets, and a daily rate
PAY_WITH_LIMITS = {
    "name": "Pay an invoice",
    "executionParams": [{"name": "amount", "type": "number"}],
    "userParams": [{"name": "monthlyLimit", "type": "number"}],
    "rules": [{"name": "positive", "expression": "executionParams.amount > 0"}],
    "limits": [
        {
            "name": "monthly",
            "kind": "sum",
            "param": "amount",
            "max": "userParams.monthlyLimit",
            "period": "P1M",
            "unit": "EUR",
            "description": "Card payments",
        },
        {"name": "daily", "kind": "rate", "max": 10, "period": "P1D"},
    ],
}
