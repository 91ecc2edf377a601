"""services.verification: concurrent verifications (``verify_grouped``) written in one batch, each
decided as if alone; on PostgreSQL decided on the event loop once the caches are warm, and on a
thread when the loop's connection fails. (The batch's own write: tests/store/test_verifications.py.)"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import presentations, verification
from services.context import Context
from store import audit, guards
from tests.support.api_client import Credentials
from tests.support.audit import chain, issued_mandate
from tests.support.verifications import GOOD, new_vps

pytestmark = pytest.mark.usefixtures("no_server_errors")


async def test_concurrent_verifications_are_written_in_one_batch_each_as_alone(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    """``verify_grouped`` calls of one loop turn are written together (``Context.verifications``: on
    SQLite in one transaction, on PostgreSQL one transaction each, which a replay racing its
    original in another batch once deadlocked): two verifications of one VP are decided as two
    in a row (one allow, one ``vp_already_used``), a replayed signature is refused and writes
    nothing while the others of its batch are written, and the chain stays valid."""

    from services.errors import Replayed

    ctx = Context(settings, engine, cipher)
    batches: list[int] = []
    write = ctx.verifications._write_batch

    def counted(items: list[Any]) -> None:
        batches.append(len(items))
        write(items)

    ctx.verifications._write_batch = counted
    agent = Actor.api_key(org.key_id)
    vps = [
        presentations.issue_presentation(
            engine, cipher, settings, actor=agent, caller_org_id=org.organization_id, mandate_id=m
        ).presentation
        for m in [issued_mandate(engine, cipher, settings, org.organization_id).mandate_id] * 3
    ]
    use = guards.SignatureUse(org.key_id, "ab" * 32, True, timedelta(minutes=6))
    calls = [
        verification.verify_grouped(
            ctx,
            actor=agent,
            verifier_org_id=org.organization_id,
            presentation=vp,
            execution_params=GOOD,
            signature=signature,
        )
        for vp, signature in [(vps[0], None), (vps[0], None), (vps[1], use), (vps[2], use)]
    ]
    first, second, signed, replayed = await asyncio.gather(*calls, return_exceptions=True)
    assert sum(batches) == 4
    if engine.dialect.name == "sqlite":  # decided inline, all in one loop turn: one batch
        assert batches == [4]
    # which of two racing calls is decided first is the order they reach the batch (on PostgreSQL,
    # the order their checks end on the threads): one of each pair wins
    assert isinstance(first, verification.Verdict) and isinstance(second, verification.Verdict)
    assert sorted([first.reason or "allow", second.reason or "allow"]) == ["allow", "vp_already_used"]
    assert {first.receipt.get("reason"), second.receipt.get("reason")} == {None, "vp_already_used"}
    assert sorted(type(r).__name__ for r in (signed, replayed)) == [Replayed.__name__, "Verdict"]
    won = vps[1] if isinstance(signed, verification.Verdict) else vps[2]
    assert next(r for r in (signed, replayed) if isinstance(r, verification.Verdict)).decision == "allow"
    records = chain(engine, org.organization_id)
    verified = [
        r.data["presentation"]["id"] for r in records if r.type in (audit.VERIFY_ACCEPT, audit.VERIFY_DENY)
    ]
    assert sorted(verified) == sorted([vps[0]["id"], vps[0]["id"], won["id"]])  # nothing of the replay
    from services import audit as audit_service

    [checked] = audit_service.verify_chains(ctx, Actor.shell_operator("test"), org.organization_id)
    assert checked.broken is None and checked.records == len(records)


def _forget_caches(engine: Engine) -> None:
    from store import keys

    keys.forget_keys()
    keys._forget_documents(engine)
    verification._specs.clear()


async def test_on_postgresql_a_verification_is_decided_on_the_loop_once_the_caches_are_warm(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``verify_grouped`` on PostgreSQL reads the presentation on the event loop and decides from
    the caches there: with cold caches the checks go to a thread (a cache would read the
    database: ``WouldBlock``), once warm no thread but the batch's write is used; both allowed,
    with the same checks."""
    if engine.dialect.name != "postgresql":
        pytest.skip("on SQLite every check runs on the loop (store.db.run_db)")
    from store import db

    ctx = Context(settings, engine, cipher)
    hops: list[str] = []
    real_run_db = db.run_db

    async def counted(engine: Engine, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(fn, "func", fn).__name__)
        return await real_run_db(engine, fn, *args, **kwargs)

    monkeypatch.setattr(verification, "run_db", counted)
    vps = new_vps(engine, cipher, settings, org, 2)
    agent = Actor.api_key(org.key_id)
    _forget_caches(engine)
    with pytest.raises(db.WouldBlock), db.on_the_loop():  # what the loop may not do
        verification.decide(
            engine, cipher, settings, actor=agent, verifier_org_id=org.organization_id, presentation=vps[0]
        )
    verdicts = []
    for vp in vps:
        verdicts.append(
            await verification.verify_grouped(
                ctx, actor=agent, verifier_org_id=org.organization_id, presentation=vp, execution_params=GOOD
            )
        )
    assert [v.decision for v in verdicts] == ["allow", "allow"]
    assert [len(v.evaluations) for v in verdicts] == [2, 2]
    # the first, with cold caches, its checks and its signing key; the second on the loop
    assert hops == ["assess", "conclude"]


async def test_a_failed_read_on_the_loop_falls_back_to_the_engine(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    """The loop's connection killed by the server: that verification is read and decided on a
    thread instead, and the next read opens a fresh connection."""
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL only")
    from sqlalchemy import text

    ctx = Context(settings, engine, cipher)
    agent = Actor.api_key(org.key_id)
    vps = new_vps(engine, cipher, settings, org, 3)

    async def verify(vp: dict[str, Any]) -> str:
        verdict = await verification.verify_grouped(
            ctx, actor=agent, verifier_org_id=org.organization_id, presentation=vp, execution_params=GOOD
        )
        return verdict.decision

    assert await verify(vps[0]) == "allow"
    assert ctx.loop_reads is not None and len(ctx.loop_reads._idle) == 1
    [conn] = ctx.loop_reads._idle
    with engine.connect() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": conn.info.backend_pid})
    assert await verify(vps[1]) == "allow"  # through the engine
    assert await verify(vps[2]) == "allow"  # and a new connection on the loop
    assert len(ctx.loop_reads._idle) == 1 and ctx.loop_reads._idle[0] is not conn
