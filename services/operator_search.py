"""What operators reach from a shell (``mandatum request``, ``webhook``, ``mandate``), acting
for every organization: which organization holds a request, a webhook event or a mandate, and
finding requests by any key a caller quotes. The actions themselves are the dashboard's
(``services.requests``, ``services.webhooks``, ``services.mandates``), called with the
organization found here and the operator as actor.

Request ids, mandate URNs and webhook event ids are unique in the installation, so they are found
in every organization. An ``internalId`` is the integrator's own and a contact is a person several
organizations may ask, so those are looked up in one named organization only, with the filter of
``GET /request`` (``services.requests.request_filter``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from core.ids import is_object_id
from core.text import shown
from services import requests
from services.context import Context
from services.errors import Invalid, NotFound
from services.mandates import reference
from store import orgs, revocation
from store import request_queries as queries
from store import webhooks as webhook_store
from store.requests import RequestBundle
from store.tables import WebhookEvent
from wire.contacts import normalize_contact

MANDATE_PREFIX = "urn:via:credential:"
EVENT_PREFIX = "urn:via:event:"
FOUND_AT_MOST = 50


def request_owner(ctx: Context, request_id: str) -> str:
    """The organization of the request (``Invalid`` for a malformed id, ``NotFound`` for none)."""
    requests.check_request_id(request_id)
    org_id = queries.organization_of(ctx.engine, request_id)
    if org_id is None:
        raise NotFound(f"Request {request_id} not found")
    return org_id


def subject_named(raw: str) -> str:
    """The subject id a command's ``--subject`` names: the id itself, or the one ending one of this
    service's subject DIDs."""
    return (queries.subject_id_from_did(raw) or raw) if raw.startswith("did:") else raw


def event(ctx: Context, event_id: str) -> WebhookEvent:
    """The webhook event, whoever's it is (``NotFound`` for none)."""
    try:
        return webhook_store.get_event(ctx.engine, event_id)
    except orgs.NotFound as exc:
        raise NotFound(f"webhook event {shown(event_id)} not found") from exc


def mandate_owner(ctx: Context, raw_id: str) -> str:
    """The organization of the credential a mandate URN (or credential id) names."""
    found = revocation.owner_of(ctx.engine, reference(raw_id, "the mandate"))
    if found is None:
        raise NotFound(f"Credential {shown(raw_id)} not found")
    return found[0]


@dataclass(frozen=True)
class Match:
    bundle: RequestBundle
    matched_by: str  # requestId | mandateId | eventId | internalId | contact


def global_key(query: str) -> str | None:
    """Which installation-wide key ``query`` looks like (``requestId``, ``mandateId``, ``eventId``);
    None for any other text (an ``internalId`` or a contact)."""
    if is_object_id(query):
        return "requestId"
    if query.lower().startswith(MANDATE_PREFIX):
        return "mandateId"
    if query.startswith(EVENT_PREFIX):
        return "eventId"
    return None


async def find_requests(ctx: Context, query: str, org_id: str | None = None) -> list[Match]:
    """The requests ``query`` names, at most ``FOUND_AT_MOST``: by request id, mandate URN or
    webhook event id in every organization (only ``org_id``'s when given); with ``org_id``, also
    by ``internalId`` and by a subject's contact, newest first. Without ``org_id``, any other
    text is ``Invalid``."""
    text = query.strip()
    key = global_key(text)
    if not text or (key is None and org_id is None):
        raise Invalid(
            "a request id, mandate URN or webhook event id is found in every organization; "
            "an internalId or a contact only in the organization named"
        )
    if org_id is not None:
        try:
            await asyncio.to_thread(orgs.get_organization, ctx.engine, org_id)
        except orgs.NotFound as exc:
            raise NotFound(str(exc)) from exc
    found: list[Match] = []
    if key is not None:
        owner = await asyncio.to_thread(by_global_key, ctx, key, text)
        if owner is not None and org_id in (None, owner[0]):
            found.append(Match(await requests.get(ctx, owner[0], owner[1]), key))
    if org_id is not None:
        found += await _in_organization(ctx, text, org_id)
    unique: dict[str, Match] = {}
    for match in found:  # a request matched by two keys is listed once, by the first
        unique.setdefault(match.bundle.request.id, match)
    return list(unique.values())[:FOUND_AT_MOST]


def by_global_key(ctx: Context, key: str, text: str) -> tuple[str, str] | None:
    """(organization, request) the key names; None when nothing has it."""
    if key == "requestId":
        org_id = queries.organization_of(ctx.engine, text)
        return None if org_id is None else (org_id, text)
    if key == "mandateId":
        return revocation.owner_of(ctx.engine, reference(text, "the mandate"))
    try:
        found = webhook_store.get_event(ctx.engine, text)
    except orgs.NotFound:
        return None
    if found.request_id is None:
        raise NotFound(f"webhook event {text} is about no request (a test event)")
    return found.organization_id, found.request_id


async def _in_organization(ctx: Context, text: str, org_id: str) -> list[Match]:
    """The organization's requests with ``text`` as ``internalId``, then those with a subject of
    that contact (when it is one), each newest first."""
    queries_by_key = [("internalId", requests.RequestQuery(internal_id=text, page_size=FOUND_AT_MOST))]
    try:
        normalize_contact(text)
        queries_by_key.append(("contact", requests.RequestQuery(contact=text, page_size=FOUND_AT_MOST)))
    except ValueError:
        pass  # not a contact: only the internalId can match
    found: list[Match] = []
    for name, query in queries_by_key:
        filters = requests.request_filter(ctx, query)
        if filters is not None:
            bundles, _ = await requests.find(ctx, org_id, filters)
            found += [Match(b, name) for b in bundles]
    return found
