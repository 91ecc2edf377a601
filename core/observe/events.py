"""The business events, each defined once: one call at the place where the fact became true (after
its write committed) logs its line and moves its metric, so the two cannot disagree.

Every line is on the logger ``mandatum.events`` (but for a webhook attempt that failed, which stays
the operator's line of ``mandatum.activities.webhooks``), with ``event`` naming it and the ids of
the organization, the credential request and its workflow as fields; the request id
(``x_request_id``) is added by ``core.observe.logs``. No event takes a contact, a code, a token, a
link or a secret: ids, kinds, counts and durations only.

Once: an activity retried after its write committed must not say it twice, so each call site
checks what its write changed (``newly_issued``, the state before the write) before calling.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from core.observe import metrics

log = logging.getLogger("mandatum.events")
CHANNELS = frozenset({"email", "sms"})
CODE_FAILURES = frozenset({"UNDELIVERABLE", "INVALID_PHONE_NUMBER", "transient"})
OUTCOMES = frozenset({"completed", "canceled", "expired"})
OTHER = "other"


def _closed(value: str | None, allowed: Iterable[str]) -> str:
    """A label value from a closed set (``other`` for anything else: labels never grow)."""
    return value if value is not None and value in allowed else OTHER


def _emit(
    event: str,
    level: int,
    message: str,
    *args: object,
    logger: logging.Logger | None = None,
    **fields: object,
) -> None:
    extra = {"event": event, **{key: value for key, value in fields.items() if value is not None}}
    (logger or log).log(level, message, *args, extra=extra)


def code_sent(
    *,
    organization_id: str,
    request_id: str,
    workflow_id: str | None,
    subject_id: str,
    channel: str,
    send_number: int,
) -> None:
    """A subject's code was handed to its transport (stored first)."""
    metrics.CODES_SENT.labels(_closed(channel, CHANNELS)).inc()
    _emit(
        "code.sent",
        logging.INFO,
        "code %d sent by %s",
        send_number,
        channel,
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        subject_id=subject_id,
        channel=channel,
        send_number=send_number,
    )


def code_failed(
    *,
    organization_id: str,
    request_id: str,
    workflow_id: str | None,
    subject_id: str,
    channel: str,
    send_number: int,
    reason: str,
    error: str | None = None,
) -> None:
    """A code did not reach the subject: for good (``UNDELIVERABLE``, ``INVALID_PHONE_NUMBER``) or
    this attempt only (``transient``, retried; ``error`` is the exception's type, never its text,
    which may hold the address)."""
    metrics.CODES_FAILED.labels(_closed(channel, CHANNELS), _closed(reason, CODE_FAILURES)).inc()
    _emit(
        "code.failed",
        logging.WARNING,
        "code %d not sent by %s: %s",
        send_number,
        channel,
        reason if error is None else f"{reason} ({error})",
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        subject_id=subject_id,
        channel=channel,
        send_number=send_number,
        reason=reason,
        error=error,
    )


def decision_recorded(
    *,
    organization_id: str,
    request_id: str,
    workflow_id: str | None,
    subject_id: str,
    credential_id: str,
    accepted: bool,
    channel: str | None,
    surface: str | None,
) -> None:
    decision = "accept" if accepted else "reject"
    metrics.DECISIONS.labels(decision).inc()
    _emit(
        "decision.recorded",
        logging.INFO,
        "decision %s recorded",
        decision,
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        subject_id=subject_id,
        credential_id=credential_id,
        decision=decision,
        channel=channel,
        surface=surface,
    )


def request_closed(*, organization_id: str, request_id: str, workflow_id: str | None, outcome: str) -> None:
    """A credential request ended: ``completed`` (every decision in), ``canceled`` or ``expired``."""
    metrics.REQUEST_OUTCOMES.labels(_closed(outcome, OUTCOMES)).inc()
    _emit(
        "request.closed",
        logging.INFO,
        "request %s",
        outcome,
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        outcome=outcome,
    )


def mandate_issued(
    *, organization_id: str, request_id: str, workflow_id: str | None, credential_id: str, mandate_id: str
) -> None:
    metrics.MANDATES_ISSUED.inc()
    _emit(
        "mandate.issued",
        logging.INFO,
        "mandate %s issued",
        mandate_id,
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        credential_id=credential_id,
        mandate_id=mandate_id,
    )


def verification_decided(
    *,
    organization_id: str,
    request_id: str | None,
    workflow_id: str | None,
    credential_id: str | None,
    decision: str,
    reason: str | None,
    reasons: Iterable[str],
) -> None:
    """A verification was recorded (``organization_id`` is the verifier's); ``reasons`` is the
    closed set of refusal kinds."""
    metrics.VERIFICATIONS.labels(decision, "none" if reason is None else _closed(reason, reasons)).inc()
    _emit(
        "verification.decided",
        logging.INFO,
        "verification %s%s",
        decision,
        f": {reason}" if reason else "",
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        credential_id=credential_id,
        decision=decision,
        reason=reason,
    )


def webhook_delivered(
    *,
    organization_id: str,
    request_id: str | None,
    workflow_id: str | None,
    event_id: str,
    event_type: str,
    attempt: int,
    latency_seconds: float | None,
) -> None:
    """An event was delivered; ``latency_seconds`` from its creation, on its first success only
    (None for a resend of a delivered event)."""
    metrics.WEBHOOK_DELIVERIES.labels("delivered").inc()
    if latency_seconds is not None:
        metrics.WEBHOOK_LATENCY.observe(max(latency_seconds, 0.0))
    _emit(
        "webhook.delivered",
        logging.INFO,
        "webhook event %s delivered (attempt %d)",
        event_id,
        attempt,
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        event_id=event_id,
        event_type=event_type,
        attempt=attempt,
        latency_seconds=None if latency_seconds is None else round(latency_seconds, 3),
    )


def webhook_attempt_failed(
    *,
    logger: logging.Logger,
    organization_id: str,
    request_id: str | None,
    workflow_id: str | None,
    event_id: str,
    event_type: str,
    attempt: int,
    error: str,
    host: str | None,
    excerpt: str,
) -> None:
    """One delivery attempt failed (the retry policy decides what follows): the operator's one
    line, on ``logger``, with ``excerpt``, the start of the receiver's answer (already one line)."""
    metrics.WEBHOOK_DELIVERIES.labels("retrying").inc()
    _emit(
        "webhook.attempt_failed",
        logging.WARNING,
        "webhook event %s not delivered (attempt %d): %s from %s%s",
        event_id,
        attempt,
        error,
        host,
        f": {excerpt!r}" if excerpt else "",
        logger=logger,
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        event_id=event_id,
        event_type=event_type,
        attempt=attempt,
        error=error,
    )


def webhook_failed(
    *, organization_id: str, request_id: str | None, workflow_id: str | None, event_id: str, reason: str
) -> None:
    """An event's delivery was given up (``FAILED``)."""
    metrics.WEBHOOK_DELIVERIES.labels("failed").inc()
    _emit(
        "webhook.failed",
        logging.WARNING,
        "webhook event %s failed: %s",
        event_id,
        reason,
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        event_id=event_id,
    )


def webhook_skipped(
    *, organization_id: str, request_id: str | None, workflow_id: str | None, event_id: str
) -> None:
    """No webhook is configured: the event is kept, not sent."""
    metrics.WEBHOOK_DELIVERIES.labels("skipped").inc()
    _emit(
        "webhook.skipped",
        logging.INFO,
        "webhook event %s skipped: no webhook configured",
        event_id,
        organization_id=organization_id,
        request_id=request_id,
        workflow_id=workflow_id,
        event_id=event_id,
    )
