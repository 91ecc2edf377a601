"""Secrets of the subject's journey: one-time codes, their keyed hashes, the approval link and the
page session (CONTRACT 8).

Every value here is keyed by a sub-key derived from the master key (HKDF-SHA256, one ``info`` per
purpose), so nothing that leaves the process lets anyone recompute another:

- **Codes** are 6 digits drawn from a keyed PRF of (request, subject, send number): unpredictable
  without the key, and the same when a send is retried, so a message that went out before its
  activity failed still carries the valid code (a subject never holds a superseded code from a
  retry). Only ``code_hash`` of a code is stored, logged or given to the workflow: HMAC-SHA256
  over the request, the subject and the code, base64url, under another sub-key. Without the key a
  stored hash does not reveal the code, even by trying all million codes.
- **The link** ``/r/<token>`` names one subject of one request: the token carries both ids and a
  128-bit MAC over them, so it is unguessable, needs no storage and is the same on every resend.
  It stops working when the request ends, because the page checks the request, not the token.
- **The page session**, given to the browser after the code was accepted (a hidden form field, so
  it works without cookies, inside an iframe and without JavaScript), is a MAC over the token and
  its time of issue, valid for ``SESSION_LIFETIME``. It never leaves our origin: in particular it
  is not in the URL an identity provider sends the subject back to.
- **The identity check's return** binds that URL to the subject's browser: starting a check sets
  a random browser secret in an HttpOnly cookie and stores only ``kyc_browser_hash`` of it on the
  check; the return URL names the check, which is worthless without the cookie and used once
  (``api.routes.journey``).
- **The trusted browser session** (``iframe.cookie``, issue 36): a subject who confirmed their
  code on a request that allows it gets a fresh random token in an HttpOnly cookie; only
  ``trusted_session_hash`` of it is stored, with the organization, the subject and the expiry
  (``store.trusted``). A later request of that organization to that subject that allows it too
  skips the code in that browser; a stored hash opens nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
import uuid
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

CODE_DIGITS = 6
SESSION_LIFETIME_SECONDS = 30 * 60
KYC_RETURN_SECONDS = SESSION_LIFETIME_SECONDS  # how long after its start a check's return is taken
KYC_BROWSER_SECRET_BYTES = 32
TRUSTED_TOKEN_BYTES = 32
_LINK_MAC_BYTES = 16
_LINK_BYTES = 12 + 16 + _LINK_MAC_BYTES  # request ObjectId, subject UUID, MAC


_B64_RE = re.compile(r"[A-Za-z0-9_-]+")


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


_LINK_TOKEN = re.compile(rf"[A-Za-z0-9_-]{{{len(_b64(bytes(_LINK_BYTES)))}}}")


def _strict_unb64(text: str) -> bytes | None:
    """The bytes of ``text`` if it is exactly how ``_b64`` spells them, else None: one spelling per
    value (no padding, no ``+``/``/``, no other character, no stray bits in the last character),
    so a token can be compared, logged and rate-limited as the one string it is."""
    if not _LINK_TOKEN.fullmatch(text):
        return None
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return raw if _b64(raw) == text else None


@dataclass(frozen=True)
class LinkTarget:
    request_id: str
    subject_id: str


class JourneySecrets:
    """The keyed operations of the journey, from the master key."""

    def __init__(self, master_key: bytes) -> None:
        self._otp_key = self._derive(master_key, b"mandatum otp code hash v1")
        self._code_key = self._derive(master_key, b"mandatum otp code v1")
        self._link_key = self._derive(master_key, b"mandatum approval link v1")
        self._session_key = self._derive(master_key, b"mandatum page session v1")
        self._kyc_return_key = self._derive(master_key, b"mandatum kyc return browser v1")
        self._contact_key = self._derive(master_key, b"mandatum contact lookup v1")
        self._trusted_key = self._derive(master_key, b"mandatum trusted browser session v1")
        self._document_key = self._derive(master_key, b"mandatum document id v1")

    @staticmethod
    def _derive(master_key: bytes, info: bytes) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(master_key)

    # --- codes ------------------------------------------------------------------------------

    def code_for(self, request_id: str, subject_id: str, send_number: int) -> str:
        """The ``send_number``-th code of the subject: 6 digits (leading zeros kept). The bias of
        reducing 256 bits modulo 10^6 is below 2^-236."""
        mac = hmac.new(self._code_key, f"{request_id}:{subject_id}:{send_number}".encode(), hashlib.sha256)
        return f"{int.from_bytes(mac.digest(), 'big') % 10**CODE_DIGITS:0{CODE_DIGITS}d}"

    def code_hash(self, request_id: str, subject_id: str, code: str) -> str:
        """The keyed hash under which a code is stored and compared. ``code`` is normalized
        (spaces and dashes a person may type are dropped)."""
        digits = "".join(ch for ch in code if ch not in " -\u00a0\t")
        message = f"{request_id}:{subject_id}:{digits}".encode()
        return _b64(hmac.new(self._otp_key, message, hashlib.sha256).digest())

    # --- finding a person ------------------------------------------------------------------

    def contact_hash(self, contact: str) -> str:
        """The keyed hash of a normalized contact (``wire.contacts.normalize_contact``): how platform
        operators find a person's requests in every organization without a new clear copy of the
        contact (``Subject.contact_hash``). Hex, 64 characters."""
        return hmac.new(self._contact_key, contact.encode(), hashlib.sha256).hexdigest()

    def document_hash(self, document_id: str) -> str:
        """The keyed hash of a normalized document number (``wire.identity_match.normalize_document_id``):
        a request's ``docId``, kept only this way and compared with an identity check's document
        (``RequestSubject.doc_id_hash``). Hex, 64 characters."""
        return hmac.new(self._document_key, document_id.encode(), hashlib.sha256).hexdigest()

    # --- the approval link ------------------------------------------------------------------

    def link_token(self, request_id: str, subject_id: str) -> str:
        ids = bytes.fromhex(request_id) + uuid.UUID(subject_id).bytes
        return _b64(ids + self._link_mac(ids))

    def parse_link_token(self, token: str) -> LinkTarget | None:
        """The (request, subject) a token names, or None for anything not made by ``link_token``."""
        raw = _strict_unb64(token)
        if raw is None or len(raw) != _LINK_BYTES:
            return None
        ids, mac = raw[:28], raw[28:]
        if not hmac.compare_digest(mac, self._link_mac(ids)):
            return None
        return LinkTarget(request_id=ids[:12].hex(), subject_id=str(uuid.UUID(bytes=ids[12:])))

    def _link_mac(self, ids: bytes) -> bytes:
        return hmac.new(self._link_key, ids, hashlib.sha256).digest()[:_LINK_MAC_BYTES]

    # --- the page session -------------------------------------------------------------------

    def session_for(self, token: str, now: float | None = None) -> str:
        issued = int(now if now is not None else time.time())
        return f"{issued}.{self._session_mac(token, issued)}"

    def session_valid(self, token: str, session: str | None, now: float | None = None) -> bool:
        if not session or "." not in session or len(session) > 100:
            return False
        issued_text, mac = session.split(".", 1)
        if not re.fullmatch(r"[1-9][0-9]{0,11}", issued_text):  # one spelling: ASCII, no leading zero
            return False
        issued = int(issued_text)
        current = now if now is not None else time.time()
        if not issued <= current + 60 or current - issued > SESSION_LIFETIME_SECONDS:
            return False
        return hmac.compare_digest(mac, self._session_mac(token, issued))

    def _session_mac(self, token: str, issued: int) -> str:
        return _b64(hmac.new(self._session_key, f"{token}:{issued}".encode(), hashlib.sha256).digest())

    # --- the return from the identity provider ----------------------------------------------

    @staticmethod
    def kyc_browser_secret() -> str:
        """A fresh secret for the browser that starts an identity check (its cookie's value)."""
        return secrets.token_urlsafe(KYC_BROWSER_SECRET_BYTES)

    def kyc_browser_hash(self, check_id: str, secret: str) -> str:
        """What is stored of the browser secret on its check: a keyed hash bound to the check, so
        neither a stored hash nor another check's secret opens a return."""
        message = f"{check_id}:{secret}".encode()
        return _b64(hmac.new(self._kyc_return_key, message, hashlib.sha256).digest())

    @staticmethod
    def kyc_browser_secret_wellformed(secret: str | None) -> bool:
        """A cookie value that ``kyc_browser_secret`` could have made (checked before any use)."""
        return secret is not None and len(secret) == 43 and _B64_RE.fullmatch(secret) is not None

    # --- the trusted browser session ----------------------------------------------------------

    @staticmethod
    def trusted_session_token() -> str:
        """A fresh token for a browser the subject trusts (its cookie's value): 256 random bits."""
        return secrets.token_urlsafe(TRUSTED_TOKEN_BYTES)

    def trusted_session_hash(self, token: str) -> str:
        """What is stored of a trusted browser's token, and how it is found: a keyed hash under its
        own sub-key, so a copy of the table (or of the workflow's history, which carries the hash)
        does not open a session."""
        return _b64(hmac.new(self._trusted_key, token.encode(), hashlib.sha256).digest())

    @staticmethod
    def trusted_session_token_wellformed(token: str | None) -> bool:
        """A cookie value that ``trusted_session_token`` could have made (checked before any use)."""
        return token is not None and len(token) == 43 and _B64_RE.fullmatch(token) is not None


def mask_contact(contact: str) -> str:
    """What the page shows of where the code went: ``a•••@example.com``, ``+•••••••1234``."""
    if "@" in contact:
        local, domain = contact.split("@", 1)
        return f"{local[:1]}\u2022\u2022\u2022@{domain}"
    dots = "\u2022" * max(len(contact) - 5, 3)
    return f"{contact[:1]}{dots}{contact[-4:]}"


def approval_url(public_url: str, secrets: JourneySecrets, request_id: str, subject_id: str) -> str:
    """The subject's approval page, as their message carries it and ``GET /request/link`` gives it."""
    return f"{public_url.rstrip('/')}/r/{secrets.link_token(request_id, subject_id)}"
