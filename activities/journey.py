"""Activities of the subject's journey: making, sending and checking one-time codes.

A code exists only inside ``send_otp`` (derived, hashed, put in the message) and in the message
itself; the activity returns where it went, never the code, so it stays out of workflow history.
A retried send sends the same code again (``JourneySecrets.code_for`` of the same send number).

A transport's failure is reported by its kind only (``code.failed``, and an ``ApplicationError``
naming the exception's type): what a mail server or an SMS provider says may hold the address or
the provider's URL, which must reach neither the logs nor the workflow's history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.definition import defn
from adapters.delivery import Message, Undeliverable, transport_for
from core import i18n
from core.actors import Actor
from core.observe import events
from core.otp import JourneySecrets, approval_url
from core.settings import Settings
from core.text import one_line
from services import journey as journey_service
from services import trusted_sessions
from store import journey as journeys
from store import otp as otp_store
from store.db import utcnow
from workflows.ids import ActivityNames
from workflows.messages import (
    CheckOtpInput,
    CheckSessionInput,
    CheckSessionResult,
    RecordIdentityInput,
    SendOtpInput,
    SendOtpResult,
    VerifyOtpResult,
)

NAME_LIMIT = 120
ORG_LIMIT = 100
QUOTES = str.maketrans({c: "'" for c in '"\u201c\u201d\u201e\u00ab\u00bb'})


def quoted_name(name: str) -> str:
    """An integrator's name as our messages show it: one line (control and bidi characters
    replaced), at most ``NAME_LIMIT`` characters, quoted, with its own quotation marks made plain
    apostrophes so it cannot close the quote and go on as our text."""
    return f"\u201c{one_line(name, NAME_LIMIT).translate(QUOTES)}\u201d"


def code_message(
    channel: str,
    to: str,
    language: str | None,
    organization: str,
    names: list[str],
    code: str,
    minutes: int,
    link: str,
) -> Message:
    """The message with a subject's code. Integrator text (the credential names) is set apart: each
    name quoted on a line of its own under a label saying the organization wrote it; the
    organization's name is made one line too. The checks at creation (wire/models.py) already
    refuse such characters; this holds whatever is stored."""
    org = one_line(organization, ORG_LIMIT)
    if channel == "email":
        what = "\n".join(f"  - {quoted_name(name)}" for name in names)
        return Message(
            "email",
            to,
            i18n.text(language, "email_subject", org=org),
            i18n.text(language, "email_body", org=org, what=what, code=code, minutes=minutes, link=link),
        )
    return Message(
        "sms", to, "", i18n.text(language, "sms_body", org=org, code=code, minutes=minutes, link=link)
    )


class JourneyActivities:
    def __init__(self, engine: Engine, settings: Settings, secrets: JourneySecrets) -> None:
        self._engine, self._settings, self._secrets = engine, settings, secrets

    @defn(name=ActivityNames.SEND_OTP)
    def send_otp(self, inp: SendOtpInput) -> SendOtpResult:
        journey = journeys.load_journey(self._engine, inp.request_id, inp.subject_id)
        if journey is None:
            raise ApplicationError(
                f"request {inp.request_id} has no subject {inp.subject_id}",
                type="not_found",
                non_retryable=True,
            )
        channel = journey.channel
        code = self._secrets.code_for(inp.request_id, inp.subject_id, inp.send_number)
        expires_at = otp_store.store_code(
            self._engine,
            inp.request_id,
            inp.subject_id,
            inp.send_number,
            self._secrets.code_hash(inp.request_id, inp.subject_id, code),
            channel,
            utcnow(),
            resent_by=inp.resent_by,
            reason=inp.reason,
        )
        message = self._message(journey, code)
        ids: dict[str, Any] = {
            "organization_id": journey.request.organization_id,
            "request_id": inp.request_id,
            "workflow_id": activity.info().workflow_id,
            "subject_id": inp.subject_id,
            "channel": channel,
            "send_number": inp.send_number,
        }
        try:
            transport_for(self._settings, channel).send(message)
        except Undeliverable as exc:
            otp_store.record_delivery_error(self._engine, inp.request_id, inp.subject_id, exc.code)
            events.code_failed(**ids, reason=exc.code)
            return SendOtpResult(
                channel=channel, delivered=False, error_code=exc.code, error_message=exc.message
            )
        except Exception as exc:  # worth retrying (the retry policy does); its text stays here
            kind = type(exc).__name__
            events.code_failed(**ids, reason="transient", error=kind)
            raise ApplicationError(
                f"the {channel} transport failed ({kind}); the same code is sent again",
                type="transport_failed",
            ) from None
        journeys.mark_sent(self._engine, inp.request_id)
        events.code_sent(**ids)
        return SendOtpResult(channel=channel, delivered=True, expires_at=expires_at)

    def _message(self, journey: journeys.Journey, code: str) -> Message:
        link = approval_url(self._settings.public_url, self._secrets, journey.request.id, journey.subject.id)
        minutes = int(otp_store.CODE_LIFETIME.total_seconds() // 60)
        return code_message(
            journey.channel,
            journey.subject.contact,
            journey.request.language,
            journey.organization.name,
            [c.name for c in journey.credentials],
            code,
            minutes,
            link,
        )

    @defn(name=ActivityNames.CHECK_OTP)
    def check_otp(self, inp: CheckOtpInput) -> VerifyOtpResult:
        return journey_service.check_code(
            self._engine, Actor.subject(inp.subject_id), inp.request_id, inp.subject_id, inp.code_hash
        )

    @defn(name=ActivityNames.CHECK_TRUSTED_SESSION)
    def check_trusted_session(self, inp: CheckSessionInput) -> CheckSessionResult:
        return trusted_sessions.check_session(
            self._engine, Actor.subject(inp.subject_id), inp.request_id, inp.subject_id, inp.token_hash
        )

    @defn(name=ActivityNames.RECORD_IDENTITY)
    def record_identity(self, inp: RecordIdentityInput) -> None:
        journey_service.record_identity(
            self._engine, journey_service.identity_actor(inp.subject_id, inp.source), inp
        )

    def all(self) -> list[Callable[..., Any]]:
        return [self.send_otp, self.check_otp, self.check_trusted_session, self.record_identity]
