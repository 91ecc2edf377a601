"""Event payloads (CONTRACT 7, SPEC.md "Events"), rendered once when an event is created.

The ``credential`` object is the request's own rendering (``wire.views``, the "Credential (inside a
request)" form of GET /request), so an integrator sees the same shape in both places; with the
mandate issued its ``id`` is the mandate URN.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from core.settings import Settings
from store.requests import RequestBundle
from trust.did import web_service_did, web_subject_did
from wire import version_changes, versioning  # noqa: F401 (version_changes registers them)
from wire.models import iso
from wire.views import request_out

TEST_REQUEST_ID = "0" * 24
TEST_SUBJECT = "00000000-0000-0000-0000-000000000000"
TEST_MESSAGE = "A test event from Mandatum: your webhook receives, verifies and decrypts events."


def api_version_of(pinned: str | None) -> str:
    """The organization's pinned API version, else the newest (CONTRACT 10)."""
    return pinned or versioning.newest()


def _envelope(
    event_id: str,
    event_type: str,
    request_id: str,
    internal_id: str | None,
    settings: Settings,
    user: dict[str, Any],
    api_version: str,
    created_at: datetime,
) -> dict[str, Any]:
    event: dict[str, Any] = {"id": event_id, "eventType": event_type, "requestId": request_id}
    if internal_id is not None:
        event["internalId"] = internal_id
    event.update(
        issuerDid=web_service_did(settings.public_url),
        user=user,
        api_version=api_version,
        createdAt=iso(created_at),
    )
    return event


def _in_version(event: dict[str, Any]) -> dict[str, Any]:
    """The payload in the organization's pinned version's shape (``wire.version_changes``)."""
    return versioning.render(f"webhook:{event['eventType']}", event, event["api_version"])


def _user(settings: Settings, bundle: RequestBundle, subject_id: str) -> dict[str, Any]:
    [(link, subject)] = [(lk, s) for lk, s in bundle.subjects if s.id == subject_id]
    user: dict[str, Any] = {
        "contact": subject.contact,
        "id": web_subject_did(settings.public_url, subject.id),
    }
    if link.internal_id is not None:
        user["internalId"] = link.internal_id
    return user


def otp_failed_event(
    settings: Settings,
    bundle: RequestBundle,
    api_version: str,
    event_id: str,
    created_at: datetime,
    subject_id: str,
    code: str,
    message: str,
) -> dict[str, Any]:
    """CONTRACT 7: ``otp {resendEndpoint, error {code, message}}``; the endpoint is the signed
    ``PATCH /request/resend`` call that sends the subject a fresh code."""
    req = bundle.request
    user = _user(settings, bundle, subject_id)
    event = _envelope(
        event_id, "otp.failed", req.id, req.internal_id, settings, user, api_version, created_at
    )
    resend = f"{settings.public_url.rstrip('/')}/request/resend/{req.id}?id={quote(user['id'], safe='')}"
    event["otp"] = {"resendEndpoint": resend, "error": {"code": code, "message": message}}
    return _in_version(event)


def identity_event(
    settings: Settings,
    bundle: RequestBundle,
    api_version: str,
    event_id: str,
    created_at: datetime,
    subject_id: str,
    success: bool,
    message: str | None,
    date: datetime,
) -> dict[str, Any]:
    """CONTRACT 7: ``decision {success, message?, date}``."""
    req = bundle.request
    event = _envelope(
        event_id,
        "identity",
        req.id,
        req.internal_id,
        settings,
        _user(settings, bundle, subject_id),
        api_version,
        created_at,
    )
    decision: dict[str, Any] = {"success": success}
    if message is not None:
        decision["message"] = message
    decision["date"] = iso(date)
    event["decision"] = decision
    return _in_version(event)


def credential_event(
    settings: Settings,
    bundle: RequestBundle,
    api_version: str,
    event_id: str,
    created_at: datetime,
    subject_id: str,
    credential_id: str,
    accepted: bool,
    decided_at: datetime,
) -> dict[str, Any]:
    req = bundle.request
    [position] = [i for i, c in enumerate(bundle.credentials) if c.id == credential_id]
    user = _user(settings, bundle, subject_id)
    event = _envelope(
        event_id, "credential", req.id, req.internal_id, settings, user, api_version, created_at
    )
    event["credential"] = request_out(settings, bundle).credentials[position].model_dump(mode="json")
    event["decision"] = {"action": "accept" if accepted else "reject", "date": iso(decided_at)}
    return _in_version(event)


def mandate_revoked_event(
    settings: Settings,
    bundle: RequestBundle,
    api_version: str,
    event_id: str,
    created_at: datetime,
    credential_id: str,
    subject_id: str | None = None,
) -> dict[str, Any]:
    """A mandate revoked without the integrator: by itself (issue 31: its last use spent) or by
    a subject in the portal (issue 32). ``credential`` as GET /request shows it (status REVOKED)
    and ``revocation`` {reason, revokedAt, receipt}; ``user`` is the subject who revoked it
    (``subject_id``, one of the request's), else the request's first subject (a grantor)."""
    req = bundle.request
    [position] = [i for i, c in enumerate(bundle.credentials) if c.id == credential_id]
    cred = bundle.credentials[position]
    ours = [s for _, s in bundle.subjects if s.id == subject_id]
    subject = ours[0] if ours else bundle.subjects[0][1]
    event = _envelope(
        event_id,
        "mandate.revoked",
        req.id,
        req.internal_id,
        settings,
        _user(settings, bundle, subject.id),
        api_version,
        created_at,
    )
    event["credential"] = request_out(settings, bundle).credentials[position].model_dump(mode="json")
    event["revocation"] = {
        "reason": cred.revocation_reason,
        "revokedAt": iso(cred.revoked_at) if cred.revoked_at is not None else None,
        "receipt": cred.revocation_receipt,
    }
    return _in_version(event)


def request_resent_event(
    settings: Settings, bundle: RequestBundle, api_version: str, event_id: str, created_at: datetime
) -> dict[str, Any]:
    """A closed request sent again by support (issue 32): ``requestId`` is the new request, whose
    workflow has started; ``resentFrom`` the expired, canceled or rejected one it replaces;
    ``user`` is its first subject. The same shape in every API version."""
    req = bundle.request
    _, subject = bundle.subjects[0]
    user = _user(settings, bundle, subject.id)
    event = _envelope(
        event_id, "request.resent", req.id, req.internal_id, settings, user, api_version, created_at
    )
    event["resentFrom"] = req.resent_from
    return _in_version(event)


def sample_event(settings: Settings, api_version: str, event_id: str, created_at: datetime) -> dict[str, Any]:
    """Sample request and user, so a receiver's parser sees every common field filled."""
    user = {"contact": "test@example.com", "id": web_subject_did(settings.public_url, TEST_SUBJECT)}
    event = _envelope(event_id, "test", TEST_REQUEST_ID, None, settings, user, api_version, created_at)
    event["message"] = TEST_MESSAGE
    return _in_version(event)
