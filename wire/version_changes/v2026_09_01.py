"""2026-09-01: what SDK 1.2.0 reads and sends, each change undone towards 2026-05-20 (what SDK
1.0.5 read and sent). ``isFraud`` is always false in an older identity event (this service has no
fraud signal).
"""

from __future__ import annotations

from wire.version_changes.legacy import without
from wire.versioning import Body, Query, VersionChange

V2026_09_01 = "2026-09-01"


def _contacts_became_users(body: Body) -> Body:
    if "contacts" not in body:
        return body
    out = without(body, "contacts")
    contacts = body["contacts"]
    out["users"] = (
        [c if isinstance(c, dict) else {"contact": c} for c in contacts]
        if isinstance(contacts, list)
        else contacts
    )
    return out


def _pub_key_went_into_iframe(body: Body) -> Body:
    """2026-05-20 took the iframe's key at the top, ``pubKey`` (null: none). With ``iframe`` as
    well it is left in place, so the request is refused naming it."""
    if "pubKey" not in body or "iframe" in body:
        return body
    out = without(body, "pubKey")
    if body["pubKey"] is not None:
        out["iframe"] = {"pubKey": body["pubKey"]}
    return out


def _status_was_the_reason(credential: Body) -> Body:
    """1.0.5's statuses: DRAFT, ACTIVE, REJECTED, CANCELED, REVOKED, EXPIRED (a credential that
    could never be signed, FAILED here, shows as CANCELED)."""
    if credential.get("status") != "INACTIVE":
        return without(credential, "inactiveAt")
    reason = (credential.get("inactiveAt") or {}).get("reason", "CANCELED")
    return {**without(credential, "inactiveAt"), "status": "CANCELED" if reason == "FAILED" else reason}


def _request_statuses_were_reasons(body: Body) -> Body:
    return {**body, "credentials": [_status_was_the_reason(c) for c in body.get("credentials", [])]}


def _listed_statuses_were_reasons(body: Body) -> Body:
    return {**body, "data": [_request_statuses_were_reasons(r) for r in body["data"]]}


def _event_status_was_the_reason(body: Body) -> Body:
    return {**body, "credential": _status_was_the_reason(body["credential"])}


def _answered_200(status: int) -> int:
    return 200 if status == 201 else status


def _presentation_had_its_receipt(body: Body) -> Body:
    return without(body, "presentationEncoded")


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


VERSION_CHANGES: list[VersionChange] = [
    VersionChange(
        V2026_09_01,
        "POST /request takes users: [{contact}] (took contacts)",
        "create_request",
        request_from_previous=_contacts_became_users,
    ),
    VersionChange(
        V2026_09_01,
        "POST /request takes the iframe's key as iframe.pubKey (took pubKey)",
        "create_request",
        request_from_previous=_pub_key_went_into_iframe,
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
        ("webhook:credential", "webhook:mandate.revoked"),
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
