"""Delivering the message with a subject's code: e-mail over SMTP, SMS through an HTTP provider, or
the development outbox (a directory of JSON files under ``var/outbox``, shown at ``/dev/outbox``).

Each transport either delivers, raises ``Undeliverable`` (a permanent refusal: the contact cannot
receive the message; the workflow reports ``otp.failed``) or raises anything else for a failure
worth retrying (the server is down). Message texts come from ``core.i18n``. Nothing here logs a
message body: it carries the code.
"""

from __future__ import annotations

import json
import os
import smtplib
import ssl
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Protocol

import httpx

from core.settings import Settings

UNDELIVERABLE = "UNDELIVERABLE"
INVALID_PHONE_NUMBER = "INVALID_PHONE_NUMBER"


class Undeliverable(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Message:
    channel: str  # email | sms
    to: str
    subject: str  # e-mail only; empty for SMS
    text: str


class Transport(Protocol):
    def send(self, message: Message) -> None: ...


# --- development outbox ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OutboxEntry:
    id: str
    channel: str
    to: str
    subject: str
    text: str
    created_at: str


class Outbox:
    """Messages written as files instead of sent. One file per message, written atomically, so
    the API process lists what the worker wrote. Development and test only (Settings refuses it in
    production): the files hold the codes."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def send(self, message: Message) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        now = datetime.now(UTC)
        entry = OutboxEntry(
            id=str(uuid.uuid4()),
            channel=message.channel,
            to=message.to,
            subject=message.subject,
            text=message.text,
            created_at=now.isoformat(),
        )
        name = f"{now.strftime('%Y%m%dT%H%M%S%f')}-{entry.id}.json"
        tmp = self.directory / f".{name}.tmp"
        tmp.write_text(json.dumps(asdict(entry), ensure_ascii=False))
        os.replace(tmp, self.directory / name)

    def entries(self, to: str | None = None, limit: int = 100) -> list[OutboxEntry]:
        """Newest first; ``to`` filters on the recipient (case-insensitive)."""
        if not self.directory.is_dir():
            return []
        found: list[OutboxEntry] = []
        for path in sorted(self.directory.glob("*.json"), reverse=True):
            try:
                entry = OutboxEntry(**json.loads(path.read_text()))
            except (OSError, ValueError, TypeError):
                continue
            if to is None or entry.to.lower() == to.lower():
                found.append(entry)
                if len(found) >= limit:
                    break
        return found


# --- e-mail ---------------------------------------------------------------------------------------


class SmtpTransport:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def send(self, message: Message) -> None:
        s = self._settings
        mail = EmailMessage()
        mail["From"] = s.smtp_sender
        mail["To"] = message.to
        mail["Subject"] = message.subject
        mail["Message-ID"] = make_msgid(domain=s.smtp_sender.rsplit("@", 1)[-1].strip(">") or None)
        mail.set_content(message.text)
        timeout = s.smtp_timeout_seconds
        smtp: smtplib.SMTP
        if s.smtp_security == "tls":
            smtp = smtplib.SMTP_SSL(
                s.smtp_host, s.smtp_port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            smtp = smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=timeout)
        with smtp:
            if s.smtp_security == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if s.smtp_username:
                password = s.smtp_password.get_secret_value() if s.smtp_password else ""
                smtp.login(s.smtp_username, password)
            try:
                smtp.send_message(mail)
            except smtplib.SMTPRecipientsRefused as exc:
                code = next(iter(exc.recipients.values()))[0]
                if 500 <= code < 600:  # permanent: no such mailbox, domain refuses mail
                    raise Undeliverable(
                        UNDELIVERABLE, f"the mail server refused the address ({code})"
                    ) from exc
                raise  # 4xx: try again later
            except smtplib.SMTPDataError as exc:
                if 500 <= exc.smtp_code < 600:
                    raise Undeliverable(
                        UNDELIVERABLE, f"the mail server refused the message ({exc.smtp_code})"
                    ) from exc
                raise


# --- SMS ------------------------------------------------------------------------------------------


class HttpSmsTransport:
    """A provider adapter over HTTP: ``POST sms_url`` with JSON ``{"to", "text"}`` and, when set,
    ``Authorization: Bearer <sms_token>``. 2xx is sent; 400 or 422 means the number cannot receive
    SMS (``INVALID_PHONE_NUMBER``), another 4xx a permanent refusal; 5xx and timeouts are retried.
    Providers with another shape sit behind a small relay that speaks this one."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def send(self, message: Message) -> None:
        s = self._settings
        headers = {}
        if s.sms_token is not None:
            headers["Authorization"] = f"Bearer {s.sms_token.get_secret_value()}"
        response = httpx.post(
            s.sms_url,
            json={"to": message.to, "text": message.text},
            headers=headers,
            timeout=s.sms_timeout_seconds,
        )
        if 200 <= response.status_code < 300:
            return
        if response.status_code in (400, 422):
            raise Undeliverable(
                INVALID_PHONE_NUMBER, f"the SMS provider refused the number ({response.status_code})"
            )
        if 400 <= response.status_code < 500 and response.status_code != 429:
            raise Undeliverable(
                UNDELIVERABLE, f"the SMS provider refused the message ({response.status_code})"
            )
        response.raise_for_status()
        raise httpx.HTTPStatusError(
            f"unexpected status {response.status_code}", request=response.request, response=response
        )


class NoTransport:
    """A channel the deployment does not offer (``MANDATUM_SMS_TRANSPORT=none``): every contact of
    it is undeliverable, which the workflow reports as ``otp.failed``."""

    def __init__(self, channel: str) -> None:
        self._channel = channel

    def send(self, message: Message) -> None:
        raise Undeliverable(UNDELIVERABLE, f"this service sends no codes by {self._channel}")


def outbox_of(settings: Settings) -> Outbox:
    return Outbox(settings.outbox_dir or settings.var_dir / "outbox")


def transport_for(settings: Settings, channel: str) -> Transport:
    kind = settings.email_transport if channel == "email" else settings.sms_transport
    if kind == "outbox":
        return outbox_of(settings)
    if kind == "none":
        return NoTransport(channel)
    if channel == "email":
        return SmtpTransport(settings)
    return HttpSmsTransport(settings)
