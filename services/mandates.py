"""Mandates and documents: issuing a credential every subject accepted (its forms built and signed
here, stored by ``store.mandates`` in one transaction), recording one that can never be signed,
revoking, a credential's detail, and what the dashboard reads: a filtered page of an
organization's credentials, a credential with its subjects and verifications.

Issuance is done by the request's workflow (actor ``temporal``); its records name it.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Engine

from core.actors import Actor
from core.ids import UUID_PATTERN, colons_decoded, is_object_id, urn
from core.kinds import CredentialStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from core.text import quote_input, shown, text_problem, unsafe_characters
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import audit_queries, keys, pdfs, revocation, status_lists, verifications
from store import mandates as store
from store.audit import RecordCheck
from store.db import run_db, utcnow
from store.mandates import REVOCATION, Draft, IssuanceFailed, Issued, NotIssuable, Signed
from store.revocation import CredentialFilter as CredentialFilter  # what ``find`` lists
from store.revocation import CredentialRecord as CredentialRecord  # a credential with its request
from store.revocation import ListedCredential as ListedCredential  # a credential as ``find`` lists it
from store.tables import AuditRecord, Decision, Subject, Verification
from trust import credentials as vc
from trust import jcs, receipts
from trust.context import context_url
from trust.did import web_organization_did, web_subject_did
from trust.eddsa_jcs import MalformedProof
from trust.jcs import CanonicalizationError
from trust.keys import Ed25519KeyPair

__all__ = [
    "CredentialView",
    "IssuanceFailed",
    "Issued",
    "NotIssuable",
    "credential_detail",
    "credential_filter",
    "credential_view",
    "find",
    "issue",
    "record_issuance_failure",
    "revocation_reason",
    "revoke",
]
REVOKE_ACTION = "REVOKE"
BAD_REFERENCE = (
    "must be a mandate URN urn:via:credential:<uuid> or a credential id "
    "(24 lower-case hexadecimal characters)"
)

# what signing raises for content that can never be signed (CanonicalizationError is a ValueError)
UNSIGNABLE = (ValueError, TypeError, OverflowError, RecursionError, MalformedProof)
PAGE_SIZE = 20
MAX_PAGE = 100_000
PAGE_RE = re.compile(r"[0-9]{1,6}")  # ASCII digits: str.isdigit and int also take other scripts'
MAX_REASON = 500  # the column's size, and the API's limit
DECISION_URN_RE = re.compile(f"urn:via:decision:{UUID_PATTERN}")  # an evidence id
VERIFICATIONS_SHOWN = 50


def issue(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    credential_id: str,
    now: datetime | None = None,
    *,
    actor: Actor,
) -> Issued:
    """Issue ``credential_id`` if it is not issued yet (idempotent); ``IssuanceFailed`` when its
    content can never be signed, ``NotIssuable`` when it is not accepted by all or no longer open."""
    issuer_key = keys.service_signing_key(engine, cipher, settings)  # before the write lock
    now = now or utcnow()
    return store.issue(
        engine, issuer_key, credential_id, now, partial(_sign, settings, issuer_key, now), str(actor)
    )


def record_issuance_failure(
    engine: Engine, actor: Actor, credential_id: str, reason: str, now: datetime | None = None
) -> bool:
    """Mark an accepted credential that can never be signed ``FAILED`` (``MANDATE_ISSUANCE_FAILED``
    naming ``actor``), once; False when it is no longer open."""
    return store.record_issuance_failure(engine, credential_id, reason, now, str(actor))


def reference(raw: str, name: str) -> tuple[str, str]:
    """A credential named by its id or its mandate URN (percent-encoded once more or not)."""
    value = colons_decoded(raw)  # a client that encoded the URN twice
    found = revocation.parse_reference(value)
    if found is None:
        raise Invalid(f"{name} {BAD_REFERENCE}")
    return found


async def revoke(
    ctx: Context, actor: Actor, org_id: str, raw_id: str, reason: str | None
) -> revocation.Revoked:
    """Revoke the organization's ACTIVE mandate (final): its receipt, the REVOKE item of its document
    form and ``MANDATE_REVOKED`` naming ``actor``, in one transaction. ``NotFound`` for none of the
    organization's, ``Conflict`` for a mandate that is not ACTIVE; ``Invalid`` for a reason that is
    not one line of printable text (``core.text``: every surface that revokes comes here, so none
    can sign another into the receipt)."""
    problem = text_problem(reason) if reason is not None else None
    if problem is not None:
        raise Invalid(f"reason {problem}")
    found = reference(raw_id, "mandateId")
    settings = ctx.settings
    key = await run_db(
        ctx.engine, keys.service_signing_key, ctx.engine, ctx.cipher, settings
    )  # before the lock
    # whole seconds: revokedAt, the receipt's timestamp and the proof's created are one instant
    now = utcnow().replace(microsecond=0)

    def sign(cred: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        receipt = receipts.receipt(
            key=key,
            context_url=context_url(settings.public_url),
            receipt_id=urn("receipt"),
            type=receipts.MANDATE_REVOKED,
            timestamp=now,
            credential_id=cred.mandate_id,
            request_id=cred.request_id,
            reason=reason,
        )
        return receipt, vc.add_document_action(cred.document_credential, key, REVOKE_ACTION, now)

    try:
        return await asyncio.to_thread(
            revocation.revoke, ctx.engine, key, org_id, found, reason, now, sign, str(actor)
        )
    except revocation.NotFound as exc:
        raise NotFound(f"Credential {shown(raw_id)} not found") from exc
    except revocation.NotActive as exc:
        raise Conflict(
            f"Credential {shown(raw_id)} is {exc.status}: only an ACTIVE mandate can be revoked"
        ) from exc


async def credential_detail(ctx: Context, org_id: str, raw_id: str) -> revocation.CredentialRecord:
    """The organization's credential (by id or mandate URN) with its request and decisions."""
    found = reference(raw_id, "credentialId")
    record = await asyncio.to_thread(revocation.find_credential, ctx.engine, org_id, found)
    if record is None:
        raise NotFound(f"Credential {shown(raw_id)} not found")
    return record


async def credential_events(
    ctx: Context, org_id: str, raw_id: str
) -> tuple[revocation.CredentialRecord, list[tuple[AuditRecord, RecordCheck]]]:
    """The organization's audit records about one of its credentials (by id or mandate URN:
    records name either), in chain order, each checked: content, signature, and link."""
    record = await credential_detail(ctx, org_id, raw_id)
    cred = record.credential
    ids = [i for i in (cred.id, cred.mandate_id) if i]
    found = await asyncio.to_thread(audit_queries.credential_records, ctx.engine, ctx.settings, org_id, ids)
    return record, found


def revocation_reason(raw: str) -> str:
    """A revocation's reason as a person typed it, surrounding spaces dropped: required, at most
    ``MAX_REASON`` characters, and one line of printable text (``core.text.unsafe_characters``: no
    control, line break or bidirectional override), since it is shown in a line of the credential's
    page and PDF, where a reordering character could make it read as something else."""
    reason = raw.strip()
    if not reason:
        raise Invalid("Give a reason for the revocation: it is recorded with it and in its receipt.")
    if len(reason) > MAX_REASON:
        raise Invalid(f"The reason is {len(reason)} characters long: at most {MAX_REASON}.")
    unsafe = unsafe_characters(reason)
    if unsafe:
        raise Invalid(
            "The reason must be one line of printable characters: it holds " + ", ".join(unsafe[:5])
        )
    return reason


# --- what the dashboard reads -------------------------------------------------------------------


def credential_filter(
    status: str | None, request_id: str | None, page: str | None, page_size: int = PAGE_SIZE
) -> revocation.CredentialFilter:
    """The store's filter for the query values as they came (an empty one is no filter): ``Invalid``
    naming every value no filter takes."""
    problems = []
    if status and status not in tuple(CredentialStatus):
        known = ", ".join(CredentialStatus)
        problems.append(f"status {quote_input(status)} is not a credential status: one of {known}")
    request_id = (request_id or "").strip() or None
    if request_id is not None and not is_object_id(request_id):
        problems.append(
            f"requestId {quote_input(request_id)} is not a request id: 24 lower-case hexadecimal characters"
        )
    number = 1
    if page:
        if PAGE_RE.fullmatch(page) and 1 <= int(page) <= MAX_PAGE:
            number = int(page)
        else:
            problems.append(f"page {quote_input(page)} is not a page number from 1 to {MAX_PAGE}")
    if problems:
        raise Invalid(problems)
    return revocation.CredentialFilter(status or None, request_id, number - 1, page_size)


async def find(ctx: Context, org_id: str, filters: CredentialFilter) -> tuple[list[ListedCredential], int]:
    """A page of the organization's credentials (newest request first) and how many match in all."""
    return await asyncio.to_thread(revocation.list_credentials, ctx.engine, org_id, filters)


@dataclass(frozen=True)
class CredentialView:
    """A credential as its organization's members see it: the detail, every subject of its request
    (decided or not), and its newest verifications with how many there are in all."""

    record: revocation.CredentialRecord
    subjects: list[Subject]
    verifications: list[Verification]
    verification_count: int


async def credential_view(
    ctx: Context, org_id: str, raw_id: str, shown_verifications: int = VERIFICATIONS_SHOWN
) -> CredentialView:
    """The organization's credential (by id or mandate URN) with its subjects and verifications;
    ``Invalid`` for a malformed reference, ``NotFound`` for none of the organization's."""
    record = await credential_detail(ctx, org_id, raw_id)
    cred = record.credential
    subjects = await asyncio.to_thread(revocation.subjects_of, ctx.engine, cred.request_id)
    found: tuple[list[Verification], int] = ([], 0)
    if cred.mandate_id is not None:
        found = await asyncio.to_thread(
            verifications.of_credential, ctx.engine, cred.id, cred.mandate_id, shown_verifications
        )
    return CredentialView(record, subjects, *found)


def _sign(settings: Settings, key: Ed25519KeyPair, now: datetime, draft: Draft) -> Signed:
    cred = draft.credential
    try:
        return _signed(settings, key, now, draft)
    except UNSIGNABLE as exc:  # the transaction rolls back: no status entry is spent
        reason = "not_canonicalizable" if isinstance(exc, CanonicalizationError) else "malformed_content"
        raise IssuanceFailed(cred.id, reason) from exc


def _evidences(settings: Settings, draft: Draft) -> list[dict[str, str]]:
    """One evidence item per decision: its JCS form, where it is kept."""
    request = draft.request
    location = f"{settings.public_url.rstrip('/')}/request/{request.id}"
    evidences = []
    for _, decision in draft.acceptances:
        evidences.append(vc.evidence_entry(decision.id, _evidence_text(settings, decision), location))
    return evidences


def _evidence_text(settings: Settings, decision: Decision) -> bytes:
    """What a mandate's evidence item commits to (its digestSRI): the JCS form of the acceptance."""
    record = {
        "id": decision.id,
        "subject": web_subject_did(settings.public_url, decision.subject_id),
        "credential": decision.credential_id,
        "accepted": True,
        "channel": decision.channel,
        "surface": decision.surface,
        "decidedAt": decision.decided_at.isoformat().replace("+00:00", "Z"),
    }
    return jcs.canonicalize(record)


async def evidence(ctx: Context, org_id: str, raw_id: str) -> bytes:
    """The text an evidence item of one of the organization's mandates commits to, by its id (a
    decision URN): ``NotFound`` for a decision that is no acceptance of the organization's."""
    decision_id = colons_decoded(raw_id)
    if not DECISION_URN_RE.fullmatch(decision_id):
        raise Invalid(f"evidenceId {shown(raw_id)} is not an evidence id (urn:via:decision:<uuid>)")
    found = await asyncio.to_thread(store.accepted_decision, ctx.engine, org_id, decision_id)
    if found is None:
        raise NotFound(f"Evidence {shown(raw_id)} not found")
    return _evidence_text(ctx.settings, found)


def _status_entry(settings: Settings, list_id: str, index: int) -> dict[str, Any]:
    url = settings.status_list_url(list_id)
    return {
        "id": f"{url}#{index}",
        "type": "BitstringStatusListEntry",
        "statusPurpose": REVOCATION,
        "statusListIndex": str(index),
        "statusListCredential": url,
    }


def _signed(settings: Settings, key: Ed25519KeyPair, now: datetime, draft: Draft) -> Signed:
    cred, request, action_name = draft.credential, draft.request, draft.action_name
    grantors = [web_subject_did(settings.public_url, subject.id) for subject, _ in draft.acceptances]
    qualities = [
        {"id": web_subject_did(settings.public_url, subject.id), "signerQuality": quality}
        for subject, _ in draft.acceptances
        if (quality := draft.signer_qualities.get(subject.id))
    ]
    evidences = _evidences(settings, draft)
    status = _status_entry(settings, draft.status_list_id, draft.status_list_index)
    org_did = web_organization_did(settings.public_url, request.organization_id)
    mandate_id = urn("credential")
    valid_from = cred.valid_from or now
    document = vc.document_credential(
        credential_id=mandate_id,
        issuer_key=key,
        context_url=context_url(settings.public_url),
        organization_did=org_did,
        data=_document_data(cred, action_name),
        valid_from=valid_from,
        valid_until=cred.valid_until,
        issuance_date=now,
        evidences=evidences,
        credential_status=status,
        signer_qualities=qualities,
        placements=_signed_placements(settings, cred, draft),
    )
    w3c = document
    if cred.resource_type == "POLICY":
        authorized = list(dict.fromkeys([org_did, *request.authorized_dids]))
        w3c = vc.mandate_credential(
            credential_id=mandate_id,
            issuer_key=key,
            context_url=context_url(settings.public_url),
            organization_did=org_did,
            grantors=grantors,
            scope=cred.scope or "",
            authorized_dids=authorized,
            valid_from=valid_from,
            valid_until=cred.valid_until,
            created=now,
            action=cred.action,
            evidences=evidences,
            credential_status=status,
            limits=cred.limits,
            max_executions=cred.max_executions,
            signer_qualities=qualities,
        )
    return Signed(mandate_id, w3c, document)


def _signed_placements(settings: Settings, cred: Any, draft: Draft) -> list[dict[str, Any]]:
    """A DOCUMENT's placements as signed: each signer named by their DID, not their contact (the
    credential names its grantors by DID). Every placement's contact is one of the request's, all
    of whom accepted before issuance."""
    subjects = {subject.contact: subject.id for subject, _ in draft.acceptances}
    signed = []
    for placement in cred.placements or []:
        if placement.get("contact") not in subjects:  # checked at creation: a record changed since
            raise ValueError("a placement names no subject of the request")
        did = web_subject_did(settings.public_url, subjects[placement["contact"]])
        signed.append({"subject": did} | {k: v for k, v in placement.items() if k != "contact"})
    return signed


def _document_data(cred: Any, action_name: str | None) -> list[dict[str, Any]]:
    """What the subject approved, as document items: the data of a DOCUMENT, or for a mandate the
    action and each approved userParam."""
    if cred.resource_type != "POLICY":
        return [dict(item) for item in cred.data or []]
    action = cred.action or {}
    items = [
        _item("Action", action_name or str(action.get("id", ""))),
        _item("Action version", str(action.get("version", ""))),
    ]
    if cred.scope:
        items.append(_item("Scope", cred.scope))
    for name, value in (action.get("userParams") or {}).items():
        items.append(_item(name, value if isinstance(value, str) else jcs.canonicalize(value).decode()))
    return items


def _item(label: str, value: str) -> dict[str, Any]:
    return {"label": label, "type": "text", "value": value, "hidden": False, "fields": []}


# --- a document's PDF, and the public status lists -------------------------------------------------


def kept_pdf(ctx: Context, credential_id: str, content_digest: str) -> bytes | None:
    """The PDF of a credential's sheet (``content_digest``) a process rendered and kept, shared by
    every process (the API's renderer, ``api.pdf``, looks here first); None when none was."""
    return pdfs.kept_pdf(ctx.engine, credential_id, content_digest)


def keep_pdf(ctx: Context, credential_id: str, content_digest: str, pdf: bytes) -> None:
    """Keep a credential's rendered PDF for every process (``kept_pdf``)."""
    pdfs.keep_pdf(ctx.engine, credential_id, content_digest, pdf)


STATUS_LIST_TTL_SECONDS = status_lists.TTL_SECONDS  # how long a verifier may cache a status list


async def status_list(ctx: Context, list_id: str) -> status_lists.ServedList | None:
    """The signed Bitstring Status List credential ``list_id`` as served (on a thread), None for
    no such list."""
    return await asyncio.to_thread(status_lists.served_list, ctx.engine, ctx.cipher, ctx.settings, list_id)
