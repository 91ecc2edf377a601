"""Users (``POST /user``, ``GET /user``; issue 36): import an organization's users, read one.

A user is the organization's subject of a contact (``store.users``). Each item of an import is
answered in its place (``wire.users.CreateSubjectOut``): 201 created, updated or unchanged; 400
invalid (checked by the route, which passes the reason here as ``Refusal``); 409 its contact twice
in the body; 410 its internalId given to another contact (in the body or already). The call itself
is refused (400, nothing stored) only for a body that is not 1 to 100 items.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from core.actors import Actor
from core.text import quote_input
from services.context import Context
from services.errors import Conflict, Invalid, NotFound, TooMany
from store import guards
from store import requests as request_store
from store import users as store
from store.db import run_db
from store.request_queries import subject_id_from_did
from trust.did import web_subject_did
from wire.contacts import normalize_contact
from wire.users import (
    CREATED,
    DUPLICATE_CONTACT,
    ELSEWHERE,
    TWICE,
    UNCHANGED,
    UPDATED,
    CreateSubjectIn,
    CreateSubjectOut,
    PartialSubjectOut,
    UserContactOut,
    UserOrganizationOut,
    UserOut,
)

MESSAGES = {store.CREATED: CREATED, store.UPDATED: UPDATED, store.UNCHANGED: UNCHANGED}


@dataclass(frozen=True)
class Refusal:
    """An item the route could not read: why, and what it named (echoed back)."""

    message: str
    contact: str | None = None
    internal_id: str | None = None


@dataclass(frozen=True)
class Imported:
    response: list[dict[str, Any]]
    status_code: int


def _refused(status: int, message: str, contact: str | None, internal_id: str | None) -> dict[str, Any]:
    out = CreateSubjectOut(
        status=status,
        message=message,
        user=PartialSubjectOut(contact=contact, internalId=internal_id),
    )
    return out.model_dump(mode="json")


async def import_users(
    ctx: Context,
    actor: Actor,
    org_id: str,
    items: list[CreateSubjectIn | Refusal],
    raw_body: Any,
    *,
    rate_per_minute: int,
    idempotency_key: str | None = None,
) -> Imported:
    """Store the valid items in one transaction (with ``USERS_IMPORTED`` naming ``actor``) and
    answer each item in its place."""
    if not 1 <= len(items) <= 100:
        raise Invalid("the body must be a list of 1 to 100 users")
    idem = None
    if idempotency_key is not None and "\x00" in idempotency_key:
        raise Invalid("Idempotency-Key must not contain NUL characters")
    if idempotency_key is not None and idempotency_key.strip():
        idem = request_store.Idempotency(
            idempotency_key.strip(), guards.body_digest(raw_body), ctx.settings.idempotency_window
        )
    answers, valid = _sorted_out(ctx, items)

    def render(outcomes: list[store.Outcome]) -> list[dict[str, Any]]:
        for (i, user), outcome in zip(valid, outcomes, strict=True):
            answers[i] = _answer(ctx, user, outcome)
        return [a for a in answers if a is not None]

    try:
        result = await asyncio.to_thread(
            store.import_users,
            ctx.engine,
            ctx.cipher,
            org_id,
            [u for _, u in valid],
            rate_per_minute,
            idem,
            lambda outcomes: {"items": render(outcomes)},
            str(actor),
        )
    except request_store.RateLimited as exc:
        raise TooMany("Too many user imports; slow down", retry_after=exc.retry_after) from exc
    except request_store.IdempotencyConflict as exc:
        raise Conflict("Idempotency-Key was already used with a different body") from exc
    if isinstance(result, request_store.Replayed):
        return Imported(list(result.response["items"]), result.status_code)
    return Imported(render(result), 201)


def _sorted_out(
    ctx: Context, items: list[CreateSubjectIn | Refusal]
) -> tuple[list[dict[str, Any] | None], list[tuple[int, store.NewUser]]]:
    """The answers of the items refused before the store (invalid, a contact twice, an internalId
    given to two contacts) in their places, and the others to store, with their places."""
    answers: list[dict[str, Any] | None] = [None] * len(items)
    contacts: set[str] = set()
    owners: dict[str, str] = {}  # internalId -> the contact of the body that gave it first
    valid: list[tuple[int, store.NewUser]] = []
    for i, item in enumerate(items):
        if isinstance(item, Refusal):
            answers[i] = _refused(400, item.message, item.contact, item.internal_id)
        elif item.contact in contacts:
            answers[i] = _refused(409, DUPLICATE_CONTACT, item.contact, item.internalId)
        elif item.internalId is not None and owners.setdefault(item.internalId, item.contact) != item.contact:
            contacts.add(item.contact)
            answers[i] = _refused(
                410, TWICE.format(quote_input(item.internalId)), item.contact, item.internalId
            )
        else:
            contacts.add(item.contact)
            valid.append((i, _new_user(ctx, item)))
    return answers, valid


def _new_user(ctx: Context, item: CreateSubjectIn) -> store.NewUser:
    return store.NewUser(
        contact=item.contact,
        kind=item.kind(),
        contact_hash=ctx.journey.contact_hash(item.contact),
        internal_id=item.internalId,
        extra_contacts=item.extraContacts,
        identity=item.identity.model_dump(mode="json", exclude_none=True) if item.identity else None,
    )


def _answer(ctx: Context, user: store.NewUser, outcome: store.Outcome) -> dict[str, Any]:
    if outcome.result == store.ELSEWHERE or outcome.subject is None:
        return _refused(
            410, ELSEWHERE.format(quote_input(user.internal_id or "")), user.contact, user.internal_id
        )
    subject = outcome.subject
    return CreateSubjectOut(
        status=201,
        message=MESSAGES[outcome.result],
        user=PartialSubjectOut(
            id=web_subject_did(ctx.settings.public_url, subject.id),
            contact=subject.contact,
            internalId=subject.internal_id,
        ),
    ).model_dump(mode="json")


# --- reading ------------------------------------------------------------------------------------


async def get_user(
    ctx: Context, actor: Actor, org_id: str, *, contact: str | None, did: str | None, internal_id: str | None
) -> UserOut:
    """The organization's user named by exactly one of contact, DID or internalId; ``NotFound`` for
    none (another organization's user is none)."""
    given = [
        name for name, v in (("contact", contact), ("id", did), ("internalId", internal_id)) if v is not None
    ]
    if len(given) != 1:
        raise Invalid("Give exactly one of contact, id and internalId")
    for value in (contact, did, internal_id):
        if value is not None and "\x00" in value:
            raise Invalid(f"{given[0]} must not contain NUL characters")
    normalized = subject_id = None
    if contact is not None:
        try:
            normalized, _ = normalize_contact(contact)
        except ValueError as exc:
            raise Invalid(f"contact: {exc}") from exc
    if did is not None:
        subject_id = subject_id_from_did(did)
        if subject_id is None:
            raise NotFound("No user of this organization has that id")
    user = await run_db(
        ctx.engine,
        store.find_user,
        ctx.engine,
        ctx.cipher,
        org_id,
        contact=normalized,
        subject_id=subject_id,
        internal_id=internal_id,
    )
    if user is None:
        raise NotFound(f"No user of this organization has that {given[0]}")
    return user_out(ctx, user)


def user_out(ctx: Context, user: store.User) -> UserOut:
    s = user.subject
    did = web_subject_did(ctx.settings.public_url, s.id)
    return UserOut(
        id=did,
        contacts=[UserContactOut(id=did, contact=s.contact)],
        identityStatus=s.identity_status,
        kyc=s.kyc,
        hasIdentity=user.has_identity,
        internalId=s.internal_id,
        organization=UserOrganizationOut(contacts=user.extra_contacts),
        createdAt=s.created_at,
    )
