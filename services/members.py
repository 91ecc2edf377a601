"""Dashboard members (issue 14): invitations with a one-time link to set the first password,
password reset, login with back-off after repeated failures, server-side sessions with idle and
absolute expiry, and the CSRF token of a session's forms.

- Passwords are Argon2id hashes (``argon2-cffi``'s defaults); 12 to 1024 characters.
- Link and session tokens are 32 random bytes, URL-safe; the database keeps their SHA-256 only, so a
  copy of the database opens no session and sets no password.
- A failed login counts against the member; from the ``login_failures_before_lock``-th on, logging
  in is refused for 1 minute, then 2, 4 ... at most 60 (``TooMany`` with ``retry_after``). An
  unknown e-mail answers exactly like a wrong password, after the same hashing work.
- A session ends when idle for ``dashboard_idle``, ``dashboard_session_max`` after login, at logout,
  or when the member's password is set again (every session of the member).
- The CSRF token of a form is an HMAC of the session token under a key derived from the master key
  (HKDF-SHA256, its own ``info``): nothing to store, and it changes with every session.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import secrets
import smtplib
from dataclasses import dataclass
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from core.actors import Actor
from core.kinds import MemberRole, MemberTokenPurpose
from orchestration.delivery import Message, Undeliverable, transport_for
from services.context import Context
from services.errors import Conflict, Invalid, NotFound, TooMany
from store import members as store
from store.db import utcnow
from store.tables import Member
from wire.contacts import normalize_contact

MIN_PASSWORD, MAX_PASSWORD = 12, 1024
MAX_LOCK = timedelta(minutes=60)
WRONG_LOGIN = "Wrong e-mail or password"
log = logging.getLogger("mandatum.services.members")
_HASHER = PasswordHasher()  # Argon2id
_DUMMY_HASH = _HASHER.hash("a password no member has, hashed once")


@dataclass(frozen=True)
class Invitation:
    member: Member
    link: str  # the one-time link to set the first password (shown or sent once)


@dataclass(frozen=True)
class Login:
    member: Member
    session_token: str  # the cookie's value; the database has its SHA-256 only
    expires_at: datetime


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _email(raw: str) -> str:
    try:
        contact, kind = normalize_contact(raw)
    except ValueError as exc:
        raise Invalid(f"email: {exc}") from exc
    if kind != "email":
        raise Invalid("email must be an e-mail address")
    return contact


def check_new_email(ctx: Context, raw: str) -> str:
    """The address as a new member would be stored under it (lower-cased); ``Invalid`` for one that
    is no e-mail address, ``Conflict`` for one a member has already."""
    address = _email(raw)
    if store.member_by_email(ctx.engine, address) is not None:
        raise Conflict(f"{address} is already a member")
    return address


def _checked_password(password: str) -> str:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise Invalid(f"a password is {MIN_PASSWORD} to {MAX_PASSWORD} characters")
    return password


def _link(ctx: Context, purpose: MemberTokenPurpose, token: str) -> str:
    path = "set-password" if purpose == MemberTokenPurpose.SET_PASSWORD else "reset-password"
    return f"{ctx.settings.public_url.rstrip('/')}/dashboard/{path}/{token}"


def _new_link(ctx: Context, member_id: str, purpose: MemberTokenPurpose) -> str:
    token = secrets.token_urlsafe(32)
    now = utcnow()
    store.add_token(
        ctx.engine, member_id, _digest(token), purpose, now, now + ctx.settings.member_link_lifetime
    )
    return _link(ctx, purpose, token)


def invite(ctx: Context, actor: Actor, org_id: str, email: str, role: MemberRole) -> Invitation:
    """A new member of the organization with a one-time link to set their password."""
    address = _email(email)
    try:
        member = store.add_member(ctx.engine, org_id, address, MemberRole(role), utcnow())
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.EmailTaken as exc:
        raise Conflict(str(exc)) from exc
    return Invitation(member, _new_link(ctx, member.id, MemberTokenPurpose.SET_PASSWORD))


def password_reset_link(ctx: Context, actor: Actor, email: str) -> str | None:
    """A one-time link to set a new password, for a member with that e-mail (None for anyone else:
    the page that asks says the same either way)."""
    member = store.member_by_email(ctx.engine, _email(email))
    if member is None or member.disabled_at is not None:
        return None
    return _new_link(ctx, member.id, MemberTokenPurpose.RESET_PASSWORD)


RESET_EVERY = timedelta(minutes=1)


def send_password_reset(ctx: Context, actor: Actor, email: str) -> None:
    """E-mail a member a one-time link to choose a new password, through the delivery path of the
    subjects' codes (the dev outbox in development). Nothing happens for an address no member has,
    a disabled member, or a member sent one less than a minute ago: the page that asks says the
    same in every case, so it tells nobody who is a member and floods no inbox."""
    try:
        address = _email(email)
    except Invalid:
        return
    member = store.member_by_email(ctx.engine, address)
    now = utcnow()
    if member is None or member.disabled_at is not None:
        return
    if store.recent_token(ctx.engine, member.id, MemberTokenPurpose.RESET_PASSWORD, now - RESET_EVERY):
        return
    link = _new_link(ctx, member.id, MemberTokenPurpose.RESET_PASSWORD)
    hours = int(ctx.settings.member_link_lifetime.total_seconds() // 3600)
    text = (
        "Someone asked to reset your Mandatum dashboard password. To choose a new one, open:\n\n"
        f"{link}\n\nThe link works once, for {hours} hours. If it was not you, ignore this message: "
        "your password stays as it is.\n"
    )
    try:
        transport_for(ctx.settings, "email").send(
            Message("email", address, "Reset your Mandatum password", text)
        )
    except Undeliverable as exc:  # the asker is told the same; the operator sees why in the log
        log.warning("password reset e-mail to member %s not sent: %s", member.id, exc.code)
    except (OSError, smtplib.SMTPException) as exc:  # the mail server is away: the same
        log.warning("password reset e-mail to member %s not sent: %s", member.id, type(exc).__name__)


def set_password(ctx: Context, token: str, password: str) -> Member:
    """Use a set-password or reset link once: the member's password, every other session ended.
    The actor is the member the link belongs to."""
    hashed = _HASHER.hash(_checked_password(password))
    purposes = (MemberTokenPurpose.SET_PASSWORD, MemberTokenPurpose.RESET_PASSWORD)
    member = store.take_token_and_set_password(ctx.engine, _digest(token), purposes, hashed, utcnow())
    if member is None:
        raise Invalid("This link is unknown, used or expired: ask for a new one")
    return member


def _lock_for(failures: int, threshold: int) -> timedelta | None:
    if failures < threshold:
        return None
    return min(timedelta(minutes=2 ** (failures - threshold)), MAX_LOCK)


def login(ctx: Context, email: str, password: str, now: datetime | None = None) -> Login:
    """A new session for the member, or ``Invalid`` (wrong e-mail or password, the same words
    either way) or ``TooMany`` while logins are locked after repeated failures."""
    now = now or utcnow()
    try:
        address = _email(email)
    except Invalid:
        address = ""
    member = store.member_by_email(ctx.engine, address) if address else None
    if member is not None and member.locked_until is not None and member.locked_until > now:
        wait = math.ceil((member.locked_until - now).total_seconds())
        raise TooMany(
            f"Too many failed logins: try again in {math.ceil(wait / 60)} minute(s)", retry_after=wait
        )
    stored = member.password_hash if member is not None and member.disabled_at is None else None
    try:
        ok = _HASHER.verify(stored or _DUMMY_HASH, password) and stored is not None
    except (VerificationError, InvalidHashError):
        ok = False
    if member is None or not ok:
        if member is not None:
            failures = member.failed_logins + 1
            lock = _lock_for(failures, ctx.settings.login_failures_before_lock)
            store.record_login_failure(ctx.engine, member.id, now + lock if lock else None)
        raise Invalid(WRONG_LOGIN)
    token = secrets.token_urlsafe(32)
    expires = now + ctx.settings.dashboard_session_max
    store.start_session(ctx.engine, member.id, _digest(token), now, expires)
    return Login(member, token, expires)


def session_member(ctx: Context, session_token: str | None, now: datetime | None = None) -> Member | None:
    """The member of a live session (its last use becomes now), None otherwise."""
    if not session_token or len(session_token) > 200:
        return None
    now = now or utcnow()
    return store.live_session(ctx.engine, _digest(session_token), now, now - ctx.settings.dashboard_idle)


def logout(ctx: Context, session_token: str) -> None:
    store.end_session(ctx.engine, _digest(session_token), utcnow())


def actor_of(member: Member) -> Actor:
    """Who a member's actions are recorded as."""
    return Actor.member(member.id)


def _csrf_key(ctx: Context) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"mandatum dashboard csrf v1").derive(
        ctx.settings.master_key_bytes()
    )


def csrf_token(ctx: Context, session_token: str) -> str:
    """The token every form of this session carries."""
    return hmac.new(_csrf_key(ctx), _digest(session_token).encode(), hashlib.sha256).hexdigest()


def csrf_valid(ctx: Context, session_token: str | None, given: str | None) -> bool:
    if not session_token or not given or len(given) != 64:
        return False
    return hmac.compare_digest(csrf_token(ctx, session_token), given)
