"""The dashboard's second factor (issue 14; issue 30, item 7): TOTP (RFC 6238: SHA-1, 6 digits,
30 s, one step of clock drift either way) with ten one-time recovery codes
(``services.recovery_codes``), and everything that changes it.

- **A change needs a proof.** Setting a factor up, replacing it, making new recovery codes,
  turning it off, an owner turning off another member's (a lost phone) and an organization's
  requirement each take a ``Proof``: the password of the member making the change and, when their
  factor is on, a current code or a recovery code. The proof is counted as a login is
  (``services.login_throttle``: before anything is checked, given back when right), so a stolen
  session alone changes nothing and a guess costs what it costs at the login. The code is checked
  only after the password, and used up (a TOTP step once, a recovery code once).
- **A new secret** waits apart from the one in use (``totp_pending_ciphertext``) until its first
  code, which is counted too; it is shown in the answer that made it and never again. Confirming
  it turns the factor on (or replaces the old one) and makes ten recovery codes, shown once.
- **Who must have one**: operators always, an organization's members when the organization
  requires it (``must_enrol``); such a member, after the password, can only set it up.
- Secrets are sealed under the master key's cipher; a code's time step is used once (a
  conditional UPDATE in the transaction that uses it, ``store.second_factor``).
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from datetime import datetime

import pyotp
import segno

from core.kinds import PLATFORM_ROLE, MemberRole
from services import login_throttle, passwords, recovery_codes
from services.context import Context
from services.errors import Conflict, Forbidden, Invalid
from services.members import LINK_PURPOSES, actor_of, digest, member_in
from store import orgs as orgs_store
from store import second_factor as store
from store.db import run_db, utcnow
from store.members import get_member, token_holder
from store.tables import Member

TOTP_STEP = 30
CODE_RE = re.compile(r"[0-9]{6}")
WRONG_PROOF = "Wrong password or code: give your password and a current code of your app (or a recovery code)"
WRONG_CODE = "That code is not right: type the 6 digits your app shows now"
NONE_WAITING = "No new second factor waits for its first code: set one up again"
REQUIRED = "Your organization requires a second factor: set up another app instead of turning it off"


@dataclass(frozen=True)
class Enrolment:
    secret: str  # base32, for typing into an authenticator app
    uri: str  # otpauth://totp/...
    qr_svg: str  # the URI as an inline SVG QR code


@dataclass(frozen=True)
class Proof:
    """What a member typed to show it is them, and where from (the login throttle's client)."""

    password: str
    code: str
    client: str | None


@dataclass(frozen=True)
class Code:
    """A typed code as the member's factor reads it: a TOTP code's time step, or a recovery
    code's keyed hash."""

    step: int | None = None
    recovery_hash: str | None = None


def secret_of(ctx: Context, ciphertext: bytes | None) -> str:
    assert ciphertext is not None
    return ctx.cipher.decrypt(ciphertext)


def matching_step(secret: str, code: str, now: datetime) -> int | None:
    """The time step (now, or one either side) whose code ``code`` is, or None."""
    if not CODE_RE.fullmatch(code):
        return None
    totp = pyotp.TOTP(secret, interval=TOTP_STEP)
    current = int(now.timestamp()) // TOTP_STEP
    found = None
    for step in (current - 1, current, current + 1):  # every step compared: no early exit to time
        if hmac.compare_digest(totp.at(step * TOTP_STEP), code):
            found = step
    return found


def code_of(ctx: Context, member: Member, typed: str, now: datetime) -> Code | None:
    """What ``typed`` is for the member's factor that is on: a right TOTP code, or text shaped like
    a recovery code (whether it is one is known when it is used); None for neither."""
    if member.totp_enabled_at is None:
        return None
    text = typed.strip()
    if CODE_RE.fullmatch(text):
        step = matching_step(secret_of(ctx, member.totp_secret_ciphertext), text, now)
        return None if step is None else Code(step=step)
    plain = recovery_codes.typed_form(text)
    return None if plain is None else Code(recovery_hash=recovery_codes.code_hash(ctx, member.id, plain))


def use_code(ctx: Context, member: Member, typed: str, now: datetime) -> bool:
    """Use ``typed`` up as the member's code: a TOTP step once, a recovery code once (recorded)."""
    code = code_of(ctx, member, typed, now)
    if code is not None and code.step is not None:
        return store.use_step(ctx.engine, member.id, code.step)
    if code is not None and code.recovery_hash is not None:
        actor = str(actor_of(member))
        return store.use_code(ctx.engine, member.id, code.recovery_hash, now, actor=actor) is not None
    return False


async def prove(ctx: Context, member: Member, proof: Proof, now: datetime | None = None) -> None:
    """The member's password and, when the factor is on, a code of it, counted as a login:
    ``TooMany`` while locked, ``Invalid`` (the same words for either) when one is wrong, and
    ``passwords.Busy`` when the hashing threads are full (not counted then)."""
    now = now or utcnow()
    attempt = await run_db(ctx.engine, login_throttle.count, ctx, member.email, proof.client, now)
    fresh = await run_db(ctx.engine, get_member, ctx.engine, member.id)
    try:
        right = await passwords.matches(fresh.password_hash if fresh else None, proof.password)
    except passwords.Busy:
        await run_db(ctx.engine, attempt.give_back)
        raise
    if fresh is None or not right:
        raise Invalid(WRONG_PROOF)
    if fresh.totp_enabled_at is not None and not await run_db(
        ctx.engine, use_code, ctx, fresh, proof.code, now
    ):
        raise Invalid(WRONG_PROOF)
    await run_db(ctx.engine, attempt.give_back)


def enrolment_of(secret: str, email: str) -> Enrolment:
    uri = pyotp.TOTP(secret, interval=TOTP_STEP).provisioning_uri(name=email, issuer_name="Mandatum")
    qr = segno.make(uri, error="m")
    return Enrolment(
        secret, uri, qr.svg_inline(scale=4, dark="#111", light="#fff", title="QR code of the secret")
    )


async def begin(ctx: Context, member: Member, proof: Proof, now: datetime | None = None) -> Enrolment:
    """A new secret for the member to add to an authenticator app, proved; it waits for its first
    code (``confirm``) while a factor on keeps working. Shown in this answer only."""
    await prove(ctx, member, proof, now)
    secret = pyotp.random_base32()
    if not await run_db(ctx.engine, store.begin, ctx.engine, member.id, ctx.cipher.encrypt(secret)):
        raise Conflict(NONE_WAITING)
    return enrolment_of(secret, member.email)


def waiting(ctx: Context, member: Member) -> bool:
    """Whether a new secret waits for its first code."""
    fresh = get_member(ctx.engine, member.id)
    return fresh is not None and fresh.totp_pending_ciphertext is not None


def confirm(
    ctx: Context, member: Member, code: str, client: str | None, now: datetime | None = None
) -> list[str]:
    """Turn the waiting secret on with its first right code (counted as a login's code): the
    factor is on, or replaced, and the member's ten new recovery codes are returned, to be shown
    this once."""
    now = now or utcnow()
    fresh = get_member(ctx.engine, member.id)
    if fresh is None or fresh.totp_pending_ciphertext is None:
        raise Conflict(NONE_WAITING)
    attempt = login_throttle.count(ctx, fresh.email, client, now)
    pending = fresh.totp_pending_ciphertext
    step = matching_step(secret_of(ctx, pending), code.strip(), now)
    if step is None:
        raise Invalid(WRONG_CODE)
    codes = recovery_codes.new_codes()
    hashes = recovery_codes.hashes_of(ctx, member.id, codes)
    confirmed = store.confirm(ctx.engine, member.id, pending, step, hashes, now, actor=str(actor_of(fresh)))
    attempt.give_back()
    if not confirmed:
        raise Conflict(NONE_WAITING)
    return codes


async def make_recovery_codes(
    ctx: Context, member: Member, proof: Proof, now: datetime | None = None
) -> list[str]:
    """Ten new recovery codes in place of the old, proved; to be shown this once."""
    if member.totp_enabled_at is None:
        raise Conflict("The second factor is off: recovery codes come with it")
    await prove(ctx, member, proof, now)
    codes = recovery_codes.new_codes()
    hashes = recovery_codes.hashes_of(ctx, member.id, codes)
    made = await run_db(
        ctx.engine,
        store.replace_codes,
        ctx.engine,
        member.id,
        hashes,
        now or utcnow(),
        actor=str(actor_of(member)),
    )
    if not made:
        raise Conflict("The second factor is off: recovery codes come with it")
    return codes


async def turn_off(
    ctx: Context, by: Member, proof: Proof, member_id: str, now: datetime | None = None
) -> Member:
    """Turn off a member's second factor, proved by ``by``: their own (refused while they must
    have one), or, for an owner, another member's of their organization (a lost phone; the record
    names the owner)."""
    target = await run_db(ctx.engine, member_in, ctx, by.organization_id, member_id)
    if target.id != by.id and by.role != MemberRole.OWNER:
        raise Forbidden("only an owner turns off another member's second factor")
    if target.id == by.id and await run_db(ctx.engine, required_of, ctx, by):
        raise Conflict(REQUIRED)
    await prove(ctx, by, proof, now)
    off, _ = await run_db(
        ctx.engine,
        store.turn_off,
        ctx.engine,
        by.organization_id,
        member_id,
        now or utcnow(),
        actor=str(actor_of(by)),
    )
    return off


async def set_required(
    ctx: Context, owner: Member, proof: Proof, required: bool, now: datetime | None = None
) -> None:
    """Whether the owner's organization requires the second factor of every member, proved by the
    owner, whose own factor must be on to require it (``ORGANIZATION_SETTINGS_CHANGED``)."""
    if owner.role != MemberRole.OWNER or owner.organization_id is None:
        raise Forbidden("only an owner changes what the organization requires")
    if required and owner.totp_enabled_at is None:
        raise Conflict("Turn your own second factor on first: then require it of everyone")
    await prove(ctx, owner, proof, now)
    await run_db(
        ctx.engine,
        orgs_store.set_require_second_factor,
        ctx.engine,
        owner.organization_id,
        required,
        actor=str(actor_of(owner)),
    )


def required_of(ctx: Context, member: Member) -> bool:
    """Whether the member must have the second factor on: operators always, an organization's
    members when it requires it."""
    if member.role == PLATFORM_ROLE or member.organization_id is None:
        return True
    return orgs_store.get_organization(ctx.engine, member.organization_id).require_second_factor


def must_enrol(ctx: Context, member: Member) -> bool:
    """Whether the member's session opens nothing but the second factor's set-up: they must have one
    and it is off."""
    return member.totp_enabled_at is None and required_of(ctx, member)


def codes_left(ctx: Context, member: Member) -> int:
    return store.codes_left(ctx.engine, member.id)


def link_holder_has_factor(ctx: Context, token: str) -> bool:
    """Whether the member of a live set-password or reset link has the second factor on (a new
    password keeps it: their page says so, ``services.members.FACTOR_STAYS``)."""
    holder = token_holder(ctx.engine, digest(token), LINK_PURPOSES, utcnow())
    return holder is not None and holder.totp_enabled_at is not None
