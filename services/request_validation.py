"""A new credential request checked before it is stored (``services.requests.create``): its
contacts, its ``redirectUrl``, each POLICY credential's action pinned to the organization's
newest published version of it (CONTRACT 6), the credentials made of the approvals and
workflows it names (``services.approvals``), and each DOCUMENT credential's placements against
the request's contacts and its PDF's pages (``wire.placements``), each inline PDF (``CredentialIn.pdf``)
checked as a DOCUMENT approval's; every problem is listed at once (``Invalid``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from core.origins import BadOrigin, check_url
from core.text import shown
from services import approvals
from services.context import Context
from services.errors import Invalid
from store import actions as action_store
from store import orgs as org_store
from store import requests as store
from trust.did import web_organization_did
from wire.contacts import NormalContact, normalize_contact
from wire.identity_match import normalize_document_id
from wire.inline_credentials import pdf_bytes
from wire.models import CreateRequestIn, CredentialIn

# (organization name, credential) -> the page count of the credential's PDF as it is first rendered;
# the API passes one (``api.pdf``): the service layer does not draw PDFs
PageCount = Callable[[str, CredentialIn], Awaitable[int]]

MAX_CREDENTIALS = 10  # inline and made of approvals together


def _to_new_request(
    body: CreateRequestIn,
    organization_did: str,
    contacts: list[NormalContact],
    pinned_actions: dict[int, dict[str, Any]],
    contact_hash: Callable[[str], str],
    bounds: dict[int, list[dict[str, Any]]],
    seal: Callable[[str], bytes],
    placements: dict[int, list[dict[str, Any]]],
    document_hash: Callable[[str], str],
    from_approvals: list[store.NewCredential],
    pdfs: dict[int, InlinePdf],
) -> store.NewRequest:
    """The request to store; by credential position, ``pinned_actions`` replaces a POLICY's ``action``
    (the pinned version, filled userParams), ``bounds`` its action's limits, ``pdfs`` a PDF given."""
    # the organization's DID is always authorized and listed first (CONTRACT 3): store the others once
    extra_dids = list(dict.fromkeys(d for d in body.authorizedDIDs if d != organization_did))
    return store.NewRequest(
        security_level=body.securityLevel.value,
        contacts=[
            store.NewContact(
                c.contact,
                c.kind,
                c.internal_id,
                contact_hash(c.contact),
                secondary_sealed=seal(c.secondary[0]) if c.secondary else None,
                secondary_kind=c.secondary[1] if c.secondary else None,
                signer_quality=c.signer_quality,
                doc_id_hash=document_hash(normalize_document_id(doc)) if doc else None,
            )
            for c, doc in zip(contacts, _doc_ids(body), strict=True)
        ],
        credentials=[
            store.NewCredential(
                resource_type="DOCUMENT" if c.type == "JSON" else c.type,
                name=c.name,
                description=c.description,
                internal_id=c.internalId,
                scope=c.scope,
                tags=c.tags,
                action=pinned_actions.get(i, c.action.model_dump() if c.action else None),
                data=_data(c, pdfs.get(i)),
                valid_from=c.validFrom,
                valid_until=c.validUntil,
                max_executions=c.maxExecutions,
                limits=bounds.get(i),
                placements=placements.get(i),
                pdf=(pdfs[i].facts["digestSRI"], pdfs[i].pdf) if i in pdfs else None,
            )
            for i, c in enumerate(body.credentials)
        ]
        + from_approvals,
        name=body.name,
        language=body.language.value,
        redirect_url=body.redirectUrl,
        internal_id=body.internalId,
        authorized_dids=extra_dids,
        iframe_pub_key=body.iframe.pubKey if body.iframe else None,
        trusted_session_seconds=body.iframe.cookie.seconds if body.iframe and body.iframe.cookie else None,
    )


@dataclass(frozen=True)
class InlinePdf:
    """A DOCUMENT credential's own PDF (``CredentialIn.pdf``) checked: its bytes and its facts
    (``services.approvals.pdf_facts``: digestSRI, size, pages)."""

    pdf: bytes
    facts: dict[str, Any]


def _inline_pdfs(body: CreateRequestIn) -> tuple[dict[int, InlinePdf | None], list[str]]:
    """Each inline PDF checked as an approval's is (by credential position; None when refused),
    with one message per refused PDF, named ``credentials.<i>.pdf``."""
    found: dict[int, InlinePdf | None] = {}
    problems: list[str] = []
    for i, cred in enumerate(body.credentials):
        if cred.pdf is None:
            continue
        pdf = pdf_bytes(cred.pdf)  # the model checked the base64 and the size
        try:
            found[i] = InlinePdf(pdf, approvals.pdf_facts(pdf))
        except Invalid as exc:
            found[i] = None
            problems.append(f"credentials.{i}.pdf: {exc}")
    return found, problems


def _data(cred: CredentialIn, pdf: InlinePdf | None) -> list[dict[str, Any]] | None:
    """What a credential's document holds: its own PDF's item first (as a DOCUMENT approval's),
    then its items; a JSON credential's object as one item (as a JSON approval's)."""
    if cred.json_ is not None:
        return [approvals.json_item(cred.name, cred.json_)]
    items = [approvals.pdf_item(cred.name, pdf.facts, placements=[])] if pdf is not None else []
    items += [d.model_dump() for d in cred.data or ()]
    return items or None


def _doc_ids(body: CreateRequestIn) -> list[str | None]:
    """Each contact's ``docId`` (None when not given), in the order of ``contacts``."""
    return [None if isinstance(item, str) else item.docId for item in body.contacts]


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


async def _placements(
    ctx: Context,
    org_id: str,
    body: CreateRequestIn,
    contacts: list[NormalContact],
    page_count: PageCount | None,
    own_pdfs: dict[int, InlinePdf | None],
) -> tuple[dict[int, list[dict[str, Any]]], list[str]]:
    """Each DOCUMENT credential's placements as stored (by credential position), each naming one
    of the request's ``contacts`` (normalized) and a page of the credential's PDF: its own PDF's
    pages when it was given one (``own_pdfs``; a refused PDF's placements are not looked at), else
    those of its sheet as first rendered (``page_count``); with one message per problem."""
    placed: dict[int, list[dict[str, Any]]] = {}
    problems: list[str] = []
    known = {c.contact for c in contacts}
    org_name: str | None = None
    for i, cred in enumerate(body.credentials):
        if not cred.placements or (i in own_pdfs and own_pdfs[i] is None):
            continue
        pages = None
        own = own_pdfs.get(i)
        if own is not None:
            pages = int(own.facts["pages"])
        elif page_count is not None:
            if org_name is None:
                org_name = (await asyncio.to_thread(org_store.get_organization, ctx.engine, org_id)).name
            pages = await page_count(org_name, cred)
        stored: list[dict[str, Any]] = []
        for j, placement in enumerate(cred.placements):
            where = f"credentials.{i}.placements.{j}"
            try:
                contact, _ = normalize_contact(placement.contact)
            except ValueError as exc:
                problems.append(f"{where}.contact: {exc}")
                continue
            if contact not in known:
                problems.append(f"{where}.contact: {shown(contact)} is not one of the request's contacts")
                continue
            if pages is None:
                problems.append(f"{where}: placements are taken through the API only")
                continue
            if placement.pageIndex >= pages:
                problems.append(
                    f"{where}.pageIndex: page {placement.pageIndex} is off the document, whose PDF has "
                    f"{pages} page{'s' if pages != 1 else ''} (pageIndex counts from 0)"
                )
                continue
            stored.append(placement.stored(contact))
        placed[i] = stored
    return placed, problems


async def validated(
    ctx: Context, org_id: str, body: CreateRequestIn, page_count: PageCount | None = None
) -> store.NewRequest:
    """The request to store, or ``Invalid`` listing every contact, action and placement problem at
    once. ``page_count`` gives a DOCUMENT credential's page count, to check its placements."""
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
    own_pdfs: dict[int, InlinePdf | None] = {}
    if any(c.pdf is not None for c in body.credentials):
        own_pdfs, pdf_problems = await asyncio.to_thread(_inline_pdfs, body)
        problems += pdf_problems
    placements, placement_problems = await _placements(ctx, org_id, body, contacts, page_count, own_pdfs)
    from_approvals = made.credentials
    if made.placements and len(contacts) == len(body.contacts):  # else a contact is refused already
        from_approvals, found = approvals.placed(made, [c.contact for c in contacts])
        placement_problems += found
    if problems or action_problems or placement_problems:
        raise Invalid(problems + action_problems + placement_problems)
    return _to_new_request(
        body,
        web_organization_did(ctx.settings.public_url, org_id),
        contacts,
        pinned,
        ctx.journey.contact_hash,
        bounds,
        ctx.cipher.encrypt,  # a secondary contact is kept only encrypted (store.tables.RequestSubject)
        placements,
        ctx.journey.document_hash,
        from_approvals,
        {i: pdf for i, pdf in own_pdfs.items() if pdf is not None},
    )
