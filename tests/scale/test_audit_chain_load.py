"""One organization's audit chain under full verification load from two API processes (issue 17,
item 2): every verification appends a signed, hash-chained record in its own transaction, and the
two processes write to the one head of that organization at once, on PostgreSQL.

Both APIs are real processes (``python -m api``, as docker-compose.yml runs them) on one throw-away
PostgreSQL database. 32 clients send 480 signed verifications, alternating between the APIs; each
presents a VP this service never issued, so each is denied (403) with its receipt and its record (the
same write as an allow: the replay guard, the verification row, the audit append). Then the chain
holds exactly one record per verification, numbered without a gap, and ``mandatum audit verify``'s
check proves nothing was changed, removed or reordered.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from itertools import pairwise

import pytest
import pytest_asyncio
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit
from tests.conftest import new_org
from tests.scale.invariants import assert_audit_chains_verify
from tests.support.audit import chain
from tests.support.scaled_stack import Router, ScaledStack

pytestmark = pytest.mark.e2e

VERIFICATIONS, CLIENTS = 480, 32


@pytest_asyncio.fixture
async def two_apis(stack_settings: Settings, pg_engine: Engine) -> AsyncIterator[ScaledStack]:
    stack = ScaledStack(stack_settings)
    try:
        await asyncio.gather(stack.start_api("api-a"), stack.start_api("api-b"))
        yield stack
    finally:
        await stack.stop()


def unissued_vp() -> dict[str, object]:
    return {
        "@context": ["https://www.w3.org/ns/credentials/v2"],
        "type": ["VerifiablePresentation"],
        "id": f"urn:uuid:{uuid.uuid4()}",
    }


async def test_two_api_processes_at_full_load_keep_one_valid_chain(
    two_apis: ScaledStack, pg_engine: Engine, stack_settings: Settings
) -> None:
    cipher = SecretCipher(stack_settings.master_key_bytes())
    org = new_org(pg_engine, cipher, stack_settings)
    before = len(chain(pg_engine, org.organization_id))
    router = Router([two_apis.api_url("api-a"), two_apis.api_url("api-b")])
    queue: asyncio.Queue[int] = asyncio.Queue()
    for k in range(VERIFICATIONS):
        queue.put_nowait(k)
    answers: dict[int, tuple[int, str]] = {}

    async def client() -> None:
        while not queue.empty():
            k = queue.get_nowait()
            body = {"presentation": unissued_vp(), "executionParams": {"amount": k}}
            got = await router.send(k, router.signed(org, "POST", "/credential/verify", body))
            answers[k] = (got.status_code, got.json().get("decision", got.text))

    try:
        await asyncio.gather(*(client() for _ in range(CLIENTS)))
    finally:
        await router.close()

    assert Counter(answers.values()) == {(403, "deny"): VERIFICATIONS}  # a deny is 403 with its receipt
    assert all(p.child.proc.returncode is None for p in two_apis.processes.values())  # both lived
    records = chain(pg_engine, org.organization_id)
    mine = [r for r in records[before:] if r.type == audit.VERIFY_DENY]
    assert len(mine) == len(records) - before == VERIFICATIONS  # one record each, nothing else
    assert [r.seq for r in records] == list(range(1, len(records) + 1))  # no gap, no repeat
    assert len({r.hash for r in records}) == len(records)
    assert all(r.prev_hash == p.hash for p, r in pairwise(records))
    assert_audit_chains_verify(pg_engine, stack_settings, cipher, [org])
