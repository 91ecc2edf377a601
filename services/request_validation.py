"""A new credential request checked before it is stored (``services.requests.create``): its
contacts, its ``redirectUrl``, each POLICY credential's action pinned to the organization's
newest published version of it (CONTRACT 6), and the credentials made of the approvals and
workflows it names (``services.approvals``); every problem is listed at once (``Invalid``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from core.origins import BadOrigin, check_url
from services import approvals
from services.context import Context
from services.errors import Invalid
from store import actions as action_store
from store import requests as store
from trust.did import web_organization_did
from wire.models import CreateRequestIn

MAX_CREDENTIALS = 10  # inline and made of approvals together


def _to_new_request(
    body: CreateRequestIn,
    organization_did: str,
    contacts: list[tuple[str, str, str | None]],
    pinned_actions: dict[int, dict[str, Any]],
    contact_hash: Callable[[str], str],
    bounds: dict[int, list[dict[str, Any]]],
    from_approvals: list[store.NewCredential],
) -> store.NewRequest:
    """The request to store; ``pinned_actions`` replaces the ``action`` of POLICY credentials (by
    position) with the pinned version and the filled userParams; ``bounds`` are their action's
    limits resolved (by position)."""
    # the organization's DID is always authorized and listed first (CONTRACT 3): store the others once
    extra_dids = list(dict.fromkeys(d for d in body.authorizedDIDs if d != organization_did))
    return store.NewRequest(
        security_level=body.securityLevel.value,
        contacts=[store.NewContact(c, kind, internal, contact_hash(c)) for c, kind, internal in contacts],
        credentials=[
            store.NewCredential(
                resource_type=c.type,
                name=c.name,
                description=c.description,
                internal_id=c.internalId,
                scope=c.scope,
                tags=c.tags,
                action=pinned_actions.get(i, c.action.model_dump() if c.action else None),
                data=[d.model_dump() for d in c.data] if c.data else None,
                valid_from=c.validFrom,
                valid_until=c.validUntil,
                max_executions=c.maxExecutions,
                limits=bounds.get(i),
            )
            for i, c in enumerate(body.credentials)
        ]
        + from_approvals,
        name=body.name,
        language=body.language.value,
        redirect_url=body.redirectUrl,
        internal_id=body.internalId,
        authorized_dids=extra_dids,
    )


Pinned = tuple[dict[int, dict[str, Any]], dict[int, list[dict[str, Any]]], list[str]]


def _pin_actions(ctx: Context, org_id: str, body: CreateRequestIn) -> Pinned:
    """Each POLICY credential's action checked against the organization's newest published version
    of it (CONTRACT 6), and that version's limits resolved from the userParams (issue 31); by
    credential position, with one message per problem."""
    pinned: dict[int, dict[str, Any]] = {}
    bounds: dict[int, list[dict[str, Any]]] = {}
    problems: list[str] = []
    for i, cred in enumerate(body.credentials):
        if cred.action is None:
            continue
        where = f"credentials.{i}.action"
        pin, found = action_store.pin_for_request(
            ctx.engine, org_id, cred.action.id, cred.action.userParams, where=where
        )
        problems += found
        if pin is None:
            continue
        pinned[i] = pin
        resolved, found = action_store.bounds_for_pin(ctx.engine, pin, where=where)
        problems += found
        if resolved is not None:
            bounds[i] = resolved
    return pinned, bounds, problems


async def validated(ctx: Context, org_id: str, body: CreateRequestIn) -> store.NewRequest:
    """The request to store, or ``Invalid`` listing every contact and action problem at once."""
    contacts, problems = body.normalized_contacts()
    if body.redirectUrl is not None and not ctx.settings.allow_loopback_http:
        try:  # the model checked its shape; production also refuses http on a local host
            check_url(body.redirectUrl, allow_loopback_http=False)
        except BadOrigin as exc:
            problems.append(f"redirectUrl: {exc}")
    pinned: dict[int, dict[str, Any]] = {}
    bounds: dict[int, list[dict[str, Any]]] = {}
    action_problems: list[str] = []
    if any(c.action is not None for c in body.credentials):
        pinned, bounds, action_problems = await asyncio.to_thread(_pin_actions, ctx, org_id, body)
    made = approvals.Made([], [])
    if body.resourcesIds or body.groupIds:
        made = await asyncio.to_thread(
            approvals.credentials_for_request, ctx, org_id, body.resourcesIds, body.groupIds
        )
        action_problems += made.problems
    total = len(body.credentials) + len(made.credentials)
    if not body.credentials and not (body.resourcesIds or body.groupIds):
        problems.append("give credentials, resourcesIds (approvals) or groupIds (workflows)")
    elif total > MAX_CREDENTIALS:
        problems.append(
            f"the request holds {total} credentials with its approvals; at most {MAX_CREDENTIALS}"
        )
    if made.forms and len(contacts) > 1:
        problems.append("a request with a FORM approval names one contact: that subject fills it in")
    if problems or action_problems:
        raise Invalid(problems + action_problems)
    return _to_new_request(
        body,
        web_organization_did(ctx.settings.public_url, org_id),
        contacts,
        pinned,
        ctx.journey.contact_hash,
        bounds,
        made.credentials,
    )
