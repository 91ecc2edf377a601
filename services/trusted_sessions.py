"""Trusted browser sessions (issue 36, ``iframe.cookie``; docs/adr/0019-trusted-browser-session.md):
opened on the subject's page after a confirmed code, standing in for the code on a later request
(through the request's workflow, ``verify_session``), forgotten by the subject, revoked by the
integrator (``DELETE /subject/sessions``).

The browser holds a random token in an HttpOnly cookie; only its keyed hash
(``core.otp.JourneySecrets.trusted_session_hash``) is stored, given to the workflow or compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine

from core.actors import Actor
from core.otp import JourneySecrets
from core.text import quote_input
from orchestration.updates import Refused as UpdateRefused
from orchestration.updates import Unavailable as UpdateUnavailable
from orchestration.updates import run_update
from services import requests
from services.context import Context
from services.errors import Invalid, NotFound, Unavailable
from services.requests import refused
from store import kyc as kyc_store
from store import request_queries as queries
from store import trusted as store
from store.db import run_db, utcnow
from wire.contacts import normalize_contact
from workflows.messages import CheckSessionResult, VerifySessionInput, VerifySessionResult

NOT_CONFIRMED = "The request did not confirm this step in time; try again"


@dataclass(frozen=True)
class NewSession:
    """A session just opened: the token for the browser's cookie (never stored) and its lifetime."""

    token: str
    session_id: str
    expires_at: datetime
    seconds: int


async def open_session(
    ctx: Context,
    actor: Actor,
    request_id: str,
    subject_id: str,
    surface: str,
    replaced_token: str | None = None,
) -> NewSession | None:
    """A session for the subject who just confirmed their code on a request that allows one
    (None when it does not), in a fresh token: never one the browser brought, so nobody can plant a
    token in a subject's browser and use it after them. The browser's previous session ends."""
    token = JourneySecrets.trusted_session_token()
    replaced = (
        ctx.journey.trusted_session_hash(replaced_token)
        if JourneySecrets.trusted_session_token_wellformed(replaced_token) and replaced_token
        else None
    )
    opened = await run_db(
        ctx.engine,
        store.open_session,
        ctx.engine,
        request_id,
        subject_id,
        ctx.journey.trusted_session_hash(token),
        surface,
        utcnow(),
        replaced,
    )
    if opened is None:
        return None
    return NewSession(token, opened.session_id, opened.expires_at, opened.seconds)


async def confirm_browser(
    ctx: Context, actor: Actor, request_id: str, subject_id: str, token: str
) -> VerifySessionResult:
    """The browser's session in place of the subject's code: read first here, then checked by the
    request's workflow (``verify_session``), which, when it holds, takes the subject as confirmed."""
    if not JourneySecrets.trusted_session_token_wellformed(token):
        return VerifySessionResult(passed=False)
    token_hash = ctx.journey.trusted_session_hash(token)
    if not await run_db(
        ctx.engine, store.may_stand_in, ctx.engine, request_id, subject_id, token_hash, utcnow()
    ):  # a cookie that opens nothing never reaches the workflow (nor grows its history)
        return VerifySessionResult(passed=False)
    checked = VerifySessionInput(subject_id=subject_id, token_hash=token_hash)
    try:
        return await run_update(ctx.client(), request_id, "verify_session", checked, VerifySessionResult)
    except UpdateRefused as exc:
        raise refused(exc) from exc
    except UpdateUnavailable as exc:
        raise Unavailable(NOT_CONFIRMED, retry_after=5) from exc


async def forget_browser(ctx: Context, actor: Actor, subject_id: str, token: str | None) -> bool:
    """The subject's "forget this browser": its session ends (true when one did)."""
    if not JourneySecrets.trusted_session_token_wellformed(token) or token is None:
        return False
    return await run_db(
        ctx.engine,
        store.revoke_browser,
        ctx.engine,
        ctx.journey.trusted_session_hash(token),
        subject_id,
        utcnow(),
    )


async def revoke(
    ctx: Context, actor: Actor, org_id: str, *, contact: str | None, did: str | None
) -> list[str]:
    """Every open session of the organization's subject, named by contact or DID, ends (the
    integrator's revocation, recorded naming ``actor``): their ids. ``NotFound`` for a contact or
    DID that is no subject of this organization."""
    if (contact is None) == (did is None):
        raise Invalid("Give exactly one of contact or id")
    normalized = None
    if contact is not None:
        if "\x00" in contact or len(contact) > 320:
            raise Invalid("contact is not an e-mail address or a phone number")
        try:
            normalized, _ = normalize_contact(contact)
        except ValueError as exc:
            raise Invalid(str(exc)) from exc
    subject_id = queries.subject_id_from_did(did) if did is not None else None
    if did is not None and subject_id is None:
        raise NotFound("No subject of this organization with that id")
    subject = await run_db(
        ctx.engine, kyc_store.find_subject, ctx.engine, org_id, contact=normalized, subject_id=subject_id
    )
    if subject is None:
        raise NotFound(f"No subject of this organization with that {'contact' if normalized else 'id'}")
    return await run_db(
        ctx.engine, store.revoke_subject, ctx.engine, org_id, subject.id, str(actor), utcnow()
    )


async def revoke_request_subject(
    ctx: Context, actor: Actor, org_id: str, request_id: str, subject_id: str
) -> list[str]:
    """The dashboard's "Forget trusted browsers" on a request's subject: every open session of that
    subject ends (recorded naming ``actor``, the member). ``NotFound`` for another organization's
    request or a subject the request does not have."""
    bundle = await requests.get(ctx, org_id, request_id)
    if subject_id not in {s.id for _, s in bundle.subjects}:
        raise NotFound(f"Request {request_id} has no subject {quote_input(subject_id)}")
    return await run_db(
        ctx.engine, store.revoke_subject, ctx.engine, org_id, subject_id, str(actor), utcnow()
    )


# --- what the request's workflow records (through its activity) --------------------------------


def check_session(
    engine: Engine, actor: Actor, request_id: str, subject_id: str, token_hash: str
) -> CheckSessionResult:
    """Whether the session whose token hashes to ``token_hash`` stands in for the subject's code
    on this request (``store.trusted.check``), with the subject's standing identity statuses."""
    session_id = store.check(engine, request_id, subject_id, token_hash, utcnow())
    if session_id is None:
        return CheckSessionResult()
    kyc, identity_status = kyc_store.prior_identity(engine, subject_id)
    return CheckSessionResult(session_id=session_id, kyc=kyc, identity_status=identity_status)
