"""Single use under concurrency (CONTRACT 5): of many simultaneous verifications of one VP,
exactly one gets past the single-use step; every other one is denied ``vp_already_used``."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import verification as verifications
from store import verifications as stored_verifications
from store.db import read_session
from store.keys import did_resolver
from store.tables import Presentation, Verification
from tests.support.api_client import SignedClient
from tests.support.presentations import GOOD, checked, new_vp, verify
from trust.did import web_service_did
from trust.receipts import verify_receipt

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]
CALLS = 50
# threads of the store-level race, each holding a connection at once: within the engine's pool
# (20), so that on PostgreSQL the race never opens more than that and another suite sharing the
# server's 100 connections cannot make it fail with "too many clients"
THREADS = 16


def recorded(engine: Engine, presentation_id: str) -> list[Verification]:
    with read_session(engine) as session:
        return list(session.exec(select(Verification).where(Verification.presentation_id == presentation_id)))


async def test_fifty_concurrent_verifications_allow_once(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    _, vp = await new_vp(api, temporal)
    stamp = int(time.time() * 1000)
    # distinct timestamps: each call is a distinct signed request, not a replayed signature
    answers = await asyncio.gather(*(verify(api, vp, GOOD, timestamp=str(stamp - i)) for i in range(CALLS)))
    bodies = [
        checked(a, engine, settings, None if a.status_code == 200 else "vp_already_used") for a in answers
    ]
    assert Counter(b["decision"] for b in bodies) == {"allow": 1, "deny": CALLS - 1}
    [allowed] = [b for b in bodies if b["decision"] == "allow"]
    assert len(allowed["evaluations"]) == 2
    assert all(b["evaluations"] == [] for b in bodies if b["decision"] == "deny")
    rows = recorded(engine, vp["id"])
    assert Counter(r.decision for r in rows) == {"allow": 1, "deny": CALLS - 1}
    assert {r.id for r in rows} == {b["receipt"]["id"] for b in bodies}


async def test_racing_threads_on_the_store_allow_once(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    """The same race without the HTTP layer: threads released together, each with its own
    connection, all reading the VP as unused before any of them writes."""
    _, vp = await new_vp(api, temporal)
    start = threading.Barrier(THREADS)

    def one() -> verifications.Verdict:
        start.wait()
        return verifications.verify(
            engine,
            cipher,
            settings,
            actor=Actor.api_key(api.creds.key_id),
            verifier_org_id=api.creds.organization_id,
            presentation=vp,
            execution_params=GOOD,
        )

    def race() -> list[verifications.Verdict]:
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            return list(pool.map(lambda _: one(), range(THREADS)))

    verdicts = await asyncio.to_thread(race)
    assert Counter((v.decision, v.reason) for v in verdicts) == {
        ("allow", None): 1,
        ("deny", "vp_already_used"): THREADS - 1,
    }
    with read_session(engine) as session:
        row = session.get(Presentation, vp["id"])
    assert row is not None and row.used_by == api.creds.organization_id
    assert Counter(r.decision for r in recorded(engine, vp["id"])) == {"allow": 1, "deny": THREADS - 1}


async def test_a_read_that_saw_the_vp_unused_still_loses_the_write(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The conditional UPDATE decides, not the read: a verification whose read raced ahead of
    another's commit (it saw ``used_at`` empty) is denied ``vp_already_used`` without evaluations."""
    _, vp = await new_vp(api, temporal)
    first_read = stored_verifications.load(engine, vp["id"])
    monkeypatch.setattr(verifications, "load", lambda *_: first_read)

    def run() -> verifications.Verdict:
        return verifications.verify(
            engine,
            cipher,
            settings,
            actor=Actor.api_key(api.creds.key_id),
            verifier_org_id=api.creds.organization_id,
            presentation=vp,
            execution_params=GOOD,
        )

    first, second = run(), run()
    assert (first.decision, first.reason, len(first.evaluations)) == ("allow", None, 2)
    assert (second.decision, second.reason, second.evaluations) == ("deny", "vp_already_used", [])
    assert second.receipt["reason"] == "vp_already_used"
    verify_receipt(
        second.receipt,
        did_resolver(engine, settings),
        issuer_did=web_service_did(settings.public_url),
        evaluations=[],
    )
    assert Counter(r.reason for r in recorded(engine, vp["id"])) == {None: 1, "vp_already_used": 1}
