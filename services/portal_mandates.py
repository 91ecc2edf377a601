"""What a person signed in to the portal sees and does (issue 32, item 2): every mandate issued to
their contact in every organization with the portal on, one mandate's detail (its limits and their
use, its verifications), and revoking one.

A mandate is named by its credential id; one that is not the session's contact's, or of an
organization that turned the portal off, is ``NotFound``, as is no credential at all. Revoking goes
through ``services.mandates.revoke`` as the contact's subject of that organization (audit actor
``subject:<id>``, reason ``subject``): the receipt, the document form's REVOKE item and the status
list bit, in one transaction. The integrator learns it by its ``mandate.revoked`` event
(``services.limit_events``: made once per mandate, the worker's pass starts it if this does not).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from core import i18n
from core.actors import Actor
from core.ids import is_object_id
from core.kinds import CredentialStatus
from policy import limits
from services import limit_events
from services import mandates as mandate_service
from services.context import Context
from services.errors import NotFound
from services.limit_views import subject_lines
from store import limit_usage, revocation, verifications
from store import portal as store
from store.db import run_db, utcnow
from store.limit_use import SUBJECT
from store.tables import PortalSession, Verification

VERIFICATIONS_SHOWN = 50
EXPIRED = "EXPIRED"


@dataclass(frozen=True)
class LimitUse:
    words: str  # the limit as the subject read it, in the page's language
    used: Decimal
    remaining: Decimal
    resets_at: datetime | None


@dataclass(frozen=True)
class Checked:
    """One verification of the mandate: when, by whom, allowed or denied."""

    at: datetime
    verifier: str  # the verifier's DID as its receipt names it, else its organization id
    allowed: bool
    reason: str | None


@dataclass(frozen=True)
class Shown:
    """A mandate as the portal shows it."""

    mandate: store.PortalMandate
    status: str  # the credential's status, EXPIRED for an ACTIVE one past its validUntil
    limits: list[LimitUse]
    checks: list[Checked]
    check_count: int

    @property
    def revocable(self) -> bool:
        return self.status == CredentialStatus.ACTIVE


def status_of(found: store.PortalMandate, now: datetime) -> str:
    cred = found.credential
    if cred.status == CredentialStatus.ACTIVE and cred.valid_until is not None and cred.valid_until <= now:
        return EXPIRED
    return cred.status


def _limits(ctx: Context, found: store.PortalMandate, language: str, now: datetime) -> list[LimitUse]:
    cred = found.credential
    out = []
    for bound, description in limit_usage.bounds_of(ctx.engine, found.organization.id, cred):
        _, resets, used = limits.used_now(bound, cred.usage, now)
        [words] = subject_lines(language, [{**bound.as_json(), "description": description}])
        out.append(LimitUse(words, used, bound.room(used), resets))
    return out


def _checked(v: Verification) -> Checked:
    receipt = v.receipt if isinstance(v.receipt, dict) else {}
    verifier = receipt.get("verifier")
    return Checked(
        v.created_at,
        verifier if isinstance(verifier, str) and verifier else v.organization_id,
        v.decision == "allow",
        v.reason,
    )


def _shown(ctx: Context, found: store.PortalMandate, language: str, now: datetime, detail: bool) -> Shown:
    cred = found.credential
    checks: tuple[list[Verification], int] = ([], 0)
    if cred.mandate_id is not None:
        shown = VERIFICATIONS_SHOWN if detail else 0
        checks = verifications.of_credential(ctx.engine, cred.id, cred.mandate_id, shown)
    return Shown(
        found,
        status_of(found, now),
        _limits(ctx, found, language, now),
        [_checked(v) for v in checks[0]],
        checks[1],
    )


def _list(ctx: Context, session: PortalSession, language: str) -> list[Shown]:
    now = utcnow()
    return [_shown(ctx, m, language, now, False) for m in store.mandates_of(ctx.engine, session.contact_hash)]


async def mandates(ctx: Context, session: PortalSession, language: str | None = None) -> list[Shown]:
    """Every mandate of the session's contact, newest first."""
    return await run_db(ctx.engine, _list, ctx, session, i18n.language_of(language))


def _find(ctx: Context, session: PortalSession, raw_id: str) -> store.PortalMandate:
    found = store.mandate_of(ctx.engine, session.contact_hash, raw_id) if is_object_id(raw_id) else None
    if found is None:
        raise NotFound("No such mandate")
    return found


def _detail(ctx: Context, session: PortalSession, raw_id: str, language: str) -> Shown:
    return _shown(ctx, _find(ctx, session, raw_id), language, utcnow(), True)


async def mandate(ctx: Context, session: PortalSession, raw_id: str, language: str | None = None) -> Shown:
    """One mandate of the session's contact with its limits and verifications (``NotFound``)."""
    return await run_db(ctx.engine, _detail, ctx, session, raw_id, i18n.language_of(language))


async def revoke(ctx: Context, session: PortalSession, raw_id: str) -> revocation.Revoked:
    """Revoke one mandate of the session's contact as that organization's subject (``NotFound``;
    ``Conflict`` when it is not ACTIVE), then tell the integrator (``mandate.revoked``)."""
    found = await run_db(ctx.engine, _find, ctx, session, raw_id)
    org_id, cred = found.organization.id, found.credential
    revoked = await mandate_service.revoke(ctx, Actor.subject(found.subject.id), org_id, cred.id, SUBJECT)
    if ctx.temporal is None:  # the worker's pass starts its delivery
        await asyncio.to_thread(
            limit_events.create_event, ctx.engine, ctx.settings, org_id, cred.request_id, cred.id
        )
    else:
        await limit_events.announce(ctx.engine, ctx.settings, ctx.temporal, org_id, cred.request_id, cred.id)
    return revoked
