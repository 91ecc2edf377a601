"""Use limits under concurrency through two API processes (issue 31, "Must show"): 50 verifications
at once, each with a fresh presentation, through two API processes against a 5-use limit and
against a budget, on SQLite (both processes on one database file) and on PostgreSQL: exactly what
fits is allowed, the rest denied with the reason, nothing over.

Both APIs and the worker are real processes (``python -m uvicorn api.app:serve_app``,
``python -m worker``, as ``make run`` and docker-compose.yml start them) sharing one database and
one Temporal server. Every VP is obtained before the first verification is sent; the 50
verifications are then sent together, call ``k`` to API ``k % 2``, each signed with a timestamp of
its own (no call is a replay of another) and none sent twice. What they answered is checked
(status, reason, signed receipt, each limit's count), then what the database holds: the
credential's usage and status, one verification row per call, the audit records and the chain.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import Engine
from sqlmodel import col, select
from temporalio.testing import WorkflowEnvironment

from core.secretbox import SecretCipher
from core.settings import Environment, Settings
from orchestration.temporal import request_handle
from store import actions, audit
from store.db import make_engine, migrate, read_session
from store.tables import Credential, Verification
from tests.conftest import PG_ADMIN_URL, PG_AVAILABLE, _postgres_database, new_org
from tests.scale.conftest import MASTER_KEY, PUBLIC_URL
from tests.scale.invariants import assert_audit_chains_verify
from tests.support.api_client import LIVE_LIMITS, Credentials, SignedClient, policy_request
from tests.support.audit import chain
from tests.support.journey_messages import journey_secrets
from tests.support.mandates import create_request
from tests.support.presentations import checked, path_of
from tests.support.scaled_stack import ScaledStack, Stamps
from tests.support.workflow import decide, subject_uuid

pytestmark = pytest.mark.e2e

CALLS = 50
USES = 5  # Case A: the request's maxExecutions
BUDGET, AMOUNT = 1000, 30  # Case B: 50 x 30 asked, floor(1000 / 30) = 33 fit, 990 spent
FITS = BUDGET // AMOUNT
COUNT_MAX = 100  # Case B's executions limit: never reached, it counts the allowed ones

BUDGETED = {
    "name": "Pay from a budget",
    "executionParams": [{"name": "amount", "type": "number"}],
    "userParams": [{"name": "budget", "type": "number"}],
    "limits": [
        {"name": "budget", "kind": "sum", "param": "amount", "max": "userParams.budget", "unit": "EUR"},
        {"name": "uses", "kind": "executions", "max": COUNT_MAX},
    ],
}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One migrated database both API processes and the worker use: a SQLite file, or a throw-away
    PostgreSQL database."""
    if request.param == "postgresql":
        if not PG_AVAILABLE:
            pytest.skip(f"PostgreSQL is not reachable at {PG_ADMIN_URL}: its two-process variant skipped")
        with _postgres_database() as url:
            migrate(url)
            yield url
        return
    url = f"sqlite:///{tmp_path_factory.mktemp('limits-db') / 'mandatum.db'}"
    migrate(url)
    yield url


@dataclass
class Shape:
    settings: Settings
    engine: Engine
    cipher: SecretCipher
    stack: ScaledStack
    env: WorkflowEnvironment


@pytest_asyncio.fixture(scope="module")
async def shape(
    shared_url: str, dev_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Shape]:
    """Two API processes and a worker process on ``shared_url`` and the dev server."""
    settings = Settings(
        environment=Environment.TEST,
        var_dir=tmp_path_factory.mktemp("limits-var"),
        database_url=shared_url,
        master_key=MASTER_KEY,
        temporal_address=dev_env.client.service_client.config.target_host,
        task_queue=f"mandatum-limits-{uuid.uuid4().hex[:8]}",
        public_url=PUBLIC_URL,
    )
    engine = make_engine(shared_url)
    cipher = SecretCipher(settings.master_key_bytes())
    audit.use_service_key(engine, cipher, settings)
    stack = ScaledStack(settings)
    try:
        async with asyncio.TaskGroup() as starting:
            for api in ("api-a", "api-b"):
                starting.create_task(stack.start_api(api))
            starting.create_task(stack.start_worker("worker-1"))
        yield Shape(settings, engine, cipher, stack, dev_env)
    finally:
        await stack.stop()
        engine.dispose()


class Apis:
    """The two API processes as one organization's signed clients, timestamps never repeated."""

    def __init__(self, shape: Shape, org: Credentials) -> None:
        urls = [shape.stack.api_url(name) for name in ("api-a", "api-b")]
        self.http = [httpx.AsyncClient(base_url=url, timeout=120, limits=LIVE_LIMITS) for url in urls]
        self.signed = [SignedClient(http, org) for http in self.http]
        self.stamps = Stamps()

    async def post(self, k: int, path: str, body: Any = None) -> httpx.Response:
        """Call ``k`` to API ``k % 2``, once (no retry: a verification is never sent twice)."""
        return await self.signed[k % 2].post(path, body, timestamp=self.stamps.next())

    async def close(self) -> None:
        for http in self.http:
            await http.aclose()


@pytest_asyncio.fixture
async def apis(shape: Shape) -> AsyncIterator[tuple[Apis, Credentials]]:
    org = new_org(shape.engine, shape.cipher, shape.settings)
    both = Apis(shape, org)
    try:
        yield both, org
    finally:
        await both.close()


async def issued(shape: Shape, apis: Apis, credential: dict[str, Any]) -> dict[str, Any]:
    """A request with ``credential`` created through an API, accepted by its subject through the
    workflow's update (the code read from the worker process's outbox): the issued credential."""
    request = await create_request(apis.signed[0], credentials=[credential])
    handle = request_handle(shape.env.client, request["id"])
    [subject], [made] = request["subjects"], request["credentials"]
    outbox, secrets = shape.settings.var_dir / "outbox", journey_secrets(MASTER_KEY)
    await decide(handle, subject_uuid(subject["id"]), made["id"], outbox=outbox, secrets=secrets)
    got = await apis.signed[1].get(f"/request/{request['id']}")
    [credential_record] = got.json()["credentials"]
    assert credential_record["status"] == "ACTIVE", credential_record
    return dict(credential_record)


async def fresh_vps(apis: Apis, mandate_id: str) -> list[dict[str, Any]]:
    """``CALLS`` fresh presentations of the mandate, obtained through both APIs."""
    path = f"/credential/{path_of(mandate_id)}/presentation"
    made = await asyncio.gather(*(apis.post(k, path) for k in range(CALLS)))
    assert [m.status_code for m in made] == [200] * CALLS, [m.text for m in made if m.status_code != 200]
    vps = [m.json()["data"]["presentation"] for m in made]
    assert len({vp["id"] for vp in vps}) == CALLS
    return vps


async def all_at_once(
    apis: Apis, vps: list[dict[str, Any]], execution: dict[str, Any]
) -> list[httpx.Response]:
    """Every VP verified at the same time, call ``k`` through API ``k % 2``."""
    bodies = [{"presentation": vp, "executionParams": execution} for vp in vps]
    return list(await asyncio.gather(*(apis.post(k, "/credential/verify", b) for k, b in enumerate(bodies))))


def credential_row(engine: Engine, mandate_id: str) -> Credential:
    with read_session(engine) as session:
        found = session.exec(select(Credential).where(Credential.mandate_id == mandate_id)).one()
    return found


def verification_rows(engine: Engine, mandate_id: str) -> list[Verification]:
    with read_session(engine) as session:
        return list(session.exec(select(Verification).where(col(Verification.mandate_id) == mandate_id)))


def assert_both_processes_live(shape: Shape) -> None:
    assert all(p.child.proc.returncode is None for p in shape.stack.processes.values())


def limit(name: str, kind: str, most: int, used: int, amount: int, result: str = "pass") -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "max": most,
        "used": used,
        "remaining": most - used,
        "amount": amount,
        "result": result,
    }
    if result == "fail":
        out["reason"] = f"needs {amount}, {most - used} left"
    return out


async def test_fifty_at_once_against_five_uses_allow_five_and_revoke(
    shape: Shape, apis: tuple[Apis, Credentials]
) -> None:
    both, org = apis
    credential = {**policy_request()["credentials"][0], "maxExecutions": USES}
    mandate = await issued(shape, both, credential)
    assert (mandate["maxExecutions"], mandate["executionsRemaining"]) == (USES, USES)
    vps = await fresh_vps(both, mandate["id"])

    answers = await all_at_once(both, vps, {"amount": 100, "payee": "Bob"})

    assert_both_processes_live(shape)
    assert Counter(a.status_code for a in answers) == {200: USES, 403: CALLS - USES}, [
        a.text for a in answers
    ]
    settings, engine = shape.settings, shape.engine
    allowed = [checked(a, engine, settings) for a in answers if a.status_code == 200]
    denied = [checked(a, engine, settings, a.json().get("reason")) for a in answers if a.status_code == 403]
    # each allowed one counted on the locked row in turn: uses 1 to 5, no two the same
    assert sorted(b["limits"][0]["used"] for b in allowed) == list(range(1, USES + 1))
    assert all(
        b["limits"] == [limit("maxExecutions", "executions", USES, b["limits"][0]["used"], 1)]
        for b in allowed
    )
    reasons = Counter(b["reason"] for b in denied)
    assert set(reasons) <= {"limit_exceeded", "credential_revoked"} and reasons.total() == CALLS - USES
    spent = [limit("maxExecutions", "executions", USES, USES, 1, "fail")]
    assert all(b["limits"] == spent for b in denied if b["reason"] == "limit_exceeded"), denied

    row = credential_row(engine, mandate["id"])
    assert (row.status, row.revocation_reason) == ("REVOKED", "exhausted") and row.revoked_at is not None
    assert row.usage == {"maxExecutions": {"p": "", "u": str(USES)}}
    rows = verification_rows(engine, mandate["id"])
    assert Counter(r.decision for r in rows) == {"allow": USES, "deny": CALLS - USES}
    assert {r.id for r in rows} == {a.json()["receipt"]["id"] for a in answers}
    records = chain(engine, org.organization_id)
    revoked = [r for r in records if r.type == audit.MANDATE_REVOKED]
    assert [(r.credential_id, r.actor, r.data["reason"]) for r in revoked] == [
        (mandate["id"], "system", "exhausted")
    ]
    kinds = Counter(r.type for r in records if r.credential_id == mandate["id"])
    assert (kinds[audit.VERIFY_ACCEPT], kinds[audit.VERIFY_DENY]) == (USES, CALLS - USES)
    assert_audit_chains_verify(engine, settings, shape.cipher, [org])

    detail = (await both.signed[1].get(f"/credential/{path_of(mandate['id'])}")).json()["credential"]
    assert (detail["status"], detail["executionsRemaining"], detail["revocationReason"]) == (
        "REVOKED",
        0,
        "exhausted",
    )
    refused = await both.post(1, f"/credential/{path_of(mandate['id'])}/presentation")
    assert refused.status_code == 400 and refused.json()["reason"] == "credential_revoked", refused.text


async def test_fifty_at_once_against_a_budget_allow_what_fits(
    shape: Shape, apis: tuple[Apis, Credentials]
) -> None:
    both, org = apis
    settings, engine = shape.settings, shape.engine
    version = actions.install_published(engine, org.organization_id, BUDGETED)
    credential = {
        "type": "POLICY",
        "name": "Budget",
        "scope": "payments",
        "action": {"id": version.action_id, "userParams": {"budget": BUDGET}},
    }
    mandate = await issued(shape, both, credential)
    vps = await fresh_vps(both, mandate["id"])

    answers = await all_at_once(both, vps, {"amount": AMOUNT})

    assert_both_processes_live(shape)
    assert Counter(a.status_code for a in answers) == {200: FITS, 403: CALLS - FITS}, [
        a.text for a in answers
    ]
    allowed = [checked(a, engine, settings) for a in answers if a.status_code == 200]
    denied = [checked(a, engine, settings, "limit_exceeded") for a in answers if a.status_code == 403]
    assert sum(AMOUNT for _ in allowed) <= BUDGET
    # counted one after the other on the locked row: the budget 30, 60, ... 990, the count 1 to 33
    by_name = [{u["name"]: u for u in b["limits"]} for b in allowed]
    assert sorted(u["budget"]["used"] for u in by_name) == [AMOUNT * n for n in range(1, FITS + 1)]
    assert sorted(u["uses"]["used"] for u in by_name) == list(range(1, FITS + 1))
    assert all(u["budget"]["used"] == AMOUNT * u["uses"]["used"] for u in by_name)
    # a denial uses nothing and says what is left: 10 of the budget, no room for 30
    spent = FITS * AMOUNT
    for body in denied:
        [budget, uses] = body["limits"]
        assert {k: v for k, v in budget.items() if k not in ("param", "unit")} == limit(
            "budget", "sum", BUDGET, spent, AMOUNT, "fail"
        )
        assert uses == limit("uses", "executions", COUNT_MAX, FITS, 1)
        assert "budget" in body["message"]

    row = credential_row(engine, mandate["id"])
    assert row.status == "ACTIVE" and row.revoked_at is None  # a spent budget does not revoke
    assert row.usage == {"budget": {"p": "", "u": str(spent)}, "uses": {"p": "", "u": str(FITS)}}
    rows = verification_rows(engine, mandate["id"])
    assert Counter(r.decision for r in rows) == {"allow": FITS, "deny": CALLS - FITS}
    assert sum(r.execution_params["amount"] for r in rows if r.decision == "allow") == spent  # type: ignore[index]
    records = chain(engine, org.organization_id)
    assert not [r for r in records if r.type == audit.MANDATE_REVOKED]
    kinds = Counter(r.type for r in records if r.credential_id == mandate["id"])
    assert (kinds[audit.VERIFY_ACCEPT], kinds[audit.VERIFY_DENY]) == (FITS, CALLS - FITS)
    assert_audit_chains_verify(engine, settings, shape.cipher, [org])

    detail = (await both.signed[1].get(f"/credential/{path_of(mandate['id'])}")).json()["credential"]
    assert [(u["name"], u["used"], u["remaining"]) for u in detail["limits"]] == [
        ("budget", spent, BUDGET - spent),
        ("uses", FITS, COUNT_MAX - FITS),
    ]
