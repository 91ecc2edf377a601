"""POST /credential/verify (CONTRACT 5): allow and deny with evaluations and signed receipts,
single use, rules of the pinned action version, actions without rules, rules that error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from core.settings import Settings
from store import actions
from store.db import read_session
from store.tables import Presentation, Verification
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.presentations import GOOD, checked, new_vp, stored, verify

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]

RULES = [
    ("amountWithinLimit", "executionParams.amount <= userParams.maxAmount"),
    ("payeeListed", "size(userParams.payees) == 0 || executionParams.payee in userParams.payees"),
]


async def test_allow_with_evaluations_and_a_receipt(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    mandate, vp = await new_vp(api, temporal)
    body = checked(await verify(api, vp, GOOD), engine, settings)
    assert body["credentialId"] == mandate["id"]
    assert body["evaluations"] == [{"rule": n, "expression": e, "result": "pass"} for n, e in RULES]
    receipt = body["receipt"]
    assert (receipt["presentationId"], receipt["requestId"], receipt["verifier"]) == (
        vp["id"],
        mandate["requestId"],
        api.creds.did,
    )
    row = stored(engine, receipt["id"])
    assert (row.decision, row.reason, row.mandate_id, row.presentation_id) == (
        "allow",
        None,
        mandate["id"],
        vp["id"],
    )
    assert row.execution_params == GOOD and row.evaluations == body["evaluations"] and row.receipt == receipt
    with read_session(engine) as session:
        used = session.get(Presentation, vp["id"])
    assert used is not None and used.used_at is not None and used.used_by == api.creds.organization_id


async def test_a_failing_rule_denies_and_names_it(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    _, vp = await new_vp(api, temporal)
    body = checked(await verify(api, vp, {"amount": 5000, "payee": "Bob"}), engine, settings, "rule_failed")
    assert [(e["rule"], e["result"]) for e in body["evaluations"]] == [
        ("amountWithinLimit", "fail"),
        ("payeeListed", "pass"),
    ]
    assert "amountWithinLimit" in body["message"]
    assert stored(engine, body["receipt"]["id"]).reason == "rule_failed"


async def test_a_vp_is_used_once_whatever_the_first_decision(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    _, allowed = await new_vp(api, temporal)
    checked(await verify(api, allowed, GOOD), engine, settings)
    again = checked(await verify(api, allowed, GOOD), engine, settings, "vp_already_used")
    assert again["evaluations"] == []
    _, denied = await new_vp(api, temporal)
    checked(await verify(api, denied, {"amount": 9999, "payee": "Bob"}), engine, settings, "rule_failed")
    checked(await verify(api, denied, GOOD), engine, settings, "vp_already_used")
    _, bad_params = await new_vp(api, temporal)
    checked(await verify(api, bad_params, {"amount": 1}), engine, settings, "execution_params_invalid")
    checked(await verify(api, bad_params, GOOD), engine, settings, "vp_already_used")


async def test_rules_of_the_pinned_version_apply(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    """A version published after the mandate changes nothing for it (CONTRACT 6)."""
    _, vp = await new_vp(api, temporal)
    org_id, action_id = api.creds.organization_id, policy_request()["credentials"][0]["action"]["id"]
    spec, _ = actions.parse_action_spec(
        {
            "name": "Rent payments",
            "executionParams": [{"name": "amount", "type": "number"}],
            "userParams": [{"name": "maxAmount", "type": "number"}],
            "rules": [{"name": "tiny", "expression": "executionParams.amount < 1.0"}],
        }
    )
    assert spec is not None
    actions.publish(engine, actions.add_version(engine, org_id, action_id, spec).id, actor="operator:tests")
    body = checked(await verify(api, vp, GOOD), engine, settings)
    assert [e["rule"] for e in body["evaluations"]] == ["amountWithinLimit", "payeeListed"]


async def test_an_action_without_rules_checks_signatures_access_and_validity(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    version = actions.install_published(engine, api.creds.organization_id, {"name": "Open the door"})
    credential = {
        "type": "POLICY",
        "name": "Door",
        "scope": "door",
        "action": {"id": version.action_id, "userParams": {}},
    }
    mandate, vp = await new_vp(api, temporal, credentials=[credential])
    body = checked(await verify(api, vp), engine, settings)
    assert body["evaluations"] == [] and body["credentialId"] == mandate["id"]
    _, other = await new_vp(api, temporal, credentials=[credential])
    body = checked(await verify(api, other, {"anything": 1}), engine, settings, "execution_params_invalid")
    assert "executionParams.anything is not declared" in body["message"]


async def test_a_rule_that_errors_denies(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    version = actions.install_published(
        engine,
        api.creds.organization_id,
        {
            "name": "Split",
            "executionParams": [
                {"name": "parts", "type": "integer"},
                {"name": "shares", "type": "array<number>"},
            ],
            "userParams": [{"name": "total", "type": "integer"}],
            "rules": [
                {"name": "perPart", "expression": "userParams.total / executionParams.parts >= 1"},
                {"name": "thirdShare", "expression": "executionParams.shares[2] > 0.0"},
            ],
        },
    )
    credential = {
        "type": "POLICY",
        "name": "Split",
        "scope": "split",
        "action": {"id": version.action_id, "userParams": {"total": 10}},
    }
    _, vp = await new_vp(api, temporal, credentials=[credential])
    body = checked(await verify(api, vp, {"parts": 0, "shares": [1.0]}), engine, settings, "rule_failed")
    assert [(e["rule"], e["result"]) for e in body["evaluations"]] == [
        ("perPart", "error"),
        ("thirdShare", "error"),
    ]
    assert all(e["reason"] for e in body["evaluations"])
    _, fine = await new_vp(api, temporal, credentials=[credential])
    body = checked(await verify(api, fine, {"parts": 2, "shares": [1.0, 1.0, 3.0]}), engine, settings)
    assert [e["result"] for e in body["evaluations"]] == ["pass", "pass"]


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b'{"presentation": "a string"}',
        b'{"presentation": [1]}',
        b'{"executionParams": {}}',
        b"[1, 2]",
        b'{"presentation": {}, "executionParams": [1]}',
        b'{"presentation": {}, "extra": 1}',
        b'{"presentation": {}, "executionParams": {"amount": NaN}}',
        b'{"presentation": {}, "executionParams": {"a": [1, Infinity]}}',
        b'{"presentation": {"proof": {"n": NaN}}}',
        b'{"presentation": {"verifiableCredential": [{"a": -Infinity}]}}',
    ],
)
async def test_a_body_of_the_wrong_shape_is_a_400_without_receipt(
    api: SignedClient,
    engine: Engine,
    raw: bytes,
) -> None:
    body = assert_error_shape(await api.post("/credential/verify", raw=raw), 400)
    assert "receipt" not in body
    with read_session(engine) as session:
        rows = session.exec(
            select(Verification).where(Verification.organization_id == api.creds.organization_id)
        ).all()
    assert rows == []


async def test_odd_but_valid_json_values_are_recorded(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    """A NUL character and a huge integer are JSON: both databases record them."""
    _, vp = await new_vp(api, temporal)
    odd = {"amount": 100, "payee": "Bo\u0000b"}
    body = checked(await verify(api, vp, odd), engine, settings)
    assert stored(engine, body["receipt"]["id"]).execution_params == odd
    _, other = await new_vp(api, temporal)
    huge = {"amount": 10**30, "payee": "Bob"}
    body = checked(await verify(api, other, huge), engine, settings, "rule_failed")
    assert stored(engine, body["receipt"]["id"]).execution_params == huge


async def test_a_replayed_verification_is_refused_and_writes_nothing(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings
) -> None:
    """The verify route records its signature in the verification's own transaction
    (api.auth.DEFERRED_SIGNATURE): the same signed request sent again is 401, with no second
    verification and no audit record."""
    from tests.support.audit import chain

    _, vp = await new_vp(api, temporal)
    raw = json.dumps({"presentation": vp, "executionParams": GOOD}, separators=(",", ":")).encode()
    headers = {**api.headers(raw), "Content-Type": "application/json"}
    first = await api.http.post("/credential/verify", content=raw, headers=headers)
    checked(first, engine, settings)
    with read_session(engine) as session:
        verifications = len(session.exec(select(Verification)).all())
    records = len(chain(engine, api.creds.organization_id))

    again = await api.http.post("/credential/verify", content=raw, headers=headers)
    assert assert_error_shape(again, 401)["message"] == "Signature already used"
    with read_session(engine) as session:
        assert len(session.exec(select(Verification)).all()) == verifications
    assert len(chain(engine, api.creds.organization_id)) == records
    # a fresh signature of the same body is a new call: the VP is used up by the first
    fresh = await verify(api, vp, GOOD)
    assert fresh.status_code == 403 and fresh.json()["reason"] == "vp_already_used"
