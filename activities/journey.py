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
from core.secretbox import SecretCipher
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
    SendLinkInput,
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


def link_message(
    channel: str, to: str, language: str | None, organization: str, names: list[str], link: str
) -> Message:
    """The message of a subject whose code goes to their secondary contact (issue 36): the link
    alone, never a code, set apart as ``code_message`` sets it."""
    org = one_line(organization, ORG_LIMIT)
    if channel == "email":
        what = "\n".join(f"  - {quoted_name(name)}" for name in names)
        return Message(
            "email",
            to,
            i18n.text(language, "email_subject", org=org),
            i18n.text(language, "link_email_body", org=org, what=what, link=link),
        )
    return Message("sms", to, "", i18n.text(language, "link_sms_body", org=org, link=link))


def secondary_code_message(
    channel: str, to: str, language: str | None, organization: str, code: str, minutes: int
) -> Message:
    """The code alone, for a subject's secondary contact: never the link, which only their
    contact receives."""
    org = one_line(organization, ORG_LIMIT)
    if channel == "email":
        return Message(
            "email",
            to,
            i18n.text(language, "code_email_subject", org=org),
            i18n.text(language, "code_email_body", org=org, code=code, minutes=minutes),
        )
    return Message("sms", to, "", i18n.text(language, "code_sms_body", org=org, code=code, minutes=minutes))


def channel_of(kind: str) -> str:
    """The transport of a contact of ``kind`` (email | phone)."""
    return "email" if kind == "email" else "sms"


class JourneyActivities:
    def __init__(
        self, engine: Engine, settings: Settings, secrets: JourneySecrets, cipher: SecretCipher | None = None
    ) -> None:
        self._engine, self._settings, self._secrets = engine, settings, secrets
        # opens a subject's secondary contact, kept encrypted (store.tables.RequestSubject)
        self._cipher = cipher or SecretCipher(settings.master_key_bytes())

    def _secondary(self, journey: journeys.Journey) -> str | None:
        sealed = journey.link.secondary_contact_sealed
        return None if sealed is None else self._cipher.decrypt(sealed)

    @defn(name=ActivityNames.SEND_OTP)
    def send_otp(self, inp: SendOtpInput) -> SendOtpResult:
        journey = journeys.load_journey(self._engine, inp.request_id, inp.subject_id)
        if journey is None:
            raise ApplicationError(
                f"request {inp.request_id} has no subject {inp.subject_id}",
                type="not_found",
                non_retryable=True,
            )
        secondary = self._secondary(journey)
        kind = journey.link.secondary_contact_kind
        channel = channel_of(kind) if secondary is not None and kind else journey.channel
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
            # a code to the secondary contact is recorded with its channel (never the contact)
            secondary_by=None if secondary is None else str(Actor.subject(inp.subject_id)),
        )
        if secondary is None:
            message = self._message(journey, code)
        else:
            minutes = int(otp_store.CODE_LIFETIME.total_seconds() // 60)
            message = secondary_code_message(
                channel, secondary, journey.request.language, journey.organization.name, code, minutes
            )
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

    @defn(name=ActivityNames.SEND_LINK)
    def send_link(self, inp: SendLinkInput) -> SendOtpResult:
        """The link alone to the contact of a subject whose code goes to their secondary contact
        when they open it (issue 36). Sending it makes the request's credentials PENDING."""
        journey = journeys.load_journey(self._engine, inp.request_id, inp.subject_id)
        if journey is None:
            raise ApplicationError(
                f"request {inp.request_id} has no subject {inp.subject_id}",
                type="not_found",
                non_retryable=True,
            )
        channel = journey.channel
        link = approval_url(self._settings.public_url, self._secrets, journey.request.id, journey.subject.id)
        message = link_message(
            channel,
            journey.subject.contact,
            journey.request.language,
            journey.organization.name,
            [c.name for c in journey.credentials],
            link,
        )
        try:
            transport_for(self._settings, channel).send(message)
        except Undeliverable as exc:
            return SendOtpResult(
                channel=channel, delivered=False, error_code=exc.code, error_message=exc.message
            )
        except Exception as exc:  # worth retrying; its text stays here (see send_otp)
            raise ApplicationError(
                f"the {channel} transport failed ({type(exc).__name__}); the link is sent again",
                type="transport_failed",
            ) from None
        journeys.mark_sent(self._engine, inp.request_id)
        return SendOtpResult(channel=channel, delivered=True)

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
        return [
            self.send_otp,
            self.send_link,
            self.check_otp,
            self.check_trusted_session,
            self.record_identity,
        ]
