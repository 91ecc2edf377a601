"""Operators: the people who run the installation, across organizations (issue 15, item 1).

A operator is a dashboard member of no organization with the role ``platform``, made by
``mandatum operator create``; they log in like any member, with the second factor operators must have
(``services.second_factor.must_enrol``), and use the operators' area, acting as
``staff:<memberId>``. Every function here refuses (``Forbidden``) any actor but staff and shell
operators, so no surface can hand an organization's member the operators' reach by forgetting a
check.

- ``find``: a request by its id, a mandate URN, a webhook event id, an ``internalId`` (of the
  request or a subject, in every organization) or a subject's contact, looked up through its keyed
  hash (``core.otp.JourneySecrets.contact_hash``), never the contact itself.
- ``timeline``: everything that happened to a request on one page, from the database and from its
  workflow's history (codes sent and entered), oldest first.
- The support actions (cancel, a fresh code, the subject's link, a webhook retry or resend, a
  revocation), each with a required reason recorded in the organization's audit record with the
  operator as actor; they are the dashboard's and the API's own operations.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from core.actors import Actor, ActorKind
from core.kinds import PLATFORM_ROLE
from orchestration.history import CodeChecked, CodeSent, journey_of
from orchestration.temporal import temporal_unavailable
from services import mandates, members, operator_search, requests, webhooks
from services.audit import changes_of, checked_reason
from services.context import Context
from services.errors import Conflict, Forbidden, Invalid, NotFound
from store import members as members_store
from store import orgs
from store import timeline as store
from store.db import utcnow
from store.requests import RequestBundle
from store.tables import (
    AuditRecord,
    KycCheck,
    Member,
    OtpChallenge,
    Presentation,
    Verification,
    WebhookAttempt,
    WebhookEvent,
)
from wire.contacts import normalize_contact

log = logging.getLogger("mandatum.services.operators")

FOUND_AT_MOST = operator_search.FOUND_AT_MOST
STAFF_ONLY = "only operators may use the operators' area"
HISTORY_MISSING = (
    "The workflow's history could not be read (Temporal is unreachable, or the history is past its "
    "retention): the codes sent and entered are missing below."
)


def require_operator(actor: Actor) -> None:
    """``Forbidden`` for anyone but operators and shell operators."""
    if actor.kind not in (ActorKind.DASHBOARD_OPERATOR, ActorKind.SHELL_OPERATOR):
        raise Forbidden(STAFF_ONLY)


# --- operators ------------------------------------------------------------------------------


def create(ctx: Context, actor: Actor, email: str) -> members.Invitation:
    """A new operator with a one-time link to set their password (``mandatum operator create``)."""
    require_operator(actor)
    address = members.check_new_email(ctx, email)
    try:
        member = members_store.add_operator(ctx.engine, address, utcnow())
    except members_store.EmailTaken as exc:
        raise Conflict(str(exc)) from exc
    log.info("operator %s created by %s", member.id, actor)
    return members.Invitation(member, members.set_password_link(ctx, member.id))


def list_operators(ctx: Context, actor: Actor) -> list[Member]:
    require_operator(actor)
    return members_store.operator_members(ctx.engine)


def set_disabled(ctx: Context, actor: Actor, email: str, disabled: bool) -> Member:
    """Disable an operator (their sessions end at once) or enable them again."""
    require_operator(actor)
    found = members_store.operator_by_email(ctx.engine, email.strip().lower())
    if found is None or found.role != PLATFORM_ROLE:
        raise NotFound(f"no operator {email.strip()[:320]}")
    return members.set_disabled(ctx, actor, None, found.id, disabled)


# --- finding ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    bundle: RequestBundle
    organization: str  # its name
    matched_by: str  # requestId | mandateId | eventId | internalId | contact


async def find(ctx: Context, actor: Actor, query: str) -> list[Found]:
    """The requests ``query`` names, in every organization, at most ``FOUND_AT_MOST``, each once."""
    require_operator(actor)
    text = query.strip()
    if not text or len(text) > 320 or "\x00" in text:
        raise Invalid("type a request id, a mandate URN, a webhook event id, an internalId or a contact")
    pairs: list[tuple[str, str, str]] = []  # (organization, request, matched by)
    key = operator_search.global_key(text)
    if key is not None:
        try:
            owner = await asyncio.to_thread(operator_search.by_global_key, ctx, key, text)
        except NotFound:
            owner = None
        if owner is not None:
            pairs.append((owner[0], owner[1], key))
    else:
        by_internal = await asyncio.to_thread(store.requests_by_internal_id, ctx.engine, text, FOUND_AT_MOST)
        pairs += [(o, r, "internalId") for o, r in by_internal]
        try:
            contact = normalize_contact(text)[0]
        except ValueError:
            contact = None
        if contact is not None:
            await asyncio.to_thread(store.fill_contact_hashes, ctx.engine, ctx.journey.contact_hash)
            hashed = ctx.journey.contact_hash(contact)
            by_contact = await asyncio.to_thread(
                store.requests_by_contact_hash, ctx.engine, hashed, FOUND_AT_MOST
            )
            pairs += [(o, r, "contact") for o, r in by_contact]
    seen: set[str] = set()
    found: list[Found] = []
    names: dict[str, str] = {}
    for org_id, request_id, matched_by in pairs:
        if request_id in seen or len(found) >= FOUND_AT_MOST:
            continue
        seen.add(request_id)
        if org_id not in names:
            names[org_id] = (await asyncio.to_thread(orgs.get_organization, ctx.engine, org_id)).name
        found.append(Found(await requests.get(ctx, org_id, request_id), names[org_id], matched_by))
    return found


# --- the timeline -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    at: datetime
    kind: str  # request | code | identity | decision | mandate | webhook | vp | verification | audit
    what: str  # one line
    actor: str | None = None
    detail: str | None = None
    failed: bool = False


@dataclass
class Timeline:
    bundle: RequestBundle
    organization: str
    workflow_url: str
    entries: list[Entry] = field(default_factory=list)
    subjects: list[dict[str, Any]] = field(default_factory=list)  # each subject's current code state
    history_error: str | None = None  # why the workflow's part is missing (Temporal unreachable)
    events: list[tuple[str, str, str]] = field(
        default_factory=list
    )  # (id, type, state) of its webhook events


def _host(url: str | None) -> str:
    return urlsplit(url).hostname or "" if url else ""


async def timeline(ctx: Context, actor: Actor, request_id: str) -> Timeline:
    """Everything that happened to the request, oldest first (``NotFound`` for none)."""
    require_operator(actor)
    org_id = await asyncio.to_thread(operator_search.request_owner, ctx, request_id)
    bundle = await requests.get(ctx, org_id, request_id)
    org = await asyncio.to_thread(orgs.get_organization, ctx.engine, org_id)
    facts = await asyncio.to_thread(store.facts_of, ctx.engine, org_id, request_id)
    found = Timeline(bundle, org.name, requests.workflow_url(ctx, request_id))
    label = {s.id: f"subject {link.position + 1} ({s.contact})" for link, s in bundle.subjects}
    req = bundle.request
    entries = found.entries
    entries.append(
        Entry(
            req.created_at,
            "request",
            f"Request created: {len(bundle.subjects)} subject(s), "
            f"{len(bundle.credentials)} credential(s), {req.security_level}",
        )
    )
    sent, checked, found.history_error = await _history(ctx, request_id)
    entries += [_sent_entry(s, label) for s in sent]
    entries += [_checked_entry(c, label) for c in checked]
    entries += _identity_entries(facts.checks, label)
    entries += _decision_entries(bundle, label)
    entries += _mandate_entries(bundle)
    found.events = [(e.id, e.event_type, e.state) for e in facts.events]
    entries += _webhook_entries(facts.events, facts.attempts)
    entries += _presentation_entries(facts.presentations)
    entries += _verification_entries(facts.verifications)
    entries += [_audit_entry(record) for record in facts.records]
    if req.canceled_at is not None:
        entries.append(Entry(req.canceled_at, "request", "Request canceled", actor=req.canceled_by))
    entries.sort(key=lambda e: e.at)
    found.subjects = [_code_state(code, label) for code in facts.codes]
    return found


async def _history(ctx: Context, request_id: str) -> tuple[list[CodeSent], list[CodeChecked], str | None]:
    """The codes sent and entered, from the workflow's history; none, with why, when Temporal is
    unreachable or the history is gone (the database's part is still worth showing)."""
    try:
        sent, checked = await journey_of(ctx.client(), request_id)
    except Exception as exc:
        if not temporal_unavailable(exc) and "not found" not in str(exc).lower():
            raise
        return [], [], HISTORY_MISSING
    return sent, checked, None


def _identity_entries(checks: Sequence[KycCheck], label: dict[str, str]) -> list[Entry]:
    entries = []
    for check in checks:
        who = label.get(check.subject_id, check.subject_id)
        entries.append(
            Entry(check.created_at, "identity", f"Identity check started for {who} ({check.provider})")
        )
        if check.completed_at is not None:
            entries.append(
                Entry(
                    check.completed_at,
                    "identity",
                    f"Identity check {check.status} for {who}",
                    detail=check.message,
                    failed=check.status == "FAILED",
                )
            )
    return entries


def _decision_entries(bundle: RequestBundle, label: dict[str, str]) -> list[Entry]:
    names = {c.id: c.name for c in bundle.credentials}
    entries = []
    for credential_id, decided in bundle.decisions.items():
        for decision, subject in decided:
            verb = "accepted" if decision.accepted else "rejected"
            how = " · ".join(filter(None, (decision.channel, decision.surface)))
            entries.append(
                Entry(
                    decision.decided_at,
                    "decision",
                    f"{label.get(subject.id, subject.id)} {verb} {names.get(credential_id, credential_id)}",
                    detail=how or None,
                )
            )
    return entries


def _mandate_entries(bundle: RequestBundle) -> list[Entry]:
    entries = []
    for cred in bundle.credentials:
        if cred.issued_at is not None:
            entries.append(
                Entry(cred.issued_at, "mandate", f"Mandate issued for {cred.name}", detail=cred.mandate_id)
            )
        if cred.revoked_at is not None:
            entries.append(
                Entry(
                    cred.revoked_at,
                    "mandate",
                    f"Mandate {cred.mandate_id} revoked",
                    detail=cred.revocation_reason,
                )
            )
    return entries


def _webhook_entries(
    events: Sequence[WebhookEvent], attempts: dict[str, list[WebhookAttempt]]
) -> list[Entry]:
    """Each event's creation, then each attempt to deliver it."""
    entries = []
    for event in events:
        entries.append(
            Entry(
                event.created_at,
                "webhook",
                f"Webhook event {event.event_type} created ({event.state})",
                detail=event.id,
            )
        )
        entries += [_attempt_entry(event, attempt) for attempt in attempts.get(event.id, [])]
    return entries


def _attempt_entry(event: WebhookEvent, attempt: WebhookAttempt) -> Entry:
    answer = f"HTTP {attempt.status_code}" if attempt.status_code else (attempt.error or "no answer")
    ok = attempt.status_code is not None and 200 <= attempt.status_code < 300
    took = f", {attempt.duration_ms} ms" if attempt.duration_ms is not None else ""
    return Entry(
        attempt.finished_at,
        "webhook",
        f"Webhook {event.event_type} attempt {attempt.number}: {answer}",
        detail=f"{_host(attempt.url)}{took} · {event.id}",
        failed=not ok,
    )


def _presentation_entries(presentations: Sequence[Presentation]) -> list[Entry]:
    entries = []
    for vp in presentations:
        entries.append(
            Entry(
                vp.created_at, "vp", f"VP issued, expires {vp.expires_at:%Y-%m-%d %H:%M:%S} UTC", detail=vp.id
            )
        )
        if vp.used_at is not None:
            entries.append(Entry(vp.used_at, "vp", "VP used by a verification", detail=vp.id))
    return entries


def _verification_entries(verifications: Sequence[Verification]) -> list[Entry]:
    return [
        Entry(
            v.created_at,
            "verification",
            f"Verification: {v.decision}" + (f" ({v.reason})" if v.reason else ""),
            detail=v.presentation_id or v.mandate_id,
            failed=v.decision != "allow",
        )
        for v in verifications
    ]


def _audit_entry(record: AuditRecord) -> Entry:
    """An audit record of the request: its type, and in its detail what it changed (each field as
    ``field: before → after``, as the activity page shows them) and the reason given."""
    reason = record.data.get("reason") if isinstance(record.data, dict) else None
    changes = [f"{name}: {change}" for name, change in changes_of(record.data).items()]
    detail = " · ".join([*changes, *([str(reason)] if reason else [])]) or None
    return Entry(record.created_at, "audit", f"Audit: {record.type}", actor=record.actor, detail=detail)


def _code_state(code: OtpChallenge, label: dict[str, str]) -> dict[str, Any]:
    """A subject's current code, as the timeline's table of subjects shows it."""
    return {
        "who": label.get(code.subject_id, code.subject_id),
        "sends": code.sends,
        "channel": code.channel,
        "wrong": code.failures,
        "locked": code.locked_at,
        "confirmed": code.verified_at,
        "undelivered": code.delivery_error,
    }


def _sent_entry(s: CodeSent, label: dict[str, str]) -> Entry:
    who = label.get(s.subject_id, s.subject_id)
    how = f" by {s.channel}" if s.channel else ""
    if s.delivered:
        return Entry(s.at, "code", f"Code {s.send_number} sent to {who}{how}", actor=s.resent_by)
    return Entry(
        s.at,
        "code",
        f"Code {s.send_number} to {who}{how} not delivered",
        actor=s.resent_by,
        detail=s.error,
        failed=True,
    )


CHECK_WORDS = {
    "passed": "entered the right code",
    "wrong": "entered a wrong code",
    "locked_now": "entered a wrong code: the code is now locked",
    "locked": "tried a locked code",
    "expired": "entered an expired code",
    "no_code": "entered a code before any was sent",
}


def _checked_entry(c: CodeChecked, label: dict[str, str]) -> Entry:
    words = CHECK_WORDS.get(c.outcome, c.outcome)
    return Entry(
        c.at, "code", f"{label.get(c.subject_id, c.subject_id)} {words}", failed=c.outcome != "passed"
    )


# --- actions ------------------------------------------------------------------------------------


async def cancel(ctx: Context, actor: Actor, request_id: str, reason: str) -> None:
    require_operator(actor)
    why = checked_reason(reason)
    org_id = await asyncio.to_thread(operator_search.request_owner, ctx, request_id)
    await requests.cancel(ctx, actor, org_id, request_id, why)


async def resend_code(ctx: Context, actor: Actor, request_id: str, subject_id: str, reason: str) -> None:
    require_operator(actor)
    why = checked_reason(reason)
    org_id = await asyncio.to_thread(operator_search.request_owner, ctx, request_id)
    await requests.resend_code(ctx, actor, org_id, request_id, subject_id, why)


async def hand_out_link(ctx: Context, actor: Actor, request_id: str, subject_id: str, reason: str) -> str:
    require_operator(actor)
    why = checked_reason(reason)
    org_id = await asyncio.to_thread(operator_search.request_owner, ctx, request_id)
    return (await requests.hand_out_link(ctx, actor, org_id, request_id, subject_id, why))["url"]


async def redeliver(ctx: Context, actor: Actor, event_id: str, reason: str) -> str:
    """Retry a failed webhook event or resend a delivered one; the workflow id."""
    require_operator(actor)
    why = checked_reason(reason)
    event = await asyncio.to_thread(operator_search.event, ctx, event_id)
    kind = webhooks.redelivery_kind(event)
    return await webhooks.redeliver(ctx, actor, event.organization_id, event.id, kind, why)


async def revoke(ctx: Context, actor: Actor, mandate_id: str, reason: str) -> None:
    require_operator(actor)
    why = checked_reason(reason)
    org_id = await asyncio.to_thread(operator_search.mandate_owner, ctx, mandate_id)
    await mandates.revoke(ctx, actor, org_id, mandate_id, why)
