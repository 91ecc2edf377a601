"""Webhook activities: creating events once per fact, and one delivery attempt per activity run."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib.metadata import version as package_version
from typing import Any, NoReturn

import httpx
from sqlalchemy import Engine
from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from activities.definition import defn
from adapters.egress import EgressPolicy, UrlNotAllowed, describe_failure, post_pinned
from core.faults import crash_point
from core.observe import events
from core.secretbox import SecretCipher
from core.settings import Settings
from core.text import one_line
from store import orgs
from store import request_queries as queries
from store import webhooks as store
from store.db import utcnow
from store.requests import RequestBundle
from store.tables import WebhookEvent
from trust.webhook_envelope import delivery_headers, encrypt_event
from wire.webhook_payloads import (
    api_version_of,
    credential_event,
    identity_event,
    otp_failed_event,
)
from workflows.ids import ActivityNames
from workflows.webhook_messages import (
    HTTP_TIMEOUT,
    CreateCredentialEventInput,
    CreateEventResult,
    CreateIdentityEventInput,
    CreateOtpFailedEventInput,
    DeliverWebhookInput,
    DeliveryResult,
    RecordWebhookFailureInput,
    retry_delay,
)

log = logging.getLogger("mandatum.activities.webhooks")
EXCERPT = 120  # characters of a failing receiver's answer in the log line
HEADERS_KEPT = 50  # of a receiver's answer, for the organization's event page
HEADER_VALUE = 500

# who knocks, in every delivery's User-Agent: receivers log it and may allow-list it
USER_AGENT = f"Mandatum-Webhooks/{package_version('mandatum')}"


@dataclass
class Post:
    """One delivery POST: the receiver's status code, the stored error (None: delivered), an
    excerpt of a failing receiver's answer for the log line, and the answer's headers and first
    2 KiB, stored for the organization's event page only (never logged)."""

    status: int | None = None
    error: str | None = None
    excerpt: str = ""
    headers: list[list[str]] | None = None  # the receiver's answer, for the event page
    body: str | None = None

    @property
    def delivered(self) -> bool:
        return self.error is None


def _since(moment: datetime) -> float:
    """Seconds from ``moment`` (stored in UTC; SQLite gives it back without a zone) to now."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (utcnow() - aware).total_seconds()


class WebhookActivities:
    def __init__(
        self, engine: Engine, cipher: SecretCipher, settings: Settings, egress: EgressPolicy | None = None
    ) -> None:
        self._engine, self._cipher, self._settings = engine, cipher, settings
        self._egress = egress or EgressPolicy.of(settings)

    def _bundle(self, org_id: str, request_id: str) -> tuple[RequestBundle, str]:
        bundle = queries.get_request(self._engine, org_id, request_id)
        if bundle is None:
            raise ApplicationError(f"request {request_id} not found", type="not_found", non_retryable=True)
        return bundle, api_version_of(orgs.get_organization(self._engine, org_id).api_version)

    def _event(
        self,
        org_id: str,
        request_id: str,
        fact_key: str,
        event_type: str,
        payload: Callable[[RequestBundle, str, str, datetime], dict[str, Any]],
    ) -> CreateEventResult:
        """The events reporting ``fact_key``, one per endpoint, made once: a retry (or a replayed
        workflow) gets the same event ids. ``payload(bundle, api_version, event_id, created_at)``
        renders each."""
        bundle, api_version = self._bundle(org_id, request_id)
        made = store.create_events(
            self._engine,
            org_id,
            fact_key,
            event_type,
            request_id,
            lambda event_id, at: payload(bundle, api_version, event_id, at),
        )
        return CreateEventResult(
            event_id=made[0][0].id,
            created=any(created for _, created in made),
            endpoint_events={event.endpoint_id or "": event.id for event, _ in made},
        )

    @defn(name=ActivityNames.CREATE_CREDENTIAL_EVENT)
    def create_credential_event(self, inp: CreateCredentialEventInput) -> CreateEventResult:
        """One per decision, and one more for the retry that issued its FAILED credential."""
        return self._event(
            inp.organization_id,
            inp.request_id,
            f"credential:{inp.decision_id}" + (":retry" if inp.retry else ""),
            "credential",
            lambda bundle, version, event_id, at: credential_event(
                self._settings,
                bundle,
                version,
                event_id,
                at,
                inp.subject_id,
                inp.credential_id,
                inp.accepted,
                inp.decided_at,
            ),
        )

    @defn(name=ActivityNames.CREATE_OTP_FAILED_EVENT)
    def create_otp_failed_event(self, inp: CreateOtpFailedEventInput) -> CreateEventResult:
        """One per code that failed (``fact``: undelivered or locked, with the send number)."""
        return self._event(
            inp.organization_id,
            inp.request_id,
            f"otp.failed:{inp.request_id}:{inp.subject_id}:{inp.fact}",
            "otp.failed",
            lambda bundle, version, event_id, at: otp_failed_event(
                self._settings, bundle, version, event_id, at, inp.subject_id, inp.code, inp.message
            ),
        )

    @defn(name=ActivityNames.CREATE_IDENTITY_EVENT)
    def create_identity_event(self, inp: CreateIdentityEventInput) -> CreateEventResult:
        """One per subject and request (a subject has one identity result in a request)."""
        return self._event(
            inp.organization_id,
            inp.request_id,
            f"identity:{inp.request_id}:{inp.subject_id}",
            "identity",
            lambda bundle, version, event_id, at: identity_event(
                self._settings,
                bundle,
                version,
                event_id,
                at,
                inp.subject_id,
                inp.success,
                inp.message,
                inp.date,
            ),
        )

    @defn(name=ActivityNames.WEBHOOK_EVENT_STATE)
    def webhook_event_state(self, event_id: str) -> str:
        return store.get_event(self._engine, event_id).state

    @defn(name=ActivityNames.DELIVER_WEBHOOK)
    def deliver_webhook(self, inp: DeliverWebhookInput) -> DeliveryResult:
        """One POST. A 2xx is delivered; a 410 fails for good; anything else is left to the retry
        policy. Every attempt's outcome is written before the activity answers.

        The URL's host is resolved and every address checked on each attempt, and the POST goes
        to a checked address (``adapters.egress``); an address that is not allowed is an attempt that
        failed with "address not allowed", nothing sent. The stored error is a fixed phrase per
        kind of failure, never what the other end answered."""
        event = store.get_event(self._engine, inp.event_id)
        if event.state == store.DELIVERED and not event.resending:  # died after recording its success
            return DeliveryResult(event_id=event.id, state=store.DELIVERED, status_code=event.last_status)
        first_success = event.delivered_at is None  # not a resend of a delivered event
        config, refused = self._endpoint_of(event)
        if config is None or refused is not None:  # no endpoint, removed, off, or not a type it takes
            return self._skipped(event, refused)
        body = encrypt_event(event.payload, config.encryption_secret, config.salt)
        headers = delivery_headers(
            event.id,
            config.signature_secret,
            body,
            int(time.time() * 1000),
            config.previous_signature_secret,
        )
        headers["User-Agent"] = USER_AGENT
        crash_point("webhook:before-post")
        began = time.monotonic()
        post = self._post(config.url, body, headers)
        crash_point("webhook:after-post")
        duration_ms = round((time.monotonic() - began) * 1000)
        info = activity.info()
        # the delivery's attempt number: a first attempt made locally came before this activity's
        attempt = info.attempt + inp.attempts_before
        store.record_attempt(
            self._engine,
            event.id,
            info.current_attempt_scheduled_time,
            post.status,
            post.error,
            post.delivered,
            None if post.delivered or post.status == 410 else self._next_attempt(info, attempt),
            url=config.url,
            duration_ms=duration_ms,
            answer=(post.headers, post.body),
        )
        if not post.delivered:
            self._not_delivered(event, config.url, post, info, attempt)
        events.webhook_delivered(
            organization_id=event.organization_id,
            request_id=event.request_id,
            workflow_id=info.workflow_id,
            event_id=event.id,
            event_type=event.event_type,
            attempt=attempt,
            latency_seconds=_since(event.created_at) if first_success else None,
        )
        return DeliveryResult(event_id=event.id, state=store.DELIVERED, status_code=post.status)

    def _endpoint_of(self, event: WebhookEvent) -> tuple[store.WebhookSettings | None, str | None]:
        """The endpoint the event goes to and why it does not take it (None: it does)."""
        if event.endpoint_id is None:  # the organization had no endpoint
            return None, None
        config = store.get_endpoint(self._engine, self._cipher, event.endpoint_id)
        if config is None:
            return None, "the webhook endpoint was removed"
        return config, store.refusal(config, event.event_type)

    def _skipped(self, event: WebhookEvent, reason: str | None = None) -> DeliveryResult:
        """The organization has no webhook, or it does not take this event: the event is skipped
        (reported the first time)."""
        if reason is None:
            store.mark_skipped(self._engine, event.id)
        else:
            store.mark_skipped(self._engine, event.id, reason)
        if event.state != store.SKIPPED:
            events.webhook_skipped(
                organization_id=event.organization_id,
                request_id=event.request_id,
                workflow_id=activity.info().workflow_id,
                event_id=event.id,
            )
        return DeliveryResult(event_id=event.id, state=store.SKIPPED)

    def _post(self, configured_url: str, body: bytes, headers: dict[str, str]) -> Post:
        """The POST to a checked address of the receiver's host, and how it went."""
        post = Post()
        try:
            url, addresses = self._egress.resolve_checked(configured_url)
            response = post_pinned(url, addresses, body, headers, HTTP_TIMEOUT.total_seconds())
            post.status = response.status_code
            post.headers = [[name, value[:HEADER_VALUE]] for name, value in response.headers[:HEADERS_KEPT]]
            post.body = response.body.decode("utf-8", "replace")
            if not 200 <= post.status < 300:
                post.error = f"HTTP {post.status}"
                post.excerpt = one_line(response.body[:EXCERPT].decode("utf-8", "replace"), EXCERPT)
        except UrlNotAllowed as exc:
            post.error = str(exc)
        except httpx.HTTPError as exc:
            post.error = describe_failure(exc)
        return post

    @staticmethod
    def _not_delivered(
        event: WebhookEvent, configured_url: str, post: Post, info: activity.Info, attempt: int
    ) -> NoReturn:
        """Report the failed attempt and fail the activity: for good on a 410, else for the retry
        policy to try again."""
        # a receiver that fails is routine, not a fault of ours: one line for the operator (the
        # SDK logs a BENIGN failure at DEBUG, without the stack trace)
        events.webhook_attempt_failed(
            logger=log,
            organization_id=event.organization_id,
            request_id=event.request_id,
            workflow_id=info.workflow_id,
            event_id=event.id,
            event_type=event.event_type,
            attempt=attempt,
            error=post.error or "",
            host=httpx.URL(configured_url).host,
            excerpt=post.excerpt,
        )
        if post.status == 410:
            raise ApplicationError(
                "the receiver answered 410 Gone",
                type="gone",
                non_retryable=True,
                category=ApplicationErrorCategory.BENIGN,
            )
        raise ApplicationError(
            f"not delivered: {post.error}", type="not_delivered", category=ApplicationErrorCategory.BENIGN
        )

    @staticmethod
    def _next_attempt(info: activity.Info, attempt: int) -> datetime | None:
        """When the retry policy will try again, or None when the delivery window ends first."""
        at = utcnow() + retry_delay(attempt)
        window = info.schedule_to_close_timeout or timedelta(0)
        started = info.scheduled_time
        return at if window and at < started + window else None

    @defn(name=ActivityNames.RECORD_WEBHOOK_FAILURE)
    def record_webhook_failure(self, inp: RecordWebhookFailureInput) -> None:
        before = store.get_event(self._engine, inp.event_id)
        store.mark_failed(self._engine, inp.event_id, inp.reason)
        if before.state not in (store.FAILED, store.DELIVERED):  # failed now, not by an earlier run
            events.webhook_failed(
                organization_id=before.organization_id,
                request_id=before.request_id,
                workflow_id=activity.info().workflow_id,
                event_id=before.id,
                reason=inp.reason,
            )

    def all(self) -> list[Callable[..., Any]]:
        return [
            self.create_credential_event,
            self.create_otp_failed_event,
            self.create_identity_event,
            self.webhook_event_state,
            self.deliver_webhook,
            self.record_webhook_failure,
        ]
