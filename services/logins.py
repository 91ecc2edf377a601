"""Logging in to the dashboard (issue 14; issue 30, items 2, 3, 6 and 7): the password, then the
second factor's code (or one of the member's recovery codes) when it is on, throttled per address
and client address; and a password set from a one-time link.

- **Who is counted** (``services.login_throttle``, shared with every change to a second factor):
  every attempt counts against two keys, the e-mail address with the client's address, and the
  client's address alone, each locking with a growing wait from its threshold on. So failures
  slow down the client that fails, at one account or at many, and never refuse the right password
  from a client that has not failed: a guesser cannot lock the owner out.
- **Counted first.** An attempt is counted, atomically, before its password is checked, and gives
  its count back when it was right (or never checked): a burst from one client never checks more
  passwords than the threshold allows. A code, or a recovery code, is counted the same way.
- **No enumeration.** The address is counted whether a member has it or not (by its keyed hash,
  HMAC-SHA256 under a sub-key of the master key), and an address no member has is checked against
  a stand-in hash: an unknown address, a wrong password and a locked address answer alike, after
  the same work (a lock answers before any hash, whoever has the address).
- **The client's address** is the ASGI ``client`` the API was given: the peer, or, behind a
  reverse proxy that uvicorn trusts (``--forwarded-allow-ips`` / ``FORWARDED_ALLOW_IPS``), the
  address the proxy puts in ``X-Forwarded-For``. IPv6 clients count by their /64 network, since
  one host commonly holds a whole /64.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from services import members, passwords
from services import second_factor as factor
from services.context import Context
from services.errors import Conflict, Invalid
from services.login_throttle import BACKOFF as BACKOFF  # the purge loop's, and the tests'
from services.login_throttle import Attempt, address_key, count
from services.login_throttle import client_key as client_key
from store import member_sessions as sessions
from store import members as store
from store import second_factor as factor_store
from store.db import run_db, utcnow
from store.tables import Member

PENDING_CODE = timedelta(minutes=5)
WRONG_LOGIN = "Wrong e-mail or password"
USED_CODE = "That code was used already: wait for the next one your app shows (a new one every 30 seconds)"
CODE_SESSION_OVER = "Your login has waited too long for the code: log in again"
WRONG_CODE = (
    "That code is not right (or was used already): type the 6 digits your app shows now, or one of "
    "your recovery codes"
)


@dataclass(frozen=True)
class Login:
    member: Member
    session_token: str  # the cookie's value; the database has its SHA-256 only
    expires_at: datetime
    awaiting_code: bool = False  # the session opens nothing until the second factor's code
    recovery_left: int | None = None  # a recovery code was used: how many remain


def _typed_address(raw: str) -> str:
    """The address as members are stored (so any spelling of one counts as one), or, for text that
    is no address, that text: counted like any other address no member has."""
    try:
        return members.email_address(raw)
    except Invalid:
        return raw.strip().lower()


async def login(
    ctx: Context, email: str, password: str, client: str | None, now: datetime | None = None
) -> Login:
    """A new session for the member, or ``Invalid`` (wrong e-mail or password, the same words
    either way), ``TooMany`` while the address from this client, or this client, is locked, or
    ``passwords.Busy`` when the hashing threads are full (the attempt is not counted then)."""
    now = now or utcnow()
    address = _typed_address(email)
    attempt = await run_db(ctx.engine, count, ctx, address, client, now)
    member = await run_db(ctx.engine, store.member_signing_in, ctx.engine, address)
    stored = member.password_hash if member is not None and member.disabled_at is None else None
    try:
        right = await passwords.matches(stored, password)
    except passwords.Busy:
        await run_db(ctx.engine, attempt.give_back)
        raise
    if member is None or not right:
        raise Invalid(WRONG_LOGIN)
    await run_db(ctx.engine, attempt.give_back)
    return await run_db(ctx.engine, _open_session, ctx, member, now)


def _open_session(ctx: Context, member: Member, now: datetime) -> Login:
    token = secrets.token_urlsafe(32)
    waits = member.totp_enabled_at is not None
    expires = now + (PENDING_CODE if waits else ctx.settings.dashboard_session_max)
    sessions.start_session(ctx.engine, member.id, members.digest(token), now, expires, awaiting_code=waits)
    return Login(member, token, expires, awaiting_code=waits)


def second_factor(
    ctx: Context, pending_token: str | None, code: str, client: str | None, now: datetime | None = None
) -> Login:
    """The second step of a login: the code, or one of the member's recovery codes (used once,
    recorded), for the session that waits for it, counted like a password (the same keys, so a
    right password alone never buys more tries at the code); ``Invalid`` when the waiting session
    is over (log in again)."""
    now = now or utcnow()
    if not pending_token or len(pending_token) > 200:
        raise Invalid(CODE_SESSION_OVER)
    member = sessions.pending_session(ctx.engine, members.digest(pending_token), now)
    if member is None:
        raise Invalid(CODE_SESSION_OVER)
    attempt = count(ctx, member.email, client, now)
    typed = factor.code_of(ctx, member, code, now)
    if typed is not None:
        opened = _open_with_code(ctx, member, members.digest(pending_token), typed, now, attempt)
        if opened is not None:
            return opened
        if typed.step is not None:
            # the right code of a time step used already (the one that turned the factor on, say,
            # within its 30 s): refused, since a code opens once, but no failure: it proves the
            # factor, so it never counts toward the lock
            attempt.give_back()
            raise Invalid(USED_CODE)
    raise Invalid(WRONG_CODE)


def _open_with_code(
    ctx: Context, member: Member, pending: str, typed: factor.Code, now: datetime, attempt: Attempt
) -> Login | None:
    """The full session a right code opens in place of the waiting one (None when it was used)."""
    token = secrets.token_urlsafe(32)
    expires = now + ctx.settings.dashboard_session_max
    done = factor_store.complete_login(
        ctx.engine,
        pending,
        member.id,
        members.digest(token),
        now,
        expires,
        actor=str(members.actor_of(member)),
        step=typed.step,
        code_hash=typed.recovery_hash,
    )
    if not done:
        return None
    attempt.give_back()
    left = factor_store.codes_left(ctx.engine, member.id) if typed.recovery_hash else None
    return Login(member, token, expires, recovery_left=left)


LINK_GONE = "This link is unknown, used or expired: ask for a new one"
SIGNS_IN_ELSEWHERE = (
    "This address already signs in to the dashboard of another organization, and an address signs "
    "in to one place only: ask who invited you to invite another address of yours"
)


async def set_password(ctx: Context, token: str, password: str) -> Member:
    """Use a set-password or reset link once: the member's password, every other session ended,
    the address's failed logins forgotten. The actor is the member the link belongs to. The link is
    looked up first: one nobody was sent costs no hash. ``Conflict`` when the address signs in
    elsewhere already (docs/adr/0003), ``passwords.Busy`` when the hashing threads are full."""
    checked, digest = members.checked_password(password), members.digest(token)
    holder = await run_db(ctx.engine, store.token_holder, ctx.engine, digest, members.LINK_PURPOSES, utcnow())
    if holder is None:
        raise Invalid(LINK_GONE)
    if await run_db(ctx.engine, store.signs_in_elsewhere, ctx.engine, holder):
        raise Conflict(SIGNS_IN_ELSEWHERE)
    hashed = await passwords.hashed(checked)
    try:
        member = await run_db(
            ctx.engine,
            store.take_token_and_set_password,
            ctx.engine,
            digest,
            members.LINK_PURPOSES,
            hashed,
            utcnow(),
            forget=address_key(ctx, holder.email),
        )
    except store.AddressTaken as exc:
        raise Conflict(SIGNS_IN_ELSEWHERE) from exc
    if member is None:
        raise Invalid(LINK_GONE)
    return member
