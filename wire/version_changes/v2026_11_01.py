"""2026-11-01: SPEC.md's shapes, each change undone towards 2026-09-01 (what SDK 1.2.0 reads and
sends).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from wire.json_depth import MAX_JSON_DEPTH, json_depth_exceeds
from wire.version_changes.legacy import (
    SECURITY_LEVELS_OF,
    legacy_credential,
    legacy_security_level,
    legacy_status,
    legacy_subject,
    without,
)
from wire.versioning import ERROR_BODY, BadBody, Body, Query, VersionChange

V2026_11_01 = "2026-11-01"


def _created_request_was_a_summary(body: Body) -> Body:
    request = body["data"]
    return {
        "id": request["id"],
        "credentials": [
            {"id": c["id"], "name": c.get("name"), "internalId": c.get("internalId")}
            for c in request["credentials"]
        ],
        "subjects": [{"contact": s["contact"], "id": s["id"], "link": None} for s in request["subjects"]],
    }


def _security_levels_were_named_humanos(body: Body) -> Body:
    level = body.get("securityLevel")
    if not isinstance(level, str):  # absent, or not a name: the newest version refuses it as sent
        return body
    return {**body, "securityLevel": SECURITY_LEVELS_OF.get(level, level)}


def _security_level_query_was_named_humanos(query: Query) -> Query:
    return [
        (n, SECURITY_LEVELS_OF.get(v, v) if n in ("securityLevel", "securityLevel[]") else v)
        for n, v in query
    ]


def _users_became_contacts(body: Body) -> Body:
    """2026-09-01 named the subjects ``users: [{contact, ...}]``; a user's language becomes the
    request's when it has none. Other members of a user are kept: ``secondaryContact``,
    ``signerQuality`` and ``docId`` (the document its identity check must return) are the newest
    ``ContactIn``'s too (a member it does not take is refused, named)."""
    if "users" not in body:
        return body
    out = without(body, "users")
    if not isinstance(body["users"], list):  # refused by the newest version's checks, as sent
        out["contacts"] = body["users"]
        return out
    contacts: list[Any] = []
    for user in body["users"]:
        if not isinstance(user, dict):
            contacts.append(user)
            continue
        language = user.get("language")
        if language is not None and "language" not in out:
            out["language"] = language
        rest = without(user, "language")
        contacts.append(rest["contact"] if set(rest) == {"contact"} else rest)
    out["contacts"] = contacts
    return out


def _error_messages_were_one_string(body: Body) -> Body:
    """A validation error's sentences were one string (the releases' error models read
    ``message`` as a string), joined by "; "."""
    message = body.get("message")
    if isinstance(message, list):
        return {**body, "message": "; ".join(str(m) for m in message)}
    return body


def _request_credentials_were_entities(body: Body) -> Body:
    return {
        **body,
        "securityLevel": legacy_security_level(body.get("securityLevel")),
        "subjects": [legacy_subject(s) for s in body.get("subjects", [])],
        "credentials": [legacy_credential(c) for c in body.get("credentials", [])],
    }


def _list_subjects_had_ids(body: Body) -> Body:
    def subject(item: Body) -> Body:
        return {**without(legacy_subject(item), "did", "name"), "id": item.get("did")}

    def request(item: Body) -> Body:
        return {
            **item,
            "securityLevel": legacy_security_level(item.get("securityLevel")),
            "subjects": [subject(s) for s in item.get("subjects", [])],
            "credentials": [legacy_status(c) for c in item.get("credentials", [])],
        }

    return {**body, "data": [request(r) for r in body["data"]]}


def _subject_query_was_one_parameter(query: Query) -> Query:
    """``subject`` took a contact, a subject DID or the integrator's subject reference."""
    out: Query = []
    for name, value in query:
        if name != "subject":
            out.append((name, value))
        elif value.startswith("did:"):
            out.append(("did", value))
        elif "@" in value or value.lstrip("+").replace(" ", "").isdigit():
            out.append(("contact", value))
        else:
            out.append(("subjectInternalId", value))
    return out


def _credential_was_the_entity(body: Body) -> Body:
    entity = legacy_credential({**body["credential"], "w3cCredential": body.get("w3cCredential")})
    entity["id"] = body["credential"].get("mandateId") or body["credential"]["id"]
    if "pdf" in body:
        entity["pdf"] = body["pdf"]
    return entity


def _presentation_was_bare_and_encoded(body: Body) -> Body:
    data = body["data"]
    encoded = base64.b64encode(json.dumps(data["presentation"], separators=(",", ":")).encode())
    return {**data, "presentationEncoded": encoded.decode("ascii")}


def _verify_took_an_encoded_presentation(body: Body) -> Body:
    """2026-09-01 could send the VP as base64 JSON (``presentationEncoded``); a value that does not
    decode is passed on as the presentation, so it is refused as a malformed VP. The JSON inside
    is held to the body's nesting limit (``wire.json_depth``), which the check of the body where
    it entered could not see: it becomes the body's ``presentation``, one level down."""
    if "presentationEncoded" not in body:
        return body
    out = without(body, "presentationEncoded")
    if out.get("presentation") is None:
        encoded = body["presentationEncoded"]
        try:
            text = base64.b64decode(str(encoded), validate=True)
        except (binascii.Error, ValueError):
            out["presentation"] = encoded
            return out
        if json_depth_exceeds(text, MAX_JSON_DEPTH - 1):
            raise BadBody(
                f"presentationEncoded: the presentation is nested more than {MAX_JSON_DEPTH - 1} levels deep"
            )
        try:
            out["presentation"] = json.loads(text)
        except ValueError:
            out["presentation"] = encoded
    return out


def _revocation_named_its_status(body: Body) -> Body:
    return {**body, "status": "INACTIVE", "inactiveAt": {"reason": "REVOKED"}}


def _answered_201(status: int) -> int:
    return 201 if status == 200 else status


def _actions_were_summaries(body: Body) -> Body:
    def action(item: Body) -> Body:
        versions = item.get("versions", [])
        summaries = [
            {
                "id": v["id"],
                "version": v["number"],
                "digestSRI": v["digestSRI"],
                "createdAt": v["publishedAt"],
            }
            for v in reversed(versions[-10:])
        ]
        updated = versions[-1]["publishedAt"] if versions else item.get("createdAt")
        return {**item, "updatedAt": updated, "versions": summaries}

    return {**body, "data": [action(a) for a in body["data"]]}


# a version's content: what its digestSRI covers (``limits`` only where it declares any, issue 31;
# the releases read ``content`` as any object)
CONTENT_FIELDS = ("name", "description", "executionParams", "userParams", "rules", "limits")


def _action_versions_held_their_content(body: Body) -> Body:
    def version(item: Body) -> Body:
        return {
            "id": item["id"],
            "actionId": item["actionId"],
            "version": item["number"],
            "digestSRI": item["digestSRI"],
            "content": {k: item[k] for k in CONTENT_FIELDS if k in item},
            "published": True,
            "createdAt": item["publishedAt"],
            "updatedAt": item["publishedAt"],
        }

    return {**body, "data": [version(v) for v in reversed(body["data"])]}


AUDIT_EVENT_NAMES = {
    "MANDATE_ISSUED": "ISSUE",
    "HUMAN_DECISION_ACCEPT": "ACCEPT",
    "HUMAN_DECISION_REJECT": "REJECT",
    "MANDATE_REVOKED": "REVOKE",
    "MANDATE_CANCELED": "CANCEL",
    "REQUEST_EXPIRED": "EXPIRE",
    "VP_ISSUED": "VP_CREATED",
    "VERIFY_ACCEPT": "VERIFICATION_APPROVED",
    "VERIFY_DENY": "VERIFICATION_DENIED",
}
CONTENT_BOUND = {"ISSUE", "ACCEPT", "REJECT"}


def _credential_events_were_a_chain_audit(body: Body) -> Body:
    """2026-09-01's event kinds are fewer than the trail's record types: records of other types
    (a VP refused) are left out of its list, and counted as it shows them."""
    events = [
        {
            "urn": e["id"],
            "event": AUDIT_EVENT_NAMES[e["type"]],
            "actor": e["actor"] if str(e.get("actor", "")).startswith("did:") else e["issuer"],
            "issuer": e["issuer"],
            "validFrom": e["createdAt"],
            "contentBound": AUDIT_EVENT_NAMES[e["type"]] in CONTENT_BOUND,
            "signatureValid": e["signatureValid"] and e["contentValid"],
            "chainLinkValid": e["chainLinkValid"],
        }
        for e in body["events"]
        if e["type"] in AUDIT_EVENT_NAMES
    ]
    out: Body = {"credentialUrn": body["credentialId"], "ok": body["ok"], "eventCount": len(events)}
    if "reason" in body:
        out["reason"] = body["reason"]
    return {**out, "events": events}


def _event_credential_was_an_entity(body: Body) -> Body:
    return {**body, "credential": legacy_credential(body["credential"])}


VERSION_CHANGES: list[VersionChange] = [
    VersionChange(
        V2026_11_01,
        "a validation error's message is a list of sentences (was one string)",
        ERROR_BODY,
        to_previous=_error_messages_were_one_string,
    ),
    VersionChange(
        V2026_11_01,
        "POST /request answers the whole request in data (was a summary: ids, names, contacts)",
        "create_request",
        to_previous=_created_request_was_a_summary,
    ),
    VersionChange(
        V2026_11_01,
        "securityLevel PLATFORM_KYC and PLATFORM_REVALIDATION (were HUMANOS_KYC, HUMANOS_REVALIDATION)",
        "create_request",
        request_from_previous=_security_levels_were_named_humanos,
    ),
    VersionChange(
        V2026_11_01,
        "securityLevel filters PLATFORM_KYC and PLATFORM_REVALIDATION (were HUMANOS_...)",
        "list_requests",
        query_from_previous=_security_level_query_was_named_humanos,
    ),
    VersionChange(
        V2026_11_01,
        "POST /request takes contacts (was users: [{contact, ...}])",
        "create_request",
        request_from_previous=_users_became_contacts,
    ),
    VersionChange(
        V2026_11_01,
        "a request's credentials are SPEC.md's records (were CredentialEntity)",
        "get_request",
        to_previous=_request_credentials_were_entities,
    ),
    VersionChange(
        V2026_11_01,
        "a listed request's subjects carry did and name (carried id)",
        "list_requests",
        to_previous=_list_subjects_had_ids,
    ),
    VersionChange(
        V2026_11_01,
        "GET /request filters by contact, did or subjectInternalId (was one subject parameter)",
        "list_requests",
        query_from_previous=_subject_query_was_one_parameter,
    ),
    VersionChange(
        V2026_11_01,
        "GET /credential/{id} answers {credential, w3cCredential} (was the CredentialEntity)",
        "get_credential",
        to_previous=_credential_was_the_entity,
    ),
    VersionChange(
        V2026_11_01,
        "a VP is answered in data with its receipt (was bare, with presentationEncoded)",
        ("create_presentation", "create_presentation_alias"),
        to_previous=_presentation_was_bare_and_encoded,
    ),
    VersionChange(
        V2026_11_01,
        "POST /credential/verify takes the presentation only (also took presentationEncoded)",
        "verify_presentation",
        request_from_previous=_verify_took_an_encoded_presentation,
    ),
    VersionChange(
        V2026_11_01,
        "a revocation answers its receipt without a status (had status INACTIVE)",
        ("revoke_mandate", "revoke_mandate_alias"),
        to_previous=_revocation_named_its_status,
    ),
    VersionChange(
        V2026_11_01,
        "VPs, verifications, cancels and resends answer 200 (were 201)",
        (
            "create_presentation",
            "create_presentation_alias",
            "verify_presentation",
            "cancel_request",
            "resend_code",
        ),
        status_to_previous=_answered_201,
    ),
    VersionChange(
        V2026_11_01,
        "GET /actions lists all versions, oldest first (were the 10 newest, newest first, as summaries)",
        "list_actions",
        to_previous=_actions_were_summaries,
    ),
    VersionChange(
        V2026_11_01,
        "an action's versions oldest first, content inline (were newest first, under content)",
        "list_action_versions",
        to_previous=_action_versions_held_their_content,
    ),
    VersionChange(
        V2026_11_01,
        "a credential's events are the trail's records, each checked (were a chain audit)",
        "credential_events",
        to_previous=_credential_events_were_a_chain_audit,
    ),
    VersionChange(
        V2026_11_01,
        "a credential event's credential is SPEC.md's record (was CredentialEntity)",
        ("webhook:credential", "webhook:mandate.revoked"),
        to_previous=_event_credential_was_an_entity,
    ),
]
