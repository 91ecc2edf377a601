"""A record's details as the dashboard shows them (issue 34, item 4): a record with ``previous``
shows each changed field as ``before → after`` in place of its value, a setting's under the
setting's name; each side is cut like any value; a record without ``previous`` is shown as it
always was. The operators' timeline says the same changes, with the reason."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from services.audit import DETAIL_TEXT, changes_of, details_of
from services.operators import _audit_entry
from store.tables import AuditRecord

ROLE_CHANGED = {
    "memberId": "m1",
    "email": "dev@example.com",
    "role": "owner",
    "previousRole": "support",
    "previous": {"role": "support"},
}


def test_a_changed_field_shows_before_and_after_in_place_of_its_value() -> None:
    assert details_of(ROLE_CHANGED) == [
        ("email", "dev@example.com"),
        ("memberId", "m1"),
        ("previousRole", "support"),
        ("role", "support → owner"),
    ]
    edited = {
        "keyId": "k1",
        "name": "Invoices",
        "description": "",
        "expiresAt": None,
        "previous": {"name": "Billing", "description": "Nightly"},
    }
    assert details_of(edited) == [
        ("description", 'Nightly → ""'),  # an empty text is said, not left blank
        ("expiresAt", "null"),  # a field with no previous: as it always was
        ("keyId", "k1"),
        ("name", "Billing → Invoices"),
    ]


def test_a_field_previous_names_unchanged_is_shown_as_it_is() -> None:
    standing = {
        "subjectId": "s1",
        "identityStatus": "VERIFIED",
        "kyc": "VERIFIED",
        "previous": {"identityStatus": "VERIFIED", "kyc": "PENDING"},
    }
    assert changes_of(standing) == {"kyc": "PENDING → VERIFIED"}
    assert details_of(standing) == [
        ("identityStatus", "VERIFIED"),
        ("kyc", "PENDING → VERIFIED"),
        ("subjectId", "s1"),
    ]
    assert details_of({"disabledAt": None, "previous": {"disabledAt": "2026-01-02T03:04:05.000000Z"}}) == [
        ("disabledAt", "2026-01-02T03:04:05.000000Z → none")
    ]


def test_a_setting_is_named_by_the_setting() -> None:
    assert details_of({"setting": "requestRatePerMinute", "value": 30, "previous": 1000}) == [
        ("requestRatePerMinute", "1000 → 30")
    ]
    origins = {"setting": "frameOrigins", "value": ["https://app.example.com"], "previous": []}
    assert details_of(origins) == [("frameOrigins", '[] → ["https://app.example.com"]')]
    assert details_of({"setting": "apiVersion", "value": "2026-11-01", "previous": None}) == [
        ("apiVersion", "none → 2026-11-01")
    ]
    unchanged = {"setting": "portalEnabled", "value": True, "previous": True}
    assert details_of(unchanged) == [("setting", "portalEnabled"), ("value", "true")]


def test_each_side_is_cut_like_any_value() -> None:
    long_before, long_after = "a" * (DETAIL_TEXT + 50), "b" * (DETAIL_TEXT + 1)
    shown = dict(details_of({"description": long_after, "previous": {"description": long_before}}))
    assert shown == {"description": "a" * DETAIL_TEXT + "… → " + "b" * DETAIL_TEXT + "…"}
    assert dict(details_of({"note": "c" * 300}))["note"] == "c" * DETAIL_TEXT + "…"


def test_a_record_without_previous_is_shown_as_it_always_was() -> None:
    data: dict[str, Any] = {"keyId": "k1", "name": "Billing", "expiresAt": None, "scopes": ["a", "b"]}
    assert details_of(data) == [
        ("expiresAt", "null"),
        ("keyId", "k1"),
        ("name", "Billing"),
        ("scopes", '["a", "b"]'),
    ]
    assert changes_of(data) == {} and details_of("not a dict") == [] and changes_of(None) == {}


def _record(kind: str, data: dict[str, Any]) -> AuditRecord:
    at = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    return AuditRecord(
        id="urn:via:audit:x",
        organization_id="o" * 24,
        seq=1,
        type=kind,
        actor="member:m1",
        data=data,
        created_at=at,
        hash="0" * 64,
        proof={},
    )


def test_the_operators_timeline_says_the_changes_and_the_reason() -> None:
    restarted = {
        "subjectId": "s1",
        "checks": ["c1"],
        "reason": "provider outage",
        "kyc": "NOT_STARTED",
        "previous": {"kyc": "PENDING"},
    }
    entry = _audit_entry(_record("IDENTITY_CHECK_RESTARTED", restarted))
    assert (entry.what, entry.detail) == (
        "Audit: IDENTITY_CHECK_RESTARTED",
        "kyc: PENDING → NOT_STARTED · provider outage",
    )
    verified = {"identityStatus": "VERIFIED", "previous": {"identityStatus": "UNVERIFIED"}}
    assert (
        _audit_entry(_record("IDENTITY_VERIFIED", verified)).detail == "identityStatus: UNVERIFIED → VERIFIED"
    )
    # without previous: the reason alone, or nothing, as before
    assert _audit_entry(_record("SUBJECT_LINK_SHOWN", {"subjectId": "s1", "reason": "ticket 7"})).detail == (
        "ticket 7"
    )
    assert _audit_entry(_record("REQUEST_CREATED", {"name": "Lease"})).detail is None
