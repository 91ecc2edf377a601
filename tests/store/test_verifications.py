"""store.verifications, the batch that writes verifications (``record_batch``): a failing one fails
alone, a batch whose commit landed without its answer keeps its answers, one that did not commit is
written again; batches written at once in opposite orders never deadlock; a replay in a batch
writes nothing. The verifications are decided through ``services.verification`` first
(tests/support/verifications.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from services import verification
from store import audit, guards, verifications
from store.verifications import Pending, record_batch
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.verifications import KEEP, decided, new_vps

pytestmark = pytest.mark.usefixtures("no_server_errors")


def test_a_failed_verification_of_a_batch_fails_alone(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    """``record_batch``: when the batch's transaction fails, each is written alone; the one whose
    own transaction fails carries its error and wrote nothing, the ones before and after it are
    written."""
    pending = decided(engine, cipher, settings, org, new_vps(engine, cipher, settings, org, 3))
    pending[1].execution_params = {"amount": object()}  # its row cannot be written, alone or not
    pending[1].draft()
    record_batch(engine, pending)
    assert pending[0].failed is None and pending[2].failed is None
    assert isinstance(pending[1].failed, Exception)
    with pytest.raises(type(pending[1].failed)):
        verification.verdict(pending[1])
    assert [verification.verdict(p).decision for p in (pending[0], pending[2])] == ["allow", "allow"]
    verified = [
        r.data["receipt"]["id"] for r in chain(engine, org.organization_id) if r.type == audit.VERIFY_ACCEPT
    ]
    assert verified == [pending[0].receipt["id"], pending[2].receipt["id"]]


def test_written_again_alone_a_verification_is_decided_afresh(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    """Two verifications of one VP in a batch that fails: the first (which fails on its own too)
    had won the VP and the second was denied ``vp_already_used``; nothing of the batch was
    written, so written alone the second wins the VP and is allowed, with the receipt signed when
    it was decided."""
    [vp] = new_vps(engine, cipher, settings, org, 1)
    failing, second = decided(engine, cipher, settings, org, [vp, vp])
    failing.execution_params = {"amount": object()}
    failing.draft()
    decided_receipt = second.receipt
    record_batch(engine, [failing, second])
    assert isinstance(failing.failed, Exception) and second.failed is None
    allowed = verification.verdict(second)
    assert (allowed.decision, allowed.reason, allowed.receipt) == ("allow", None, decided_receipt)
    assert allowed.evaluations and all(e["result"] == "pass" for e in allowed.evaluations)
    verifications = [
        r for r in chain(engine, org.organization_id) if r.type in (audit.VERIFY_ACCEPT, audit.VERIFY_DENY)
    ]
    assert [(r.type, r.data["receipt"]) for r in verifications] == [(audit.VERIFY_ACCEPT, decided_receipt)]


def test_a_batch_whose_commit_landed_without_its_answer_keeps_its_answers(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The batch's transaction committed, but the connection was lost before the COMMIT's answer
    came back: its rows are there, so each verification answers what was written (allowed, its
    receipt), not what writing it again would say (the VP used, the signature a replay)."""
    pending = decided(engine, cipher, settings, org, new_vps(engine, cipher, settings, org, 2))
    for n, p in enumerate(pending):
        p.signature = guards.SignatureUse(org.key_id, str(n) * 64, True, KEEP)
    receipts = [p.receipt for p in pending]
    real = verifications._write_together

    def committed_then_lost(engine: Engine, batch: list[Pending], *, step_by_step: bool = False) -> None:
        real(engine, batch, step_by_step=step_by_step)
        raise OSError("connection lost with the COMMIT's answer")

    monkeypatch.setattr(verifications, "_write_together", committed_then_lost)
    record_batch(engine, pending)
    assert [(p.failed, p.replayed) for p in pending] == [(None, False), (None, False)]
    assert [verification.verdict(p).decision for p in pending] == ["allow", "allow"]
    assert [p.receipt for p in pending] == receipts
    written = [
        r for r in chain(engine, org.organization_id) if r.type in (audit.VERIFY_ACCEPT, audit.VERIFY_DENY)
    ]
    assert [(r.type, r.data["receipt"]["id"]) for r in written] == [
        (audit.VERIFY_ACCEPT, receipt["id"]) for receipt in receipts
    ]


def test_a_batch_that_did_not_commit_is_written_again(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same lost connection before anything committed: nothing is there, so the batch is
    written again (one by one) and both are allowed once."""
    pending = decided(engine, cipher, settings, org, new_vps(engine, cipher, settings, org, 2))
    real, calls = verifications._write_together, []

    def lost_once(engine: Engine, batch: list[Pending], *, step_by_step: bool = False) -> None:
        calls.append(len(batch))
        if len(calls) == 1:
            raise OSError("connection lost before the COMMIT")
        real(engine, batch, step_by_step=step_by_step)

    monkeypatch.setattr(verifications, "_write_together", lost_once)
    record_batch(engine, pending)
    assert calls == [2, 1, 1]
    assert [verification.verdict(p).decision for p in pending] == ["allow", "allow"]
    written = [r for r in chain(engine, org.organization_id) if r.type == audit.VERIFY_ACCEPT]
    assert [r.data["receipt"]["id"] for r in written] == [p.receipt["id"] for p in pending]


def _at_once(engine: Engine, batches: list[list[Pending]], step_by_step: bool) -> dict[int, BaseException]:
    """Each batch's own write (``_write_together``), all started together from threads; what each
    raised."""
    from store.verifications import _write_together

    errors: dict[int, BaseException] = {}
    start = threading.Barrier(len(batches))

    def write(n: int, batch: list[Pending]) -> None:
        start.wait()
        try:
            _write_together(engine, batch, step_by_step=step_by_step)
        except BaseException as exc:  # reported to the test
            errors[n] = exc

    threads = [threading.Thread(target=write, args=(n, batch)) for n, batch in enumerate(batches)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return errors


@pytest.mark.parametrize("step_by_step", [False, True], ids=["pipelined", "step-by-step"])
def test_batches_written_at_once_in_opposite_orders_do_not_deadlock(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, step_by_step: bool
) -> None:
    """Two batches holding verifications of the same VPs with the same signatures, for two
    organizations' chains, in opposite orders, written at the same time from two threads: on
    PostgreSQL each transaction takes its row locks in one order (signatures, presentations,
    heads), so neither waits on the other in a cycle (a deadlock fails one of them, which
    ``record_batch`` would hide by writing each alone: the batch's own write is what is checked
    here). One batch writes all four; the other finds every signature used and writes nothing
    (sent without waiting for the signatures, it stops at the replay, to be written step by step)."""
    from store.verifications import _ReplayInBatch

    other = new_org(engine, cipher, settings)
    for attempt in range(3):
        mine, theirs = new_vps(engine, cipher, settings, org, 2), new_vps(engine, cipher, settings, other, 2)
        a = decided(engine, cipher, settings, org, mine) + decided(engine, cipher, settings, other, theirs)
        b = decided(engine, cipher, settings, org, mine) + decided(engine, cipher, settings, other, theirs)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):  # the same signature in both batches
            key_id = org.key_id if i < 2 else other.key_id
            x.signature = y.signature = guards.SignatureUse(
                key_id, f"{attempt}{i}".ljust(64, "c"), True, KEEP
            )
        errors = _at_once(engine, [a, list(reversed(b))], step_by_step)
        refused = [n for n, batch in enumerate((a, b)) if n in errors or all(p.replayed for p in batch)]
        assert len(refused) == 1 and all(isinstance(e, _ReplayInBatch) for e in errors.values()), errors
        written = b if refused == [0] else a
        assert not any(p.replayed for p in written)
        assert [verification.verdict(p).decision for p in written] == ["allow"] * 4
    for org_id in (org.organization_id, other.organization_id):
        records = chain(engine, org_id)
        assert [r.seq for r in records] == list(range(1, len(records) + 1))
        assert len([r for r in records if r.type == audit.VERIFY_ACCEPT]) == 6


@pytest.mark.parametrize("step_by_step", [False, True], ids=["pipelined", "step-by-step"])
def test_batches_of_the_same_vps_in_opposite_orders_do_not_deadlock(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, step_by_step: bool
) -> None:
    """Two batches verifying the same VPs of two organizations, in opposite orders and without
    signatures (nothing else orders them), written at the same time: both take the presentations'
    rows, then the chains' heads, each in sorted order, so both commit. Each VP is used up once:
    its first verification allowed, the other denied ``vp_already_used``; both chains stay whole."""
    other = new_org(engine, cipher, settings)
    for _ in range(5):  # a wrong order deadlocks in most attempts, not all
        mine, theirs = new_vps(engine, cipher, settings, org, 2), new_vps(engine, cipher, settings, other, 2)
        a = decided(engine, cipher, settings, org, mine) + decided(engine, cipher, settings, other, theirs)
        b = decided(engine, cipher, settings, org, mine) + decided(engine, cipher, settings, other, theirs)
        b.reverse()  # the other organization first, each one's VPs in the other order
        assert _at_once(engine, [a, b], step_by_step) == {}
        decisions: dict[str, list[str]] = {}
        for p in a + b:
            decisions.setdefault(str(p.out.presentation_id), []).append(
                verification.verdict(p).reason or "allow"
            )
        assert sorted(map(sorted, decisions.values())) == [["allow", "vp_already_used"]] * 4
    for org_id in (org.organization_id, other.organization_id):
        records = chain(engine, org_id)
        assert [r.seq for r in records] == list(range(1, len(records) + 1))
        assert len([r for r in records if r.type in (audit.VERIFY_ACCEPT, audit.VERIFY_DENY)]) == 20


@pytest.mark.parametrize("step_by_step", [False, True], ids=["pipelined", "step-by-step"])
def test_batches_for_two_chains_in_opposite_orders_do_not_deadlock(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, step_by_step: bool
) -> None:
    """Two batches of different VPs, each appending to the same two organizations' chains in the
    opposite order, written at the same time: both lock the heads in sorted order and commit;
    every verification is allowed and both chains stay whole."""
    other = new_org(engine, cipher, settings)
    mine, theirs = new_vps(engine, cipher, settings, org, 10), new_vps(engine, cipher, settings, other, 10)
    for i in range(0, 10, 2):
        a = decided(engine, cipher, settings, org, mine[i : i + 1])
        a += decided(engine, cipher, settings, other, theirs[i : i + 1])
        b = decided(engine, cipher, settings, other, theirs[i + 1 : i + 2])
        b += decided(engine, cipher, settings, org, mine[i + 1 : i + 2])
        assert _at_once(engine, [a, b], step_by_step) == {}
        assert [verification.verdict(p).decision for p in a + b] == ["allow"] * 4
    for org_id in (org.organization_id, other.organization_id):
        records = chain(engine, org_id)
        assert [r.seq for r in records] == list(range(1, len(records) + 1))
        assert len([r for r in records if r.type == audit.VERIFY_ACCEPT]) == 10


def test_a_replay_in_a_batch_writes_nothing_and_leaves_its_vp_unused(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    """A batch whose second verification carries a signature already used: on PostgreSQL its VP's
    single-use UPDATE was sent before the signature's answer came back, so the batch is rolled back
    and written step by step. Either way the replay writes nothing (its VP stays usable) and the
    other is written."""
    from store.db import read_session
    from store.tables import Presentation

    def used_at(p: Pending) -> Any:
        with read_session(engine) as session:
            return session.get(Presentation, p.out.presentation_id).used_at  # type: ignore[union-attr]

    used = guards.SignatureUse(org.key_id, "d" * 64, True, KEEP)
    assert guards.remember_signature(engine, used)
    fine, replay = decided(engine, cipher, settings, org, new_vps(engine, cipher, settings, org, 2))
    replay.signature = used
    fine.signature = guards.SignatureUse(org.key_id, "e" * 64, True, KEEP)
    record_batch(engine, [fine, replay])
    assert (fine.replayed, replay.replayed, fine.failed, replay.failed) == (False, True, None, None)
    assert verification.verdict(fine).decision == "allow"
    assert used_at(replay) is None and used_at(fine) is not None
    receipts = [
        r.data["receipt"]["id"] for r in chain(engine, org.organization_id) if r.type == audit.VERIFY_ACCEPT
    ]
    assert receipts == [fine.receipt["id"]]
