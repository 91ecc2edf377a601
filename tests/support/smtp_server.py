"""A real SMTP server for the tests (aiosmtpd, on 127.0.0.1, on a port the kernel picks).

Every message it receives is kept, parsed with ``email.policy.default``, with its envelope sender
and recipients. ``wait_for`` waits for a message delivered (RCPT TO) to an address; ``text_of``
gives a message's plain-text body.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from html.parser import HTMLParser
from types import TracebackType

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session


@dataclass
class ReceivedMail:
    """One message as received: the envelope and the parsed message."""

    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    raw: bytes
    received_at: float = field(default_factory=time.monotonic)

    def is_to(self, address: str) -> bool:
        return address.casefold() in (r.casefold() for r in self.rcpt_tos)

    def describe(self) -> str:
        return f"from {self.mail_from} to {', '.join(self.rcpt_tos)}: {self.message['Subject']!r}"


class _Handler:
    def __init__(self, store: SmtpServer) -> None:
        self._store = store

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, rcpt_options: list[str]
    ) -> str:
        if address.lower() in self._store.refused:
            return "550 5.1.1 No such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or b""
        message = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self._store._add(ReceivedMail(envelope.mail_from or "", list(envelope.rcpt_tos), message, raw))
        return "250 Message accepted for delivery"


class _Controller(Controller):
    """aiosmtpd's Controller, able to listen on port 0.

    ``Controller.start`` connects to ``self.port`` once the server is listening (to check that it
    answers), which fails for port 0; so, right before that, take the port actually bound from the
    listening socket.
    """

    def _trigger_server(self) -> None:
        assert isinstance(self.server, asyncio.Server)
        self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()


class SmtpServer:
    """A real SMTP server in a thread of its own; ``start()`` it, ``stop()`` it when done."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.messages: list[ReceivedMail] = []
        self.refused: set[str] = set()
        self._lock = threading.Lock()
        self._controller: _Controller | None = None

    def start(self) -> SmtpServer:
        assert self._controller is None, "already started"
        controller = _Controller(
            _Handler(self),
            hostname=self.host,
            port=self.port,
            server_hostname="mandatum-test-smtp",
            ready_timeout=10.0,
        )
        controller.start()
        self._controller = controller
        self.port = controller.port
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def __enter__(self) -> SmtpServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _add(self, mail: ReceivedMail) -> None:
        with self._lock:
            self.messages.append(mail)

    def received(self) -> list[ReceivedMail]:
        """A snapshot of what arrived so far."""
        with self._lock:
            return list(self.messages)

    def refuse(self, address: str) -> None:
        """Answer 550 (no such mailbox) to RCPT TO for ``address`` from now on."""
        self.refused.add(address.lower())

    def clear(self) -> None:
        with self._lock:
            self.messages.clear()

    def received_for(self, to: str) -> list[ReceivedMail]:
        return [m for m in self.received() if m.is_to(to)]

    async def wait_for(
        self,
        to: str,
        timeout: float = 10.0,  # noqa: ASYNC109 (a deadline, not a cancel)
        predicate: Callable[[EmailMessage], bool] | None = None,
    ) -> EmailMessage:
        """The first message delivered to ``to`` (case-insensitive, envelope recipients) that
        matches ``predicate``; waits up to ``timeout`` seconds for it, else AssertionError."""
        deadline = time.monotonic() + timeout
        while True:
            for mail in self.received():
                if mail.is_to(to) and (predicate is None or predicate(mail.message)):
                    return mail.message
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.05)
        arrived = [m.describe() for m in self.received()]
        raise AssertionError(
            f"no e-mail to {to}{' matching the predicate' if predicate else ''} within {timeout}s; "
            f"arrived: {arrived or 'nothing'}"
        )


class _TextOfHtml(HTMLParser):
    _BLOCKS = frozenset({"br", "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head"):
            self._skip += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head"):
            self._skip = max(0, self._skip - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(re.sub(r"\s+", " ", data))  # in HTML, a line break is just a space


def html_to_text(html: str) -> str:
    parser = _TextOfHtml()
    parser.feed(html)
    parser.close()
    lines = (line.strip() for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)


def text_of(msg: EmailMessage) -> str:
    """The message's plain-text body: its text/plain part, else its HTML part without the tags.

    Line ends are ``\n`` (SMTP carries CRLF, which the parser leaves in the body)."""
    for subtype in ("plain", "html"):
        part = msg.get_body(preferencelist=(subtype,))
        if part is not None:
            content = part.get_content()
            assert isinstance(content, str)
            content = content.replace("\r\n", "\n")
            return content if subtype == "plain" else html_to_text(content)
    return ""
