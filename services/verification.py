"""The decision of POST /credential/verify (CONTRACT 5): ordered checks, single use, a receipt.

``verify`` is one read (the presentation row joined with its credential), the checks (pure, on
the signed VP and that row), and one short write: the request's signature against replays when
the middleware left it to this write, the conditional UPDATE that uses the VP up, and the
``verification`` row with its signed receipt and its audit record (naming the verifier's actor).
The API's ``verify_grouped`` writes the verifications of one event-loop turn together
(``Context.verifications``, ``core.group_commit``) in one transaction, each as it would be written
alone and in order, its rows locked in one order so that concurrent batches never deadlock; when
that transaction fails, each is written alone and only the one that fails again fails
(``store.verifications.record_batch``). Nothing here calls Temporal; the reads and the write are
``store.verifications``; what a verification answers (its receipt, the messages, the ``Verdict``)
is ``services.verdicts``.

The checks run in CONTRACT 5's order and stop at the first failure: (1) the VP's structure and
proof, by its holder with the challenge we put in it (``vp_proof_invalid``,
``vp_signature_invalid``, ``vp_signer_unknown``); (2) the embedded credential's proof
(``credential_signature_invalid``); (3) ``credential_not_found``: the VP id is not one we issued,
or its credential is not that VP's mandate, not issued by us, or pins an unknown action version;
(4) ``not_yet_valid`` / ``expired``: the mandate's window, then the VP's ``expires``; (5)
``credential_revoked`` (a mandate that is not ACTIVE counts as revoked); (6)
``verifier_not_authorized``, then ``vp_domain_mismatch``; (7) ``vp_already_used``; (8)
``execution_params_invalid``: exactly the pinned version's names, each of its type; (9)
``rule_failed``: a rule of the *pinned* version fails or errors, evaluated at ``now``; or
``rule_limit_exceeded``: the rules took more than ``policy.cost.RULE_BUDGET`` steps (issue 30: they
run on the loop only when they cannot take more than ``policy.cost.INLINE_STEPS``, else in an
evaluation process, ``services.rule_pool``); (10) ``limit_exceeded``: a use limit signed into the
mandate (its action's ``limits``, the request's ``maxExecutions``: ``policy.limits``) has no room for
this verification, as its row was read; the write counts it again with the row locked
(``store.limit_use``, docs/limits.md), so a denial there is the same reason. A denied verification
uses nothing; the allowed one that spends an executions bound revokes the mandate (``exhausted``),
and its ``mandate.revoked`` event follows the commit (``services.limit_events``).

A VP expired at the time of the call is still checked for its signatures first: the proof is
verified as of its own expiry, so a tampered expired VP reports the signature, not the expiry.

Single use: every verification that gets past steps 1 and 2 for a VP we issued, made by a
verifier the VP may be shown to (its organization DID in the mandate's ``authorizedDIDs`` and, when
the VP is bound, in its ``proof.domain``), runs ``UPDATE presentation SET used_at ... WHERE id =
:id AND used_at IS NULL`` in the transaction that records it; a verifier the VP may not be shown
to gets its denial, receipt and audit record, and the VP stays usable by its holder (otherwise
anyone who saw a VP in transit could burn it). Exactly one such statement can change the row
(PostgreSQL re-checks the condition after a concurrent writer commits; SQLite writes are serial).
The reason still follows the order (an expired replay reports ``expired``); a verification that
reached step 7 and did not change the row reports ``vp_already_used``, with no evaluations.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Engine

from core.actors import Actor
from core.kinds import CredentialStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from policy import ActionSpec, limits, validate_values
from policy.cost import RULE_BUDGET
from policy.jobs import RulesJob
from policy.rules import RulesRun
from services import limit_events
from services.context import Context
from services.verdicts import MESSAGES as MESSAGES
from services.verdicts import Verdict as Verdict
from services.verdicts import exhaustion_signer, signed_receipt, verdict
from store import actions as action_store
from store import limit_use
from store.db import WouldBlock, database_allowed, on_the_loop, run_db, utcnow
from store.guards import SignatureUse
from store.keys import did_resolver, service_key
from store.presentations import (
    PRESENTATION_URN_RE,
    action_pin,
    authorized_dids,
    bound_verifiers,
    claimed_credential_id,
    matching,
)
from store.verifications import Outcome, Pending, load, load_on_loop, record_batch
from trust import credentials as vc
from trust.did import web_organization_did, web_service_did
from trust.eddsa_jcs import MalformedProof, ProofError, parse_datetime

_specs: dict[str, ActionSpec] = {}
_specs_lock = threading.Lock()


def _pinned_spec(engine: Engine, version_id: Any) -> ActionSpec | None:
    """The parsed spec of a published action version (immutable, so cached for good)."""
    if not isinstance(version_id, str):
        return None
    found = _specs.get(version_id)
    if found is not None:
        return found
    database_allowed()
    version = action_store.get_version(engine, version_id)
    if version is None or version.status != action_store.PUBLISHED:
        return None
    with _specs_lock:
        if len(_specs) >= 4096:
            _specs.clear()
        found = _specs[version_id] = action_store.spec_of(version)
    return found


def _proof(vp: Mapping[str, Any]) -> Mapping[str, Any]:
    proof = vp.get("proof")
    return proof if isinstance(proof, Mapping) else {}


def _verified_credential(
    vp: Mapping[str, Any], engine: Engine, settings: Settings, row: Any, now: datetime
) -> dict[str, Any]:
    """Steps 1 and 2: the VP proof (with the challenge we issued, when we know the VP) and the
    embedded credential's proof. An expired proof is checked as of its expiry, so the expiry is
    reported at step 4, after the signatures."""
    proof = _proof(vp)
    challenge = row.challenge if row is not None else proof.get("challenge")
    if not isinstance(challenge, str) or not challenge:
        raise MalformedProof("the presentation's proof carries no challenge")
    as_of = now
    if isinstance(proof.get("expires"), str):
        try:
            as_of = min(now, parse_datetime(proof["expires"], "expires"))
        except MalformedProof:
            pass  # verify_presentation reports it
    return vc.verify_presentation(vp, did_resolver(engine, settings), challenge=challenge, now=as_of)


def _vp_expired(proof: Mapping[str, Any], row: Any, now: datetime) -> bool:
    signed = proof.get("expires")  # verified with the proof: parseable when present
    expires = min(row.expires_at, parse_datetime(signed)) if isinstance(signed, str) else row.expires_at
    return bool(expires <= now)


def _check(
    engine: Engine,
    settings: Settings,
    vp: Mapping[str, Any],
    execution_params: dict[str, Any] | None,
    verifier_did: str,
    now: datetime,
    loaded: Any = None,
) -> tuple[Outcome, RulesJob | None]:
    """Steps 1 to 8, and the job of step 9 when the pinned version has rules."""
    out = Outcome(
        credential_id=claimed_credential_id(vp), presentation_id=matching(PRESENTATION_URN_RE, vp.get("id"))
    )
    if loaded is not None:  # read already (``verify_grouped``): the row, or _NO_ROW
        row = None if loaded is _NO_ROW else loaded
    else:
        row = load(engine, out.presentation_id) if out.presentation_id else None
    try:
        credential = _verified_credential(vp, engine, settings, row, now)
    except ProofError as exc:
        return out.deny(vc.reason_code(exc), f"{exc} ({exc.code})"), None
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
        return out.deny("vp_proof_invalid", f"not a well-formed presentation ({type(exc).__name__})"), None
    if row is None or credential.get("id") != row.mandate_id:
        return out.deny("credential_not_found"), None
    bound = bound_verifiers(vp)
    authorized = verifier_did in authorized_dids(credential)
    in_domain = bound is None or verifier_did in bound
    out.consume, out.request_id = row.used_at is None and authorized and in_domain, row.request_id
    pin = action_pin(credential)
    spec = _pinned_spec(engine, pin.get("version")) if pin is not None else None
    if credential.get("issuer") != web_service_did(settings.public_url) or (pin is not None and spec is None):
        return out.deny("credential_not_found"), None
    bounds = _bounds(credential)
    if bounds is None:
        return out.deny("credential_not_found"), None
    out.bounds, out.credential_row, out.held_usage = bounds, row.credential_row, row.usage
    reason = vc.validity_error(credential, now) or ("expired" if _vp_expired(_proof(vp), row, now) else None)
    if reason is not None:
        return out.deny(reason), None
    if row.status != CredentialStatus.ACTIVE or row.revoked_at is not None:
        return out.deny("credential_revoked"), None
    if not authorized:
        return out.deny("verifier_not_authorized"), None
    if not in_domain:
        return out.deny("vp_domain_mismatch"), None
    out.at_single_use = True
    if row.used_at is not None:
        return out.deny("vp_already_used"), None
    return _apply_action(out, pin, spec, execution_params, now)


def _apply_action(
    out: Outcome,
    pin: dict[str, Any] | None,
    spec: ActionSpec | None,
    execution_params: dict[str, Any] | None,
    now: datetime,
) -> tuple[Outcome, RulesJob | None]:
    """Step 8, executionParams against the pinned version; and step 9's rules as a job for the
    caller to run (``_apply_run``), inline or in an evaluation process."""
    declared = spec.execution_params if spec is not None else []
    values, problems = validate_values(
        declared, execution_params, where="executionParams", fill_defaults=False
    )
    if problems:
        return out.deny("execution_params_invalid", "; ".join(problems)), None
    out.values = values
    if spec is None or pin is None or not spec.rules:
        return out, None
    job = RulesJob(
        str(pin["version"]),
        spec.rules,
        spec.execution_params,
        spec.user_params,
        values,
        pin.get("userParams") or {},
        now,
        RULE_BUDGET,
        limits.usage_fields(out.bounds, out.held_usage, now) if spec.limits else {},
    )
    return out, job


def _bounds(credential: Mapping[str, Any]) -> list[limits.Bound] | None:
    """The use limits the signed mandate carries (none for most); None when malformed."""
    subject = credential.get("credentialSubject")
    mandate = subject.get("mandate") if isinstance(subject, Mapping) else None
    if not isinstance(mandate, Mapping):
        return []
    if "limits" not in mandate and "maxExecutions" not in mandate:
        return []
    return limits.signed_bounds(mandate)


def _apply_limits(out: Outcome, now: datetime) -> Outcome:
    """Step 10 (issue 31), after the rules: every use limit has room for this verification, as the
    row was read; ``store.limit_use`` counts it again on the locked row when it is written."""
    if out.reason is not None or not out.bounds:
        return out
    uses = limits.assess(out.bounds, out.held_usage, out.values, now)
    if all(u.fits for u in uses):
        out.limits = limit_use.allowed(uses).limits
        return out
    counted = limit_use.denial(uses)
    out.limits = counted.limits
    return out.deny("limit_exceeded", counted.detail)


def _apply_run(out: Outcome, run: RulesRun) -> Outcome:
    """Step 9: the rules' evaluations; a denial when one did not pass, or when they were stopped
    at the budget of one verification (``rule_limit_exceeded``)."""
    out.evaluations = [e.as_json() for e in run.evaluations]
    if run.limit_reached:
        return out.deny("rule_limit_exceeded", f"stopped after {run.steps:,} steps")
    failed = [e.rule for e in run.evaluations if e.result != "pass"]
    if failed:
        return out.deny("rule_failed", f"{', '.join(failed)} did not pass")
    return out


@dataclass(frozen=True)
class Assessed:
    """Steps 1 to 8 done: the outcome so far, and the rules still to run (step 9), if any."""

    out: Outcome
    job: RulesJob | None
    now: datetime


def assess(
    engine: Engine,
    settings: Settings,
    *,
    verifier_org_id: str,
    presentation: Mapping[str, Any],
    execution_params: dict[str, Any] | None,
    now: datetime,
    loaded: Any = None,
) -> Assessed:
    """The checks up to the rules. ``loaded``: the presentation's row read already (``_NO_ROW``
    for none), else it is read here."""
    verifier_did = web_organization_did(settings.public_url, verifier_org_id)
    out, job = _check(engine, settings, presentation, execution_params, verifier_did, now, loaded)
    return Assessed(out, job, now)


def conclude(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    assessed: Assessed,
    run: RulesRun | None,
    *,
    actor: Actor,
    verifier_org_id: str,
    presentation: Mapping[str, Any],
    execution_params: dict[str, Any] | None,
    signature: SignatureUse | None,
) -> Pending:
    """The outcome with the rules' ``run`` (when there were rules) and the likely receipt, signed;
    nothing written yet (``record_batch`` writes it, ``verdict`` answers it)."""
    out, now = assessed.out, assessed.now
    if run is not None:
        _apply_run(out, run)
    _apply_limits(out, now)
    verifier_did = web_organization_did(settings.public_url, verifier_org_id)
    # the key is fetched before the write transaction: never a second connection inside it
    key = service_key(engine, cipher, settings)
    sign = partial(signed_receipt, key=key, settings=settings, verifier_did=verifier_did, now=now)
    # the likely outcome, signed outside the write lock; but an allow under use limits is signed
    # once, in the write, with the counts of its locked row (``Pending._counted``): signed here, it
    # would be signed again whenever another verification of the mandate came first
    counted_in_write = bool(out.bounds) and out.reason is None
    receipt = {} if counted_in_write else sign(out)
    pending = Pending(
        out, receipt, sign, key, verifier_org_id, presentation, execution_params, now, str(actor), signature
    )
    if out.bounds:
        pending.sign_revocation = partial(exhaustion_signer, key, settings)
    if not counted_in_write:
        pending.draft()  # its row and audit record encoded here, not in the write
    return pending


def decide(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    *,
    actor: Actor,
    verifier_org_id: str,
    presentation: Mapping[str, Any],
    execution_params: dict[str, Any] | None = None,
    now: datetime | None = None,
    signature: SignatureUse | None = None,
) -> Pending:
    """``assess`` and ``conclude`` on this thread, the rules (if any) run here within their budget:
    for callers that are not the API's event loop."""
    assessed = assess(
        engine,
        settings,
        verifier_org_id=verifier_org_id,
        presentation=presentation,
        execution_params=execution_params,
        now=now or utcnow(),
    )
    run = assessed.job.run() if assessed.job is not None else None
    return conclude(
        engine,
        cipher,
        settings,
        assessed,
        run,
        actor=actor,
        verifier_org_id=verifier_org_id,
        presentation=presentation,
        execution_params=execution_params,
        signature=signature,
    )


def verify(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    *,
    actor: Actor,
    verifier_org_id: str,
    presentation: Mapping[str, Any],
    execution_params: dict[str, Any] | None = None,
    now: datetime | None = None,
    signature: SignatureUse | None = None,
) -> Verdict:
    """Decide on a VP for the verifying organization (``actor`` is who asks: its API key), record the
    verification with its audit record naming ``actor`` in a transaction of its own, and return it.
    ``signature``, when the signature middleware left it to this call, is recorded against replays
    in the same transaction: a replay is ``Replayed`` (401) and writes nothing."""
    pending = decide(
        engine,
        cipher,
        settings,
        actor=actor,
        verifier_org_id=verifier_org_id,
        presentation=presentation,
        execution_params=execution_params,
        now=now,
        signature=signature,
    )
    record_batch(engine, [pending])
    return verdict(pending)


_NO_ROW = object()  # ``loaded``: read, and there is no such presentation
LARGE_BODY = 64 * 1024  # a presentation we issue is a few KiB, more only with large userParams


async def verify_grouped(
    ctx: Context,
    *,
    actor: Actor,
    verifier_org_id: str,
    presentation: Mapping[str, Any],
    execution_params: dict[str, Any] | None = None,
    signature: SignatureUse | None = None,
    size: int = 0,
) -> Verdict:
    """``verify`` for the API: the checks, the rules, then the write with the concurrent
    verifications of this process (``Context.verifications``). ``size``: the body's bytes.

    The checks run on the event loop: on SQLite as they are (``run_db``); on PostgreSQL with the
    presentation's row read on the loop (``Context.loop_reads``) and the rest from the caches
    (keys, DID documents, action versions), so a verification crosses to a thread only for its
    batch's write. When a cache has to read the database (``WouldBlock``: expired, a key or
    version not seen yet, or a verification method a caller made up), or the read on the loop
    fails, the checks run again on a thread. The rules run on the loop only when they cannot
    take more than ``policy.cost.INLINE_STEPS`` steps; otherwise in an evaluation process, in the
    verifying organization's turn (``Context.rules``). A body over ``LARGE_BODY`` bytes is checked
    and concluded on a thread: canonicalizing a presentation grows with it (about 0.1 ms a KiB,
    more with many numbers), and one of a mebibyte would hold the loop for a tenth of a second."""
    checks = partial(
        assess,
        ctx.engine,
        ctx.settings,
        verifier_org_id=verifier_org_id,
        presentation=presentation,
        execution_params=execution_params,
        now=utcnow(),
    )
    large = size > LARGE_BODY
    assessed = await (asyncio.to_thread(checks) if large else _checked(ctx, checks, presentation))
    job = assessed.job
    run = (
        None if job is None else job.run() if job.runs_inline() else await ctx.rules.run(verifier_org_id, job)
    )
    ending = partial(
        conclude,
        ctx.engine,
        ctx.cipher,
        ctx.settings,
        assessed,
        run,
        actor=actor,
        verifier_org_id=verifier_org_id,
        presentation=presentation,
        execution_params=execution_params,
        signature=signature,
    )
    pending = await (asyncio.to_thread(ending) if large else _on_loop_if_cached(ctx, ending))
    await ctx.verifications.submit(pending)
    _announce_revocation(ctx, pending)
    return verdict(pending)


def _announce_revocation(ctx: Context, pending: Pending) -> None:
    """The ``mandate.revoked`` event of a mandate this verification's use exhausted, made and sent
    after the answer (``services.limit_events``; the worker's pass when this cannot)."""
    revoked = pending.revocation
    if revoked is None or pending.failed is not None or ctx.temporal is None:
        return
    row = pending.out.credential_row or ""
    ctx.spawn(
        limit_events.announce(
            ctx.engine, ctx.settings, ctx.temporal, revoked.organization_id, revoked.request_id, row
        )
    )


async def _checked(
    ctx: Context, checks: Callable[..., Assessed], presentation: Mapping[str, Any]
) -> Assessed:
    if ctx.loop_reads is None:
        return await run_db(ctx.engine, checks)
    loaded: Any = None
    presentation_id = matching(PRESENTATION_URN_RE, presentation.get("id"))
    try:
        found = await load_on_loop(ctx.loop_reads, presentation_id) if presentation_id else None
        loaded = _NO_ROW if found is None else found
        with on_the_loop():
            return checks(loaded=loaded)
    except WouldBlock:
        return await run_db(ctx.engine, checks, loaded=loaded)
    except Exception:  # the read on the loop failed: the engine's way, on a thread
        if loaded is not None:
            raise
        return await run_db(ctx.engine, checks)


async def _on_loop_if_cached(ctx: Context, work: Callable[[], Pending]) -> Pending:
    """``work`` on the loop when what it reads is cached (PostgreSQL), else ``run_db``'s way."""
    if ctx.loop_reads is None:
        return await run_db(ctx.engine, work)
    try:
        with on_the_loop():
            return work()
    except WouldBlock:
        return await run_db(ctx.engine, work)
