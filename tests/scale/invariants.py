"""What must hold after the scaled shape lost a worker and an API mid-run, read from the database,
from Temporal and from the webhook receiver (not from what the APIs answered)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import Engine
from sqlmodel import col, select
from temporalio.client import Client, WorkflowExecutionStatus

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle
from services import audit
from services.context import Context
from store import keys
from store.db import read_session
from store.tables import Credential, CredentialRequest, Decision, Presentation, Verification, WebhookEvent
from tests.support.api_client import Credentials
from tests.support.durability import allocated
from tests.support.presentations import checked
from tests.support.scaled_stack import DEADLINE
from tests.support.webhook_receiver import Receiver
from tests.support.webhooks import wait_for
from tests.support.workflow import result_of
from trust import credentials as vc
from workflows.ids import SA_ORGANIZATION, SA_STATUS


@dataclass
class Flow:
    """One request of the drive: its subjects all accept, or the last one rejects."""

    index: int
    org: Credentials
    contacts: list[str]
    rejected: bool
    key: str = field(default_factory=lambda: uuid.uuid4().hex)  # its Idempotency-Key
    request: dict[str, Any] = field(default_factory=dict)  # as POST /request answered
    mandate_id: str | None = None
    vp: dict[str, Any] | None = None
    verdicts: list[tuple[httpx.Response, bool]] = field(default_factory=list)  # (answer, cut)


def _rows(engine: Engine, table: Any, column: Any, values: list[str]) -> list[Any]:
    with read_session(engine) as session:
        return list(session.exec(select(table).where(col(column).in_(values))))


async def _runs(client: Client, queue: str, expected: int) -> list[str]:
    """The workflow ids of every request workflow run on ``queue`` (visibility lags a little)."""
    query = f'TaskQueue="{queue}" AND WorkflowType="CredentialRequest"'
    runs: list[str] = []
    for _ in range(int(DEADLINE / 0.2)):
        runs = [w.id async for w in client.list_workflows(query)]
        if len(runs) >= expected:
            break
        await asyncio.sleep(0.2)
    return runs


async def assert_requests_agree_with_workflows(
    engine: Engine, client: Client, queue: str, flows: list[Flow]
) -> None:
    """One row per Idempotency-Key (a creation retried through the other API made no second
    request); each row has one workflow run, ``credential-request:<id>``, closed, whose result and
    search attributes say what the row says."""
    ids = [f.request["id"] for f in flows]
    results = await asyncio.gather(*(result_of(request_handle(client, i)) for i in ids))
    described = await asyncio.gather(*(request_handle(client, i).describe() for i in ids))
    assert sorted(await _runs(client, queue, len(ids))) == sorted(f"credential-request:{i}" for i in ids)
    orgs = sorted({f.org.organization_id for f in flows})
    rows = {r.id: r for r in _rows(engine, CredentialRequest, CredentialRequest.organization_id, orgs)}
    assert sorted(rows) == sorted(ids)
    for request_id, result, desc in zip(ids, results, described, strict=True):
        row = rows[request_id]
        assert row.workflow_started_at is not None and desc.id == f"credential-request:{request_id}"
        sa = desc.typed_search_attributes
        assert (desc.status, result.status, sa.get(SA_STATUS), sa.get(SA_ORGANIZATION)) == (
            WorkflowExecutionStatus.COMPLETED,
            row.status,
            row.status,
            row.organization_id,
        )
        assert row.status == "COMPLETED"


def assert_one_mandate_per_acceptance(engine: Engine, settings: Settings, flows: list[Flow]) -> None:
    """Every subject's decision recorded once, as they made it; a credential every subject accepted
    is one signed mandate with one status list entry, a rejected one none."""
    credentials = _rows(engine, Credential, Credential.request_id, [f.request["id"] for f in flows])
    by_request = {c.request_id: c for c in credentials}
    assert len(by_request) == len(credentials) == len(flows)
    decisions: dict[str, list[Decision]] = defaultdict(list)
    for d in _rows(engine, Decision, Decision.credential_id, [c.id for c in credentials]):
        decisions[d.credential_id].append(d)
    resolver = keys.did_resolver(engine, settings)
    for flow in flows:
        cred = by_request[flow.request["id"]]
        made = Counter(d.accepted for d in decisions[cred.id])
        wanted = Counter([True] * (len(flow.contacts) - flow.rejected) + [False] * flow.rejected)
        assert made == wanted, (flow.index, made)
        if flow.rejected:
            assert (cred.status, cred.mandate_id, cred.w3c_credential) == ("REJECTED", None, None)
            continue
        assert (cred.status, cred.mandate_id) == ("ACTIVE", flow.mandate_id)
        assert cred.w3c_credential is not None and cred.w3c_credential["id"] == cred.mandate_id
        vc.verify_mandate(cred.w3c_credential, resolver)
    issued = [c for c in credentials if c.mandate_id is not None]
    assert len(issued) == sum(not f.rejected for f in flows)
    assert len({c.mandate_id for c in issued}) == len(
        {(c.status_list_id, c.status_list_index) for c in issued}
    )
    assert len({c.mandate_id for c in issued}) == len(issued) == allocated(engine)


async def assert_every_event_delivered(engine: Engine, receiver: Receiver, flows: list[Flow]) -> None:
    """One ``credential`` event per decision, each delivered (the service's row) and received,
    signed and decrypting to the event, by the receiver; nothing else received."""
    ids = [f.request["id"] for f in flows]
    with read_session(engine) as session:
        decided = list(
            session.exec(select(Decision.id).join(Credential).where(col(Credential.request_id).in_(ids)))
        )

    def events() -> list[WebhookEvent]:
        return _rows(engine, WebhookEvent, WebhookEvent.request_id, ids)

    await wait_for(
        lambda: len(events()) == len(decided) and {e.state for e in events()} == {"delivered"}, DEADLINE
    )
    stored = {e.id: e for e in events()}
    assert sorted(e.fact_key for e in stored.values()) == sorted(f"credential:{d}" for d in decided)
    with receiver.lock:
        got = list(receiver.deliveries)
    assert {d.webhook_id for d in got} == set(stored)
    assert all(d.signature_ok and d.event == stored[d.webhook_id].payload for d in got)


def assert_audit_chains_verify(
    engine: Engine, settings: Settings, cipher: SecretCipher, orgs: list[Credentials]
) -> None:
    """Each organization's chain checks (``mandatum audit verify``'s service function)."""
    ctx = Context(settings, engine, cipher)
    for org in orgs:
        [check] = audit.verify_chains(ctx, Actor.shell_operator("tests"), org.organization_id)
        assert check.broken is None, str(check.broken)
        assert check.records > 0


def assert_each_vp_allowed_once(engine: Engine, settings: Settings, flows: list[Flow]) -> None:
    """Of a VP's two verifications (at once, through different APIs while both lived), exactly one
    allowed and the other denied ``vp_already_used``, each with a receipt that verifies; in the
    database one allow per VP and the VP used. A verification whose connection dropped (its API
    died) was sent again: its first attempt may have been the one allowed, unseen by the client."""
    presented = [f for f in flows if not f.rejected]
    assert presented and all(f.vp is not None and len(f.verdicts) == 2 for f in presented)
    for flow in presented:
        assert flow.vp is not None
        bodies = [
            checked(answer, engine, settings, None if answer.status_code == 200 else "vp_already_used")
            for answer, _ in flow.verdicts
        ]
        allowed = sum(b["decision"] == "allow" for b in bodies)
        cut = any(was_cut for _, was_cut in flow.verdicts)
        assert allowed == 1 or (cut and allowed == 0), (flow.index, bodies)
        rows = _rows(engine, Verification, Verification.presentation_id, [flow.vp["id"]])
        assert Counter(r.decision for r in rows)["allow"] == 1, (flow.index, rows)
        assert {b["receipt"]["id"] for b in bodies} <= {r.id for r in rows}
        with read_session(engine) as session:
            used = session.get(Presentation, flow.vp["id"])
        assert used is not None and used.used_at is not None
