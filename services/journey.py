"""The subject's journey: confirm a code, ask for a new one, decide, go through an identity check;
and the identity results that reach a request from a provider or from the organization.

The approval pages call these with ``Actor.subject(<subjectId>)``; the organization's own report
(``POST /subject/identity``) is done by ``ORGANIZATION``. The audit records these steps write (the
decision, the code's lock, the identity result) are written by the request's workflow, which
records the subject or the organization as their actor.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Engine

from core.actors import ORGANIZATION, Actor
from core.kinds import IDENTITY_SOURCES, IdentitySource, RequestStatus, SubjectKyc, UpdateRefusal
from orchestration import identity
from orchestration.temporal import request_handle
from services.context import Context
from services.errors import Invalid, NotFound, Refused
from services.requests import workflow_update
from store import journey as journeys
from store import kyc as kyc_store
from store import orgs as orgs_store
from store import otp as otp_store
from store import request_queries as queries
from store import users as user_store
from store import webhooks as webhook_store
from store.db import run_db, utcnow
from store.journey import Journey as Journey  # what the subject's pages show of a request
from store.tables import KycCheck, WebhookEvent
from trust.frame_jwe import BadFrameKey, encrypt_for_frame
from wire.contacts import normalize_contact
from wire.identity_match import MISMATCH, CheckedDocument, mismatches
from workflows.messages import (
    DecisionInput,
    DecisionResult,
    OpenJourneyInput,
    OpenJourneyResult,
    RecordIdentityInput,
    RequestStatusView,
    ResendOtpInput,
    SendOtpResult,
    VerifyOtpInput,
    VerifyOtpResult,
)

T = TypeVar("T")
NOT_CONFIRMED = "The request did not confirm this step in time; try again"
ENCRYPTED_MESSAGE = "mandatum.encrypted"  # the ``type`` of a message encrypted to iframe.pubKey
log = logging.getLogger(__name__)


async def load(ctx: Context, request_id: str, subject_id: str) -> Journey | None:
    """What the subject's page shows: the request, its organization, the subject and their
    credentials and decisions, and where their code goes when they have a secondary contact; None
    when the subject is not one of the request's."""
    found = await run_db(ctx.engine, journeys.load_journey, ctx.engine, request_id, subject_id)
    sealed = found.link.secondary_contact_sealed if found is not None else None
    if found is None or sealed is None:
        return found
    return dataclasses.replace(found, secondary_contact=ctx.cipher.decrypt(sealed))


def code_waits_for_open(found: Journey) -> bool:
    """The subject's code goes to their secondary contact and none was sent yet: opening their
    link sends it (``open_journey``)."""
    return found.link.secondary_contact_sealed is not None and found.challenge is None


async def open_journey(ctx: Context, actor: Actor, request_id: str, subject_id: str) -> OpenJourneyResult:
    """The subject opened their link: the workflow sends their first code to their secondary
    contact, once (a later open, or a code sent before, sends none)."""
    opened = OpenJourneyInput(subject_id=subject_id)
    return await _update(ctx, request_id, "open_journey", opened, OpenJourneyResult)


async def decision_events(ctx: Context, decision_ids: list[str]) -> list[WebhookEvent]:
    """The ``credential`` webhook events of the subject's decisions (each decision's credential,
    as it stands after it), in the decisions' order; a decision whose event is not made yet has
    none."""
    events = await asyncio.gather(
        *(
            run_db(ctx.engine, webhook_store.event_by_fact, ctx.engine, f"credential:{d}")
            for d in decision_ids
        )
    )
    return [e for e in events if e is not None]


async def encrypted_messages(public_key: str, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each event whole, as its webhook carries it, encrypted to the request's registered key
    (``iframe.pubKey``): ``{"type": "mandatum.encrypted", "jwe": <compact JWE>}``. On a thread: an
    event holds the signed credential and a document's data (bounded by the request's body, 1 MiB).
    A stored key that no longer passes the check gives no message at all, never a readable one."""

    def encrypt() -> list[dict[str, Any]]:
        return [{"type": ENCRYPTED_MESSAGE, "jwe": encrypt_for_frame(p, public_key)} for p in payloads]

    try:
        return await asyncio.to_thread(encrypt)
    except BadFrameKey:
        log.warning("a request's stored iframe key is not a P-256 key: no message posted to the parent")
        return []


async def frame_origins(ctx: Context, request_id: str) -> list[str]:
    """The origins allowed to embed the approval page of the request's organization (none for a
    request that does not exist)."""

    def read() -> list[str]:
        found = queries.organization_of(ctx.engine, request_id)
        return orgs_store.get_organization(ctx.engine, found).frame_origins if found else []

    return await run_db(ctx.engine, read)


async def _update(ctx: Context, request_id: str, name: str, arg: object, result_type: type[T]) -> T:
    return await workflow_update(ctx, request_id, name, arg, result_type, NOT_CONFIRMED)


async def confirm_code(
    ctx: Context, actor: Actor, request_id: str, subject_id: str, digits: str
) -> VerifyOtpResult:
    """Check the code the subject entered (only its keyed hash reaches the workflow)."""
    code_hash = ctx.journey.code_hash(request_id, subject_id, digits)
    checked = VerifyOtpInput(subject_id=subject_id, code_hash=code_hash)
    return await _update(ctx, request_id, "verify_otp", checked, VerifyOtpResult)


async def resend_code(ctx: Context, actor: Actor, request_id: str, subject_id: str) -> SendOtpResult:
    """A new code for the subject, asked for on their page (CONTRACT 4's limits are the workflow's)."""
    asked = ResendOtpInput(subject_id=subject_id, actor=str(actor))
    return await _update(ctx, request_id, "resend_otp", asked, SendOtpResult)


async def decide(
    ctx: Context,
    actor: Actor,
    request_id: str,
    subject_id: str,
    credential_id: str,
    accept: bool,
    channel: str | None,
    surface: str,
) -> DecisionResult:
    """The subject's decision on one credential; the workflow records it (and issues the mandate
    when it completes the credential's acceptance). A second submit of the same decision answers
    as the first, also once the workflow has ended."""
    decision = DecisionInput(
        subject_id=subject_id, credential_id=credential_id, accept=accept, channel=channel, surface=surface
    )
    try:
        return await _update(ctx, request_id, "decide", decision, DecisionResult)
    except Refused as exc:
        if exc.refusal != UpdateRefusal.NOT_ACTIVE:
            raise
        # the workflow had ended: a second submit of the decision that closed it (one that reached
        # the workflow while it closed) answers as the first, as the workflow answers it while open
        first = await run_db(
            ctx.engine, journeys.stored_decision, ctx.engine, request_id, subject_id, credential_id
        )
        if first is None or first.accepted != accept:
            raise
        return DecisionResult(
            decision_id=first.decision_id,
            decided_at=first.decided_at,
            request_status=RequestStatus(first.request_status),
            mandate_id=first.mandate_id if accept else None,
        )


async def standing(ctx: Context, request_id: str) -> RequestStatusView:
    """Where the request's subjects stand, from its workflow (RPCError when it has ended)."""
    return await request_handle(ctx.client(), request_id).query("status", result_type=RequestStatusView)


def platform_check_possible(security_level: str) -> bool:
    return IDENTITY_SOURCES.get(security_level) == IdentitySource.PLATFORM


async def start_identity_check(
    ctx: Context, actor: Actor, request_id: str, subject_id: str, provider: str, browser_secret: str
) -> KycCheck:
    """Start a platform identity check of the subject; its return is bound to the browser holding
    ``browser_secret``."""
    check_id = kyc_store.new_check_id()
    return await run_db(
        ctx.engine,
        kyc_store.start_check,
        ctx.engine,
        request_id,
        subject_id,
        provider,
        utcnow(),
        check_id,
        ctx.journey.kyc_browser_hash(check_id, browser_secret),
    )


async def take_identity_return(
    ctx: Context,
    actor: Actor,
    check_id: str,
    request_id: str,
    subject_id: str,
    browser_secret: str,
    now: datetime,
    not_before: datetime,
) -> bool:
    """The subject's return from the provider, once, in the browser that started the check."""
    return await run_db(
        ctx.engine,
        kyc_store.take_return,
        ctx.engine,
        check_id,
        request_id,
        subject_id,
        ctx.journey.kyc_browser_hash(check_id, browser_secret),
        now,
        not_before,
    )


async def identity_check(ctx: Context, check_id: str) -> KycCheck:
    """A platform identity check by its id (the development provider's page shows it)."""
    check = await run_db(ctx.engine, kyc_store.get_check, ctx.engine, check_id)
    if check is None:
        raise NotFound("Identity check not found")
    return check


async def complete_identity_check(
    ctx: Context,
    actor: Actor,
    check_id: str,
    success: bool,
    message: str | None,
    document: CheckedDocument | None = None,
) -> KycCheck:
    """A provider's result of a platform check (the development provider's page reports it), with
    the document it read. A passed check whose document does not match what the organization
    expects of the subject (the request's ``docId``, the identity it imported) fails, saying which
    members differ and never what was expected (``wire.identity_match``)."""
    check = await run_db(ctx.engine, kyc_store.get_check, ctx.engine, check_id)
    if check is None:
        raise NotFound("Identity check not found")
    if success:
        expected = await run_db(
            ctx.engine,
            user_store.expected_identity,
            ctx.engine,
            ctx.cipher,
            check.request_id,
            check.subject_id,
        )
        if expected.doc_id_hash is not None or expected.identity is not None:
            wrong = mismatches(
                document or CheckedDocument(),
                expected.doc_id_hash,
                expected.identity,
                ctx.journey.document_hash,
            )
            if wrong:
                success, message = False, f"{MISMATCH} ({', '.join(wrong)})"
    return await identity.complete_check(ctx.engine, ctx.client(), check_id, success, message)


async def report_organization_check(
    ctx: Context,
    actor: Actor,
    org_id: str,
    *,
    contact: str | None,
    did: str | None,
    success: bool,
    message: str | None,
) -> list[str]:
    """The organization's own identity check of its subject, named by contact or DID: stored on the
    subject and given to each open ORGANIZATION_KYC request waiting for it (their ids)."""
    if (contact is None) == (did is None):
        raise Invalid("Give exactly one of contact or id")
    normalized = None
    if contact is not None:
        try:
            normalized, _ = normalize_contact(contact)
        except ValueError as exc:
            raise Invalid(str(exc)) from exc
    subject_id = queries.subject_id_from_did(did) if did is not None else None
    subject = await run_db(
        ctx.engine, kyc_store.find_subject, ctx.engine, org_id, contact=normalized, subject_id=subject_id
    )
    if subject is None:
        raise NotFound(f"No subject of this organization with that {'contact' if normalized else 'id'}")
    return await identity.report_organization_check(
        ctx.engine, ctx.client(), org_id, subject.id, success, message
    )


# --- what the request's workflow records (through its activities) ------------------------------


def check_code(
    engine: Engine, actor: Actor, request_id: str, subject_id: str, code_hash: str
) -> VerifyOtpResult:
    """Compare the keyed hash of the code the subject entered with the current one; the fifth wrong
    try locks it (``OTP_LOCKED`` naming ``actor``). With the subject's standing identity statuses."""
    checked = otp_store.check_code(engine, request_id, subject_id, code_hash, utcnow(), str(actor))
    kyc, identity_status = kyc_store.prior_identity(engine, subject_id)
    if kyc == SubjectKyc.VERIFIED and user_store.expects_document(engine, request_id, subject_id):
        # a request naming the document (docId) has it checked: an earlier check is not reused
        kyc = SubjectKyc.NOT_STARTED
    return VerifyOtpResult(
        outcome=checked.outcome, attempts_left=checked.attempts_left, kyc=kyc, identity_status=identity_status
    )


def record_identity(engine: Engine, actor: Actor, result: RecordIdentityInput) -> None:
    """The identity result a request required of a subject, once, with its record naming ``actor``
    (the organization for its own check, else the subject)."""
    kyc_store.record_identity(
        engine,
        result.request_id,
        result.subject_id,
        result.success,
        result.source,
        result.message,
        result.check_id,
        result.at,
        str(actor),
    )


def identity_actor(subject_id: str, source: str) -> Actor:
    """Who an identity result is recorded as: the organization for its own check, else the subject."""
    return ORGANIZATION if source == IdentitySource.ORGANIZATION else Actor.subject(subject_id)
