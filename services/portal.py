"""The subject's portal (issue 32, item 2): signing in with a one-time code, the session, and its
forms' CSRF token. What a signed-in person sees and revokes is ``services.portal_mandates``.

- **Nothing tells whether a contact is known.** Asking for a code counts the attempt (per contact
  and per client, ``store.throttle``) and keeps a challenge for the browser, the same for every
  well-formed contact; the answer never waits for more. The look-up and the send run after the
  answer (``Context.spawn``): only a contact that is the subject of an organization with the
  portal on gets a code, through the journey's transports (``adapters.delivery``). A challenge
  without a code takes every code as wrong, counted and locked as any.
- **The code** (CONTRACT 8): 6 random digits, valid 10 minutes, locked at the fifth wrong try;
  only its keyed hash is kept, bound to the browser's token. Tries are counted per client too.
- **The browser's token** is 256 random bits in the HttpOnly cookie (``api.routes.portal``); the
  tables keep its keyed hash (ADR 0016). A new token is issued at sign-in (no fixation).
- **The session** ends when idle ``IDLE``, at ``MAX_AGE`` after sign-in, or at sign-out.
- **CSRF**: every form carries an HMAC of the browser's token under its own sub-key.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import math
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from adapters.delivery import Message, transport_for
from core import i18n
from core.otp import mask_contact
from services.context import Context
from services.errors import Invalid, TooMany
from services.login_throttle import client_key
from store import portal as store
from store import throttle, timeline
from store.db import run_db, utcnow
from store.tables import PortalSession
from wire.contacts import normalize_contact

log = logging.getLogger("mandatum.services.portal")

CODE_LIFETIME = timedelta(minutes=10)
IDLE = timedelta(minutes=15)
MAX_AGE = store.MAX_AGE
TOKEN_BYTES = 32
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{43}")
_CODE_RE = re.compile(r"[0-9]{6}")
SENDS_PER_CONTACT = 5  # codes asked for one contact before it waits (then 10 min, 20, ... 1 h)
SENDS_PER_CLIENT = 20  # codes asked for from one client, for any contacts
TRIES_PER_CLIENT = 20  # wrong codes from one client, for any challenges
BACKOFF = throttle.Backoff(
    first_lock=timedelta(minutes=10),
    max_lock=timedelta(hours=1),
    forgive_every=timedelta(minutes=10),
    forget_after=timedelta(hours=24),
)

PASSED, WRONG, EXPIRED, LOCKED, NO_CODE = (
    store.PASSED,
    store.WRONG,
    store.EXPIRED,
    store.LOCKED,
    store.NO_CODE,
)


@lru_cache(maxsize=4)
def _keys(master_key: bytes) -> tuple[bytes, bytes, bytes]:
    def derive(info: bytes) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(master_key)

    return (
        derive(b"mandatum portal token v1"),
        derive(b"mandatum portal code v1"),
        derive(b"mandatum portal csrf v1"),
    )


def _mac(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def new_token() -> str:
    """A fresh browser token (the cookie's value): 256 random bits, URL-safe."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_wellformed(token: str | None) -> bool:
    return token is not None and _TOKEN_RE.fullmatch(token) is not None


def token_hash(ctx: Context, token: str) -> str:
    """What the tables keep of a browser's token."""
    return _mac(_keys(ctx.settings.master_key_bytes())[0], token)


def code_hash(ctx: Context, browser_hash: str, code: str) -> str:
    """What a challenge keeps of its code: bound to the browser, so a code opens no other one."""
    return _mac(_keys(ctx.settings.master_key_bytes())[1], f"{browser_hash}:{code}")


def csrf_token(ctx: Context, token: str) -> str:
    """The token every form of this browser carries."""
    return _mac(_keys(ctx.settings.master_key_bytes())[2], token)


def csrf_valid(ctx: Context, token: str | None, given: str | None) -> bool:
    if not token_wellformed(token) or not given or len(given) != 64:
        return False
    assert token is not None
    return hmac.compare_digest(csrf_token(ctx, token), given)


def _too_many(until: datetime, now: datetime) -> TooMany:
    wait = max(1, math.ceil((until - now).total_seconds()))
    return TooMany(f"Too many tries: wait {math.ceil(wait / 60)} minute(s)", retry_after=wait)


# --- asking for a code --------------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    contact_shown: str  # where the code went, if it went anywhere


async def ask_code(
    ctx: Context, token: str, raw_contact: str, client: str | None, language: str | None = None
) -> Asked:
    """Ask for a code for ``raw_contact`` in the browser of ``token``: the same answer for every
    well-formed contact, known or not (``Invalid`` for one that is no e-mail address or E.164
    number, ``TooMany`` while the contact or the client waits). The code is sent after the answer."""
    if not token_wellformed(token):
        raise Invalid("This form has expired: reload the page.")
    try:
        contact, kind = normalize_contact(raw_contact)
    except ValueError as exc:
        raise Invalid(str(exc)) from exc
    contact_hash = ctx.journey.contact_hash(contact)
    browser = token_hash(ctx, token)
    where = client_key(client)
    now = utcnow()
    limits = [
        throttle.Limit(f"portal-send:{contact_hash}", SENDS_PER_CONTACT),
        throttle.Limit(f"portal-send-client:{where}", SENDS_PER_CLIENT),
    ]
    until = await run_db(ctx.engine, throttle.take, ctx.engine, limits, now, BACKOFF)
    if until is not None:
        raise _too_many(until, now)
    shown = mask_contact(contact)
    await run_db(
        ctx.engine, store.open_challenge, ctx.engine, browser, contact_hash, shown, now, now + CODE_LIFETIME
    )
    ctx.spawn(_send_if_known(ctx, browser, contact, kind, contact_hash, i18n.language_of(language)))
    return Asked(shown)


async def _send_if_known(
    ctx: Context, browser: str, contact: str, kind: str, contact_hash: str, language: str
) -> None:
    """The code, to a contact some organization with the portal on knows; nothing otherwise. A
    failure is logged by its kind only (the transport's words may hold the contact)."""
    try:
        await asyncio.to_thread(send_if_known, ctx, browser, contact, kind, contact_hash, language)
    except Exception as exc:
        log.warning("a portal code was not sent (%s)", type(exc).__name__)


def send_if_known(
    ctx: Context, browser: str, contact: str, kind: str, contact_hash: str, language: str
) -> bool:
    """Whether a code was sent (blocking; after the answer). Subjects from before their contacts
    were hashed (migration 0014) get their hash first, so they are found too."""
    timeline.fill_contact_hashes(ctx.engine, ctx.journey.contact_hash)
    if store.known_in_portal(ctx.engine, contact_hash) is None:
        return False
    code = f"{secrets.randbelow(10**6):06d}"
    if not store.set_code(ctx.engine, browser, contact_hash, code_hash(ctx, browser, code)):
        return False
    channel = "email" if kind == "email" else "sms"
    minutes = int(CODE_LIFETIME.total_seconds() // 60)
    if channel == "email":
        message = Message(
            "email",
            contact,
            i18n.text(language, "portal_email_subject"),
            i18n.text(language, "portal_email_body", code=code, minutes=minutes),
        )
    else:
        message = Message(
            "sms", contact, "", i18n.text(language, "portal_sms_body", code=code, minutes=minutes)
        )
    transport_for(ctx.settings, channel).send(message)
    return True


def contact_shown(ctx: Context, token: str | None) -> str | None:
    """The masked contact the browser asked a code for, None when it asked for none."""
    if not token_wellformed(token):
        return None
    assert token is not None
    found = store.get_challenge(ctx.engine, token_hash(ctx, token))
    return None if found is None else found.contact_shown


# --- entering it --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entered:
    outcome: str  # PASSED, WRONG, EXPIRED, LOCKED, NO_CODE
    attempts_left: int = 0
    session_token: str | None = None  # PASSED: the browser's new token


async def enter_code(ctx: Context, token: str | None, raw_code: str, client: str | None) -> Entered:
    """Check the code the browser of ``token`` entered; on success a session with a new token
    (``Invalid`` for what is not 6 digits, ``TooMany`` while the client waits)."""
    code = "".join(ch for ch in raw_code if ch not in " -\u00a0\t")[:20]
    if not _CODE_RE.fullmatch(code):
        raise Invalid("Enter the 6 digits of the code.")
    if not token_wellformed(token):
        return Entered(NO_CODE)
    assert token is not None
    now = utcnow()
    limit = throttle.Limit(f"portal-code-client:{client_key(client)}", TRIES_PER_CLIENT)
    until = await run_db(ctx.engine, throttle.take, ctx.engine, [limit], now, BACKOFF)
    if until is not None:
        raise _too_many(until, now)
    browser = token_hash(ctx, token)
    checked = await run_db(
        ctx.engine, store.check_code, ctx.engine, browser, code_hash(ctx, browser, code), now
    )
    if checked.outcome != store.PASSED or checked.challenge is None:
        outcome = LOCKED if checked.outcome == store.LOCKED_NOW else checked.outcome
        return Entered(outcome, checked.attempts_left)
    await run_db(ctx.engine, throttle.give_back, ctx.engine, [limit.key])
    fresh = new_token()
    challenge = checked.challenge
    await run_db(
        ctx.engine,
        store.open_session,
        ctx.engine,
        browser,
        token_hash(ctx, fresh),
        challenge.contact_hash,
        challenge.contact_shown,
        now,
    )
    return Entered(PASSED, checked.attempts_left, fresh)


# --- the session --------------------------------------------------------------------------------


def session_of(ctx: Context, token: str | None, now: datetime | None = None) -> PortalSession | None:
    """The live session of the browser's token (its last use becomes now), else None."""
    if not token_wellformed(token):
        return None
    assert token is not None
    now = now or utcnow()
    return store.live_session(ctx.engine, token_hash(ctx, token), now, now - IDLE, now - MAX_AGE)


def sign_out(ctx: Context, token: str | None) -> None:
    if token_wellformed(token):
        assert token is not None
        store.end_session(ctx.engine, token_hash(ctx, token), utcnow())
