"""The changes between API versions (CONTRACT 10), each small, named and tested.

``2026-05-20`` and ``2026-09-01`` are the shapes the public SDK's releases 1.0.5 and 1.2.0 read
and send; ``2026-11-01`` follows SPEC.md. A change is registered on the version that introduced
it and undoes itself towards the version before (``wire.versioning``): answers are walked back
newest change first, requests forward oldest change first. Resources are route names
(``api.versions``), ``webhook:<eventType>`` for event payloads, or ``ERROR_BODY`` for every
error answer (``api.errors``).

What the older versions could not be given exactly is said where it is approximated:
``executionsRemaining`` is -1 for a mandate without a use limit (this service has none; the
releases document null for it but their model refuses null), a credential without a signed
document carries ``w3cCredential: {}`` (the releases' model requires an object), decisions are
grouped per grantor as lists (the releases' model types them as lists of lists), and
``isFraud`` is always false (this service has no fraud signal).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from wire.json_depth import MAX_JSON_DEPTH, json_depth_exceeds
from wire.versioning import CHANGES, ERROR_BODY, BadBody, Body, Query, VersionChange

V2026_09_01 = "2026-09-01"
V2026_11_01 = "2026-11-01"
UNLIMITED_EXECUTIONS = -1


# --- shared pieces: the older versions' names, and a credential as they show it ------------------

SECURITY_LEVEL_NAMES = {"PLATFORM_KYC": "HUMANOS_KYC", "PLATFORM_REVALIDATION": "HUMANOS_REVALIDATION"}
SECURITY_LEVELS_OF = {old: new for new, old in SECURITY_LEVEL_NAMES.items()}
INACTIVE_STATUSES = ("REJECTED", "CANCELED", "EXPIRED", "REVOKED", "FAILED")


def legacy_security_level(level: Any) -> Any:
    return SECURITY_LEVEL_NAMES.get(level, level) if isinstance(level, str) else level


def legacy_identity_status(subject: Body) -> str:
    """The releases' NONE, KYC or HUMANOS: whether, and by whom, the subject's identity was
    verified (the platform's check shows in ``kyc``)."""
    if subject.get("identityStatus") != "VERIFIED":
        return "NONE"
    return "HUMANOS" if subject.get("kyc") == "VERIFIED" else "KYC"


def legacy_status(credential: Body) -> Body:
    """2026-09-01's DRAFT, ACTIVE or INACTIVE; an inactive credential says why in ``inactiveAt``
    (``{"reason": <the status>}``), which 2026-05-20 shows as the status itself."""
    status = credential.get("status")
    if status in INACTIVE_STATUSES:
        return {**credential, "status": "INACTIVE", "inactiveAt": {"reason": status}}
    return {**credential, "status": "ACTIVE" if status == "ACTIVE" else "DRAFT", "inactiveAt": None}


def legacy_credential(credential: Body) -> Body:
    """A credential of a request (or of an event) in the releases' CredentialEntity shape."""
    out = legacy_status(credential)
    out["w3cCredential"] = credential.get("w3cCredential") or {}
    out["decisions"] = [[decision] for decision in credential.get("decisions") or []]
    out["executionsRemaining"] = UNLIMITED_EXECUTIONS
    return out


def legacy_subject(subject: Body) -> Body:
    return {**subject, "identityStatus": legacy_identity_status(subject)}


def _without(body: Body, *names: str) -> Body:
    return {k: v for k, v in body.items() if k not in names}


# --- 2026-11-01: SPEC.md's shapes ------------------------------------------------------------------


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
    request's when it has none. Other members of a user (a secondary contact, a document id) are
    kept, so the request is refused naming them: this service does not offer them."""
    if "users" not in body:
        return body
    out = _without(body, "users")
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
        rest = _without(user, "language")
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
        return {**_without(legacy_subject(item), "did", "name"), "id": item.get("did")}

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
    out = _without(body, "presentationEncoded")
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


CONTENT_FIELDS = ("name", "description", "executionParams", "userParams", "rules")


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


CHANGES.extend(
    [
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
            "webhook:credential",
            to_previous=_event_credential_was_an_entity,
        ),
    ]
)


# --- 2026-09-01: what SDK 1.2.0 reads, from what 1.0.5 read ----------------------------------------


def _contacts_became_users(body: Body) -> Body:
    if "contacts" not in body:
        return body
    out = _without(body, "contacts")
    contacts = body["contacts"]
    out["users"] = (
        [c if isinstance(c, dict) else {"contact": c} for c in contacts]
        if isinstance(contacts, list)
        else contacts
    )
    return out


def _status_was_the_reason(credential: Body) -> Body:
    """1.0.5's statuses: DRAFT, ACTIVE, REJECTED, CANCELED, REVOKED, EXPIRED (a credential that
    could never be signed, FAILED here, shows as CANCELED)."""
    if credential.get("status") != "INACTIVE":
        return _without(credential, "inactiveAt")
    reason = (credential.get("inactiveAt") or {}).get("reason", "CANCELED")
    return {**_without(credential, "inactiveAt"), "status": "CANCELED" if reason == "FAILED" else reason}


def _request_statuses_were_reasons(body: Body) -> Body:
    return {**body, "credentials": [_status_was_the_reason(c) for c in body.get("credentials", [])]}


def _listed_statuses_were_reasons(body: Body) -> Body:
    return {**body, "data": [_request_statuses_were_reasons(r) for r in body["data"]]}


def _event_status_was_the_reason(body: Body) -> Body:
    return {**body, "credential": _status_was_the_reason(body["credential"])}


def _answered_200(status: int) -> int:
    return 200 if status == 201 else status


def _presentation_had_its_receipt(body: Body) -> Body:
    return _without(body, "presentationEncoded")


def _identity_decision_had_fraud(body: Body) -> Body:
    decision = dict(body.get("decision") or {})
    decision.setdefault("isFraud", False)
    decision.setdefault("riskScore", None)
    return {**body, "decision": decision}


ACTIVITY_TYPE_NAMES = {
    "REQUEST_CREATED": "REQUEST_CREATED",
    "MANDATE_CANCELED": "REQUEST_CANCELED",
    "VP_ISSUED": "VP_CREATED",
    "VP_ISSUE_DENIED": "VP_DENIED",
    "VERIFY_ACCEPT": "VP_VERIFIED",
    "VERIFY_DENY": "VP_VERIFICATION_DENIED",
    "HUMAN_DECISION_ACCEPT": "USER_DECISION_ACCEPTED",
    "HUMAN_DECISION_REJECT": "USER_DECISION_REJECTED",
    "MANDATE_ISSUED": "MANDATE_ISSUED",
    "MANDATE_REVOKED": "MANDATE_REVOKED",
    "IDENTITY_VERIFIED": "KYC_ACCEPTED",
    "IDENTITY_FAILED": "KYC_REJECTED",
}
ACTIVITY_TYPES_OF = {old: new for new, old in ACTIVITY_TYPE_NAMES.items()}


def _activity_named_entities(body: Body) -> Body:
    """1.0.5 knew twelve activity types; records of the trail's other types (settings, keys,
    codes resent) are left out of its pages."""

    def record(item: Body) -> Body:
        if item.get("credentialId"):
            kind, entity = "credential", item["credentialId"]
        elif item.get("requestId"):
            kind, entity = "request", item["requestId"]
        else:
            kind, entity = "organization", item["organizationId"]
        return {
            **item,
            "type": ACTIVITY_TYPE_NAMES[item["type"]],
            "entityType": kind,
            "entityId": entity,
            "actorDid": None,
            "subjectDid": None,
            "payload": item.get("data"),
        }

    return {**body, "data": [record(r) for r in body["data"] if r["type"] in ACTIVITY_TYPE_NAMES]}


def _activity_filtered_by_entity(query: Query) -> Query:
    """``entityType`` with ``entityId`` named a request or a credential; any other entity type is
    left in place, so the call is refused naming it."""
    query = [(n, ACTIVITY_TYPES_OF.get(v, v) if n == "type" else v) for n, v in query]
    kinds = [v for n, v in query if n == "entityType"]
    ids = [v for n, v in query if n == "entityId"]
    if len(kinds) != 1 or len(ids) != 1 or kinds[0] not in ("request", "credential"):
        return query
    rest = [(n, v) for n, v in query if n not in ("entityType", "entityId")]
    return [*rest, ("requestId" if kinds[0] == "request" else "credentialId", ids[0])]


CHANGES.extend(
    [
        VersionChange(
            V2026_09_01,
            "POST /request takes users: [{contact}] (took contacts)",
            "create_request",
            request_from_previous=_contacts_became_users,
        ),
        VersionChange(
            V2026_09_01,
            "an inactive credential's status is INACTIVE with inactiveAt (was the reason itself)",
            "get_request",
            to_previous=_request_statuses_were_reasons,
        ),
        VersionChange(
            V2026_09_01,
            "a listed credential's status is INACTIVE with inactiveAt (was the reason itself)",
            "list_requests",
            to_previous=_listed_statuses_were_reasons,
        ),
        VersionChange(
            V2026_09_01,
            "GET /credential/{id}'s status is INACTIVE with inactiveAt (was the reason itself)",
            "get_credential",
            to_previous=_status_was_the_reason,
        ),
        VersionChange(
            V2026_09_01,
            "a revoked mandate's status is INACTIVE (was REVOKED)",
            ("revoke_mandate", "revoke_mandate_alias"),
            to_previous=_status_was_the_reason,
        ),
        VersionChange(
            V2026_09_01,
            "a credential event's status is INACTIVE with inactiveAt (was the reason itself)",
            "webhook:credential",
            to_previous=_event_status_was_the_reason,
        ),
        VersionChange(
            V2026_09_01,
            "VPs, verifications, cancels and resends answer 201 (answered 200)",
            (
                "create_presentation",
                "create_presentation_alias",
                "verify_presentation",
                "cancel_request",
                "resend_code",
            ),
            status_to_previous=_answered_200,
        ),
        VersionChange(
            V2026_09_01,
            "a VP comes with presentationEncoded (came with its receipt only)",
            ("create_presentation", "create_presentation_alias"),
            to_previous=_presentation_had_its_receipt,
        ),
        VersionChange(
            V2026_09_01,
            "an identity event's decision has no isFraud or riskScore (had both)",
            "webhook:identity",
            to_previous=_identity_decision_had_fraud,
        ),
        VersionChange(
            V2026_09_01,
            "activity records are the audit trail's (were entity-typed activities)",
            "list_activity",
            to_previous=_activity_named_entities,
        ),
        VersionChange(
            V2026_09_01,
            "GET /activity filters by requestId or credentialId (was entityType with entityId)",
            "list_activity",
            query_from_previous=_activity_filtered_by_entity,
        ),
    ]
)
