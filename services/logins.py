"""Logging in to the dashboard (issue 14; issue 30, items 2, 3 and 6): the password, then the
second factor's code when it is on, throttled per address and client address; and a password set
from a one-time link.

- **Who is counted.** Every attempt counts against two keys (``store.throttle``): the e-mail
  address with the client's address, and the client's address alone. The first locks after
  ``login_failures_before_lock`` failures, the second after ``login_failures_per_client``; from
  there every failure locks the key for 1 minute, then 2, 4 ... at most 60. One failure is forgiven
  per hour without one, all after a day. So failures slow down the client that fails, at one
  account or at many, and never refuse the right password from a client that has not failed: a
  guesser cannot lock the owner out.
- **Counted first.** An attempt is counted, atomically, before its password is checked, and gives
  its count back when it was right (or never checked): a burst from one client never checks more
  passwords than the threshold allows.
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

import hashlib
import hmac
import ipaddress
import math
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from services import members, passwords
from services.context import Context
from services.errors import Conflict, Invalid, TooMany
from store import member_sessions as sessions
from store import members as store
from store import throttle
from store.db import run_db, utcnow
from store.tables import Member

PENDING_CODE = timedelta(minutes=5)
WRONG_LOGIN = "Wrong e-mail or password"
CODE_SESSION_OVER = "Your login has waited too long for the code: log in again"
WRONG_CODE = "That code is not right (or was used already): type the 6 digits your app shows now"
BACKOFF = throttle.Backoff(
    first_lock=timedelta(minutes=1),
    max_lock=timedelta(minutes=60),
    forgive_every=timedelta(hours=1),
    forget_after=timedelta(hours=24),
)
UNKNOWN_CLIENT = "unknown"
_NAME_RE = re.compile(r"[A-Za-z0-9._:-]{1,64}")


@dataclass(frozen=True)
class Login:
    member: Member
    session_token: str  # the cookie's value; the database has its SHA-256 only
    expires_at: datetime
    awaiting_code: bool = False  # the session opens nothing until the second factor's code


def client_key(host: str | None) -> str:
    """What a client is counted as: its IPv4 address, its IPv6 /64 network (an IPv4 address
    carried in IPv6 as that address), or, for a peer of another kind, a short safe name."""
    try:
        ip = ipaddress.ip_address(host or "")
    except ValueError:
        return host if host and _NAME_RE.fullmatch(host) else UNKNOWN_CLIENT
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


@lru_cache(maxsize=4)
def _address_secret(master_key: bytes) -> bytes:
    info = b"mandatum login throttle v1"
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(master_key)


def address_key(ctx: Context, address: str) -> str:
    """The keyed hash an e-mail address is counted under (never the address itself)."""
    secret = _address_secret(ctx.settings.master_key_bytes())
    return hmac.new(secret, address.encode("utf-8"), hashlib.sha256).hexdigest()


def _typed_address(raw: str) -> str:
    """The address as members are stored (so any spelling of one counts as one), or, for text that
    is no address, that text: counted like any other address no member has."""
    try:
        return members.email_address(raw)
    except Invalid:
        return raw.strip().lower()


def _limits(ctx: Context, address: str, client: str) -> list[throttle.Limit]:
    key = address_key(ctx, address)
    return [
        throttle.Limit(f"login:{key}:{client}", ctx.settings.login_failures_before_lock, address=key),
        throttle.Limit(f"client:{client}", ctx.settings.login_failures_per_client),
    ]


def _attempt(ctx: Context, limits: list[throttle.Limit], now: datetime) -> None:
    """Count the attempt, or ``TooMany`` (the same words for everyone) while a key is locked."""
    until = throttle.take(ctx.engine, limits, now, BACKOFF)
    if until is not None:
        wait = max(1, math.ceil((until - now).total_seconds()))
        minutes = math.ceil(wait / 60)
        raise TooMany(f"Too many failed logins: try again in {minutes} minute(s)", retry_after=wait)


def _give_back(ctx: Context, limits: list[throttle.Limit]) -> None:
    throttle.give_back(ctx.engine, [limit.key for limit in limits])


async def login(
    ctx: Context, email: str, password: str, client: str | None, now: datetime | None = None
) -> Login:
    """A new session for the member, or ``Invalid`` (wrong e-mail or password, the same words
    either way), ``TooMany`` while the address from this client, or this client, is locked, or
    ``passwords.Busy`` when the hashing threads are full (the attempt is not counted then)."""
    now = now or utcnow()
    address = _typed_address(email)
    limits = _limits(ctx, address, client_key(client))
    await run_db(ctx.engine, _attempt, ctx, limits, now)
    member = await run_db(ctx.engine, store.member_signing_in, ctx.engine, address)
    stored = member.password_hash if member is not None and member.disabled_at is None else None
    try:
        right = await passwords.matches(stored, password)
    except passwords.Busy:
        await run_db(ctx.engine, _give_back, ctx, limits)
        raise
    if member is None or not right:
        raise Invalid(WRONG_LOGIN)
    await run_db(ctx.engine, _give_back, ctx, limits)
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
    """The second step of a login: the code for the session that waits for it, counted like a
    password (the same keys, so a right password alone never buys more tries at the code);
    ``Invalid`` when the waiting session is over (log in again)."""
    now = now or utcnow()
    if not pending_token or len(pending_token) > 200:
        raise Invalid(CODE_SESSION_OVER)
    member = sessions.pending_session(ctx.engine, members.digest(pending_token), now)
    if member is None:
        raise Invalid(CODE_SESSION_OVER)
    limits = _limits(ctx, member.email, client_key(client))
    _attempt(ctx, limits, now)
    step = members.matching_step(members.secret_of(ctx, member), code.strip(), now)
    if step is not None:
        token = secrets.token_urlsafe(32)
        expires = now + ctx.settings.dashboard_session_max
        pending, opened = members.digest(pending_token), members.digest(token)
        if store.complete_second_factor(ctx.engine, pending, member.id, step, opened, now, expires):
            _give_back(ctx, limits)
            return Login(member, token, expires)
    raise Invalid(WRONG_CODE)


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
