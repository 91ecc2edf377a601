"""services.mandates, services.presentations, services.verification: issuance by the workflow's
actor, a VP and a verification by the caller's API key, revocation by whoever revokes; each audit
record names its actor, and the refusals are typed. What the dashboard reads: the filters of the
credentials' list, a page of them, a credential's view with only its own VPs' verifications, and a
revocation's reason as typed."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from core.actors import TEMPORAL, Actor
from core.ids import urn
from core.kinds import CredentialStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from services import mandates, presentations, verification
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import audit, guards, verifications
from store.revocation import CredentialFilter
from store.verifications import Pending, record_batch
from tests.conftest import new_org
from tests.support.audit_helpers import chain, issued_mandate, new_request
from tests.support.helpers import Credentials, SignedClient, assert_error_shape

pytestmark = pytest.mark.usefixtures("no_server_errors")
GOOD = {"amount": 100, "payee": "Bob"}
KEEP = timedelta(minutes=6)


def _actors(engine: Engine, org_id: str, kind: str) -> list[str | None]:
    return [r.actor for r in chain(engine, org_id) if r.type == kind]


def test_issuance_is_recorded_as_the_workflows(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    assert _actors(engine, org.organization_id, audit.MANDATE_ISSUED) == ["temporal"]
    again = mandates.issue(engine, cipher, settings, issued.credential_id, actor=TEMPORAL)
    assert (again.mandate_id, again.newly_issued) == (issued.mandate_id, False)
    assert _actors(engine, org.organization_id, audit.MANDATE_ISSUED) == ["temporal"]


def test_a_vp_and_its_verifications_name_the_callers_key(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    agent = Actor.api_key(org.key_id)
    vp = presentations.issue_presentation(
        engine, cipher, settings, actor=agent, caller_org_id=org.organization_id, mandate_id=issued.mandate_id
    ).presentation
    allowed = verification.verify(
        engine,
        cipher,
        settings,
        actor=agent,
        verifier_org_id=org.organization_id,
        presentation=vp,
        execution_params=GOOD,
    )
    replayed = verification.verify(
        engine,
        cipher,
        settings,
        actor=Actor.shell_operator("replayer"),
        verifier_org_id=org.organization_id,
        presentation=vp,
        execution_params=GOOD,
    )
    assert (allowed.decision, replayed.reason) == ("allow", "vp_already_used")
    assert _actors(engine, org.organization_id, audit.VP_ISSUED) == [f"apiKey:{org.key_id}"]
    assert _actors(engine, org.organization_id, audit.VERIFY_ACCEPT) == [f"apiKey:{org.key_id}"]
    assert _actors(engine, org.organization_id, audit.VERIFY_DENY) == ["operator:replayer"]


def test_a_refused_vp_is_recorded_as_the_askers(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    stranger = new_org(engine, cipher, settings)
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    with pytest.raises(presentations.MandateNotFound):
        presentations.issue_presentation(
            engine,
            cipher,
            settings,
            actor=Actor.api_key(stranger.key_id),
            caller_org_id=stranger.organization_id,
            mandate_id=issued.mandate_id,
        )
    assert _actors(engine, stranger.organization_id, audit.VP_ISSUE_DENIED) == [f"apiKey:{stranger.key_id}"]
    assert _actors(engine, org.organization_id, audit.VP_ISSUE_DENIED) == []


async def test_revocation_names_its_actor_and_is_refused_twice(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    done = await mandates.revoke(
        ctx, Actor.shell_operator("dora"), org.organization_id, issued.mandate_id, "lost"
    )
    assert done.credential_id == issued.mandate_id and done.receipt["reason"] == "lost"
    assert _actors(engine, org.organization_id, audit.MANDATE_REVOKED) == ["operator:dora"]
    with pytest.raises(Conflict, match="only an ACTIVE mandate can be revoked"):
        await mandates.revoke(ctx, Actor.shell_operator("dora"), org.organization_id, issued.mandate_id, None)
    record = await mandates.credential_detail(ctx, org.organization_id, issued.mandate_id)
    assert record.credential.status == CredentialStatus.REVOKED
    assert len(_actors(engine, org.organization_id, audit.MANDATE_REVOKED)) == 1


async def test_another_organizations_mandate_is_not_found_and_a_bad_reference_invalid(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    stranger = new_org(engine, cipher, settings)
    with pytest.raises(NotFound):
        await mandates.revoke(
            ctx, Actor.api_key(stranger.key_id), stranger.organization_id, issued.mandate_id, None
        )
    with pytest.raises(NotFound):
        await mandates.credential_detail(ctx, stranger.organization_id, issued.mandate_id)
    with pytest.raises(Invalid, match="mandateId must be a mandate URN"):
        await mandates.revoke(
            ctx, Actor.api_key(org.key_id), org.organization_id, "urn:via:credential:x", None
        )
    assert (
        await mandates.credential_detail(ctx, org.organization_id, issued.mandate_id)
    ).credential.status == (CredentialStatus.ACTIVE)


@pytest.mark.usefixtures("worker")
async def test_revoking_through_the_api_names_the_key(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, api: SignedClient
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    answer = await api.post(f"/credential/{issued.mandate_id}/revoke", {"reason": "done"})
    assert answer.status_code == 200, answer.text
    assert _actors(engine, org.organization_id, audit.MANDATE_REVOKED) == [f"apiKey:{org.key_id}"]
    body = assert_error_shape(await api.post(f"/credential/{issued.mandate_id}/revoke", {"reason": "x"}), 409)
    assert "only an ACTIVE mandate can be revoked" in body["message"]


def test_the_lists_filters_take_only_what_a_filter_can_hold() -> None:
    request_id = "0123456789abcdef01234567"
    assert mandates.credential_filter(None, None, None) == CredentialFilter(page_size=mandates.PAGE_SIZE)
    assert mandates.credential_filter("", " ", "") == CredentialFilter(page_size=mandates.PAGE_SIZE)
    assert mandates.credential_filter("REVOKED", f" {request_id}\t", "3") == CredentialFilter(
        "REVOKED", request_id, 2, mandates.PAGE_SIZE
    )
    assert mandates.credential_filter(None, None, "100000").page_index == 99_999
    for status, request, page in (
        ("revoked", None, None),
        ("ACTIVE ", None, None),
        (None, request_id.upper(), None),
        (None, request_id[:-1], None),
        (None, None, "0"),
        (None, None, "+1"),
        (None, None, "1.0"),
        (None, None, "\u0663"),  # int() reads an Arabic-Indic digit; a page number is ASCII
        (None, None, "100001"),
    ):
        with pytest.raises(Invalid) as refused:
            mandates.credential_filter(status, request, page)
        assert isinstance(refused.value.message, list) and len(refused.value.message) == 1
    with pytest.raises(Invalid) as every:
        mandates.credential_filter("x", "y", "z")
    assert [m.split(" ", 1)[0] for m in every.value.message] == ["status", "requestId", "page"]


def test_a_revocations_reason_is_one_line_of_at_most_500_characters() -> None:
    assert mandates.revocation_reason("  lost the card ") == "lost the card"
    assert mandates.revocation_reason("é" * 500) == "é" * 500
    assert mandates.revocation_reason("perdu\u00a0: fermé") == "perdu\u00a0: fermé"  # a no-break space
    for bad, why in (
        ("", "Give a reason"),
        (" \t ", "Give a reason"),
        ("x" * 501, "501 characters long"),
        ("a\nb", "one line of printable characters: it holds U\\+000A"),
        ("a\tb\x00", "it holds U\\+0009, U\\+0000"),
        ("a\u202eb", "it holds U\\+202E"),  # a right-to-left override would disguise what follows it
    ):
        with pytest.raises(Invalid, match=why):
            mandates.revocation_reason(bad)


@pytest.mark.parametrize("reason", ["lost\n12:00 REVOKED by root", "lost\u202e", "lost\x85"])
async def test_the_revocation_itself_refuses_a_reason_that_is_not_one_line(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, reason: str
) -> None:
    """Every surface that revokes (the API, the dashboard, the operators, the command line) comes
    through ``mandates.revoke``: such a reason is never signed into a receipt, whoever sends it."""
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    records = len(chain(engine, org.organization_id))
    with pytest.raises(Invalid, match=r"^reason must be one line without control"):
        await mandates.revoke(
            ctx, Actor.shell_operator("tests"), org.organization_id, issued.mandate_id, reason
        )
    record = await mandates.credential_detail(ctx, org.organization_id, issued.credential_id)
    assert (
        record.credential.status == CredentialStatus.ACTIVE and record.credential.revocation_receipt is None
    )
    assert len(chain(engine, org.organization_id)) == records


async def test_a_page_of_credentials_is_the_organizations_newest_first(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    older = issued_mandate(engine, cipher, settings, org.organization_id)
    newer = new_request(engine, org.organization_id, ("bea@example.com", "carl@example.com"))
    issued_mandate(engine, cipher, settings, new_org(engine, cipher, settings).organization_id)
    listed, total = await mandates.find(ctx, org.organization_id, CredentialFilter())
    assert total == 2 and [c.credential.id for c in listed] == [newer.credentials[0].id, older.credential_id]
    assert [s.contact for s in listed[0].subjects] == ["bea@example.com", "carl@example.com"]
    one, total = await mandates.find(ctx, org.organization_id, CredentialFilter(page_index=1, page_size=1))
    assert total == 2 and [c.credential.id for c in one] == [older.credential_id]
    active, total = await mandates.find(ctx, org.organization_id, CredentialFilter(status="ACTIVE"))
    assert total == 1 and [c.credential.id for c in active] == [older.credential_id]
    of_request = CredentialFilter(request_id=newer.request.id)
    assert [c.credential.id for c in (await mandates.find(ctx, org.organization_id, of_request))[0]] == [
        newer.credentials[0].id
    ]


async def test_a_credentials_view_has_the_verifications_of_its_own_presentations_only(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    stranger = new_org(engine, cipher, settings)
    agent = Actor.api_key(org.key_id)

    def vp() -> dict[str, object]:
        return presentations.issue_presentation(
            engine,
            cipher,
            settings,
            actor=agent,
            caller_org_id=org.organization_id,
            mandate_id=issued.mandate_id,
        ).presentation

    def verified(presentation: dict[str, object], verifier: str) -> verification.Verdict:
        return verification.verify(
            engine,
            cipher,
            settings,
            actor=Actor.shell_operator("tests"),
            verifier_org_id=verifier,
            presentation=presentation,
            execution_params=GOOD,
        )

    allowed = verified(vp(), org.organization_id)
    tried = verified(vp(), stranger.organization_id)  # our VP, shown to a verifier it is not for
    forged = {**vp(), "id": urn("presentation")}  # a VP we never issued, claiming the mandate
    made_up = verified(forged, stranger.organization_id)
    assert (allowed.decision, tried.reason, made_up.reason) == (
        "allow",
        "verifier_not_authorized",
        "vp_signature_invalid",
    )
    assert made_up.credential_id == issued.mandate_id  # it names the mandate all the same

    view = await mandates.credential_view(ctx, org.organization_id, issued.mandate_id)
    assert view.record.credential.id == issued.credential_id
    assert [s.id for s in view.subjects] == [issued.subject_id]
    assert [v.id for v in view.verifications] == [tried.receipt["id"], allowed.receipt["id"]]
    assert view.verification_count == 2 and view.verifications[1].receipt == allowed.receipt
    newest = await mandates.credential_view(ctx, org.organization_id, issued.credential_id, 1)
    assert [v.id for v in newest.verifications] == [tried.receipt["id"]] and newest.verification_count == 2
    with pytest.raises(NotFound):
        await mandates.credential_view(ctx, stranger.organization_id, issued.mandate_id)
    pending = new_request(engine, org.organization_id)
    unsigned = await mandates.credential_view(ctx, org.organization_id, pending.credentials[0].id)
    assert (unsigned.verifications, unsigned.verification_count) == ([], 0)


async def test_concurrent_verifications_are_written_in_one_batch_each_as_alone(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    """``verify_grouped`` calls of one loop turn are written together (``Context.verifications``: on
    SQLite in one transaction, on PostgreSQL one transaction each, which a replay racing its
    original in another batch once deadlocked): two verifications of one VP are decided as two
    in a row (one allow, one ``vp_already_used``), a replayed signature is refused and writes
    nothing while the others of its batch are written, and the chain stays valid."""
    from datetime import timedelta

    from services.errors import Replayed
    from store import guards

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


def _vps(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, n: int
) -> list[dict[str, Any]]:
    agent = Actor.api_key(org.key_id)
    mandate_id = issued_mandate(engine, cipher, settings, org.organization_id).mandate_id
    return [
        presentations.issue_presentation(
            engine, cipher, settings, actor=agent, caller_org_id=org.organization_id, mandate_id=mandate_id
        ).presentation
        for _ in range(n)
    ]


def _decided(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, vps: list[dict[str, Any]]
) -> list[Pending]:
    return [
        verification.decide(
            engine,
            cipher,
            settings,
            actor=Actor.api_key(org.key_id),
            verifier_org_id=org.organization_id,
            presentation=vp,
            execution_params=GOOD,
        )
        for vp in vps
    ]


def test_a_failed_verification_of_a_batch_fails_alone(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    """``record_batch``: when the batch's transaction fails, each is written alone; the one whose
    own transaction fails carries its error and wrote nothing, the ones before and after it are
    written."""
    pending = _decided(engine, cipher, settings, org, _vps(engine, cipher, settings, org, 3))
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
    [vp] = _vps(engine, cipher, settings, org, 1)
    failing, second = _decided(engine, cipher, settings, org, [vp, vp])
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
    pending = _decided(engine, cipher, settings, org, _vps(engine, cipher, settings, org, 2))
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
    pending = _decided(engine, cipher, settings, org, _vps(engine, cipher, settings, org, 2))
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
        mine, theirs = _vps(engine, cipher, settings, org, 2), _vps(engine, cipher, settings, other, 2)
        a = _decided(engine, cipher, settings, org, mine) + _decided(engine, cipher, settings, other, theirs)
        b = _decided(engine, cipher, settings, org, mine) + _decided(engine, cipher, settings, other, theirs)
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
        mine, theirs = _vps(engine, cipher, settings, org, 2), _vps(engine, cipher, settings, other, 2)
        a = _decided(engine, cipher, settings, org, mine) + _decided(engine, cipher, settings, other, theirs)
        b = _decided(engine, cipher, settings, org, mine) + _decided(engine, cipher, settings, other, theirs)
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
    mine, theirs = _vps(engine, cipher, settings, org, 10), _vps(engine, cipher, settings, other, 10)
    for i in range(0, 10, 2):
        a = _decided(engine, cipher, settings, org, mine[i : i + 1])
        a += _decided(engine, cipher, settings, other, theirs[i : i + 1])
        b = _decided(engine, cipher, settings, other, theirs[i + 1 : i + 2])
        b += _decided(engine, cipher, settings, org, mine[i + 1 : i + 2])
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
    fine, replay = _decided(engine, cipher, settings, org, _vps(engine, cipher, settings, org, 2))
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
    vps = _vps(engine, cipher, settings, org, 2)
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
    vps = _vps(engine, cipher, settings, org, 3)

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
