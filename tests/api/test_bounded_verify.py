"""Bounded verification (issue 30): no verification can hold the API's event loop.

On 299867a a rule over an unbounded array ran on the event loop with no limit: one verify with
1,600 distinct strings took 46 s, and every other request of every tenant waited for it. Now the
values a rule reads have bounds, a costly version's rules run in an evaluation process within a
step budget, and a verification stopped at the budget is denied with a reason of its own."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

import pytest
from sqlalchemy import Engine, update
from sqlmodel import col

from core.settings import Settings
from policy.actions import parse_action_spec
from policy.rules import LIMIT_REASON, NOT_RUN_REASON
from services import verification
from store import actions
from store.db import utcnow, write_session
from store.tables import ActionVersion
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.audit import chain
from tests.support.presentations import GOOD, checked, new_vp, verify
from trust.credentials import digest_sri

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]

# the attack: every item compared with every other one
QUADRATIC = "executionParams.items.all(x, executionParams.items.exists_one(y, y == x))"


def publish_unchecked(engine: Engine, org_id: str, rules: list[dict[str, str]]) -> str:
    """An action version published as before the bounds existed: its rules never estimated."""
    spec, errors = parse_action_spec(
        {
            "name": "Batch",
            "executionParams": [{"name": "items", "type": "array<string>"}],
            "rules": rules,
        }
    )
    assert spec is not None, errors
    action, version = actions.create_action(engine, org_id, spec)
    with write_session(engine) as session:
        session.execute(
            update(ActionVersion)
            .where(col(ActionVersion.id) == version.id)
            .values(status=actions.PUBLISHED, digest_sri=digest_sri(version.content), published_at=utcnow())
        )
    return action.id


def batch_credential(action_id: str) -> dict[str, Any]:
    return {
        "type": "POLICY",
        "name": "Batch",
        "scope": "batch",
        "action": {"id": action_id, "userParams": {}},
    }


class Probe:
    """A coroutine on the event loop that notes the longest time it waited for its turn."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.turns = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0)
            now = time.perf_counter()
            self.longest, self.turns, last = max(self.longest, now - last), self.turns + 1, now

    def __enter__(self) -> Probe:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()


def the_pool(http: Any) -> Any:
    return http._transport.app.state.ctx.rules


async def test_a_costly_rule_is_stopped_at_the_budget_in_another_process_and_denied(
    api: SignedClient, http: Any, temporal: Any, engine: Engine, settings: Settings
) -> None:
    """The issue's quadratic rule on 100 distinct items (the default maxItems): 10,000 comparisons,
    over the budget. It is evaluated in an evaluation process, not the API's, stopped there, and
    the verification is denied with ``rule_limit_exceeded`` in the answer, the signed receipt and
    the audit record; the next rule is reported as not evaluated."""
    action_id = publish_unchecked(
        engine,
        api.creds.organization_id,
        [
            {"name": "distinct", "expression": QUADRATIC},
            {"name": "some", "expression": "size(executionParams.items) > 0"},
        ],
    )
    _, vp = await new_vp(api, temporal, credentials=[batch_credential(action_id)])
    pool = the_pool(http)
    before = sum(pool.ran_in.values())
    items = [f"item-{i}" for i in range(100)]
    with Probe() as probe:
        resp = await verify(api, vp, {"items": items})
    body = checked(resp, engine, settings, "rule_limit_exceeded")
    assert body["message"].startswith(verification.MESSAGES["rule_limit_exceeded"])
    assert [(e["rule"], e["result"], e["reason"]) for e in body["evaluations"]] == [
        ("distinct", "error", LIMIT_REASON.format(budget=10_000)),
        ("some", "error", NOT_RUN_REASON),
    ]
    assert sum(pool.ran_in.values()) == before + 1  # answered by an evaluation process
    assert os.getpid() not in pool.ran_in
    assert probe.turns > 0  # the loop went on while the rules ran elsewhere
    [record] = [r for r in chain(engine, api.creds.organization_id) if r.type == "VERIFY_DENY"]
    assert record.data["reason"] == "rule_limit_exceeded"


async def test_the_loop_keeps_turning_while_costly_rules_run(
    api: SignedClient, http: Any, temporal: Any, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a budget large enough for the rules to run a quarter of a second or more in the
    evaluation process, the event loop's longest wait is a small part of the verification (on
    299867a the rules ran on the loop: its longest wait was the whole verification)."""
    monkeypatch.setattr(verification, "RULE_BUDGET", 50_000)
    action_id = publish_unchecked(
        engine, api.creds.organization_id, [{"name": "distinct", "expression": QUADRATIC}]
    )
    _, vp = await new_vp(api, temporal, credentials=[batch_credential(action_id)])
    started = time.perf_counter()
    with Probe() as probe:
        resp = await verify(api, vp, {"items": [f"item-{i}" for i in range(80)]})
    took = time.perf_counter() - started
    assert resp.status_code == 200, resp.text  # 80 items take about 33,000 steps
    assert probe.longest < took / 2, (probe.longest, took)


async def test_values_over_the_declared_bounds_are_denied_naming_the_bound(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings
) -> None:
    """The example action's ``payee`` is a string of the default maxLength (1,000): the issue's
    1,600-item body is now a denial before any rule runs."""
    _, vp = await new_vp(api, temporal)
    long_payee = {**GOOD, "payee": "B" * 1001}
    body = checked(await verify(api, vp, long_payee), engine, settings, "execution_params_invalid")
    assert body["evaluations"] == []
    assert (
        "executionParams.payee is 1,001 characters long, more than its maxLength of 1,000" in body["message"]
    )


@pytest.mark.parametrize(
    ("execution", "message"),
    [
        ({"items": ["x"] * 10_001}, "items has 10,001 items, more than the 10,000 any param may have"),
        ({"memo": "x" * 10_001}, "memo is 10,001 characters long, more than the 10,000 any param may be"),
        ({"items": ["a", "x" * 10_001]}, "items item 1 is 10,001 characters long"),
        ({f"p{i}": 1 for i in range(101)}, "has 101 names, more than the 100 allowed"),
    ],
)
async def test_values_past_every_ceiling_are_a_400_and_leave_the_vp_unused(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
    execution: dict[str, Any],
    message: str,
) -> None:
    _, vp = await new_vp(api, temporal)
    body = assert_error_shape(await verify(api, vp, execution), 400)
    assert any(message in line for line in body["message"]), body["message"]
    checked(await verify(api, vp, GOOD), engine, settings)  # nothing was recorded: still usable


async def test_too_many_waiting_is_a_429_that_records_nothing(
    api: SignedClient,
    http: Any,
    temporal: Any,
    engine: Engine,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When as many of the organization's costly verifications wait as may (here none may), the
    next is told to retry: 429 with Retry-After, nothing recorded, the VP still unused."""
    action_id = publish_unchecked(
        engine, api.creds.organization_id, [{"name": "distinct", "expression": QUADRATIC}]
    )
    _, vp = await new_vp(api, temporal, credentials=[batch_credential(action_id)])
    items = {"items": [f"item-{i}" for i in range(40)]}  # too costly to run inline
    monkeypatch.setattr(the_pool(http), "waiting_per_org", 0)
    resp = await verify(api, vp, items)
    body = assert_error_shape(resp, 429)
    assert resp.headers["Retry-After"] == "1" and "retry" in body["message"]
    monkeypatch.undo()
    checked(await verify(api, vp, items), engine, settings)  # 40 items fit the budget


async def test_user_params_over_their_bounds_are_refused_where_a_request_enters(api: SignedClient) -> None:
    """The same bounds hold for what a request pins: the example action's ``payees`` is an
    array<string> of the default maxItems (100); 101 is a 400 naming it, and nothing is made."""
    credential = {
        "type": "POLICY",
        "name": "Rent payments",
        "scope": "payments",
        "action": {
            "id": "urn:via:action:0b1e4c1a-7f1d-4a7e-9a55-1f2b3c4d5e6f",
            "userParams": {"maxAmount": 10, "payees": [f"payee {i}" for i in range(101)]},
        },
    }
    resp = await api.post("/request", policy_request(credentials=[credential]))
    body = assert_error_shape(resp, 400)
    assert any("payees has 101 items, more than its maxItems of 100" in m for m in body["message"]), body
    listed = await api.get("/request")
    assert listed.json()["data"] == []


async def test_a_large_presentation_is_checked_off_the_event_loop(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Canonicalizing a presentation grows with it (a forged one of half a mebibyte of numbers took
    about 50 ms): a body over 64 KiB is checked and its receipt signed on a thread, an ordinary one
    where it always was (on SQLite the loop itself)."""
    ran: dict[str, set[str]] = {"assess": set(), "conclude": set()}
    for name in ran:
        real = getattr(verification, name)

        def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            ran[_name].add(threading.current_thread().name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(verification, name, spy)
    loop_thread = threading.current_thread().name
    _, vp = await new_vp(api, temporal)
    forged = {**vp, "padding": [n * 1.5 for n in range(40_000)]}  # not what was signed
    body = checked(await verify(api, forged, GOOD), engine, settings, "vp_signature_invalid")
    assert body["credentialId"] == vp["verifiableCredential"]["id"]
    assert loop_thread not in ran["assess"] | ran["conclude"] and ran["assess"] and ran["conclude"]
    for seen in ran.values():
        seen.clear()
    checked(await verify(api, vp, GOOD), engine, settings)  # the VP was not used by the forgery
    if engine.dialect.name == "sqlite":
        assert ran["assess"] == ran["conclude"] == {loop_thread}
