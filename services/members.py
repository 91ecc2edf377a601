"""Dashboard members (issue 14): invitations with a one-time link to set the first password,
password reset links, roles, disabling and enabling, the list of an organization's members, and
who a member's actions are recorded as. Logging in, and setting a password from a link, are
``services.logins``; sessions and their CSRF tokens ``services.member_sessions``.

- Link tokens are 32 random bytes, URL-safe; the database keeps their SHA-256 only (``digest``, the
  sessions' too), so a copy of the database sets no password.
- Owners invite members by e-mail (the link goes through the delivery path of the subjects'
  codes, at most once a minute per member), change roles, disable and enable members and end their
  sessions; an organization always keeps an enabled owner. Each change is an audit record.
- An address signs in to one organization's dashboard (or the operators' area): an invitation to
  an address that already has a password elsewhere is made and answered like any other, and the
  e-mail tells its owner (alone) to ask for an invitation to another address
  (docs/adr/0003-one-address-one-dashboard.md).
- The second factor (TOTP with recovery codes) and every change to it are
  ``services.second_factor``. A password reset keeps it, and its e-mail says so.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import smtplib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from adapters.delivery import Message, Undeliverable, transport_for
from core.actors import Actor
from core.kinds import PLATFORM_ROLE, MemberRole, MemberTokenPurpose
from core.otp import mask_contact
from core.text import one_line
from services.context import Context
from services.errors import Conflict, Invalid, NotFound, TooMany
from store import member_sessions as sessions
from store import members as store
from store import orgs as orgs_store
from store import users as subject_store
from store.db import utcnow
from store.tables import Member
from wire.contacts import normalize_contact

MIN_PASSWORD, MAX_PASSWORD = 12, 1024
log = logging.getLogger("mandatum.services.members")
T = TypeVar("T")


@dataclass(frozen=True)
class Invitation:
    member: Member
    link: str  # the one-time link to set the first password (shown or sent once)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def email_address(raw: str) -> str:
    if "@" not in raw:  # else a phone-like value is answered in words about phone numbers
        raise Invalid("email must be an e-mail address")
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
    address = email_address(raw)
    if store.member_by_email(ctx.engine, address) is not None:
        raise Conflict(f"{address} is already a member")
    return address


def checked_password(password: str) -> str:
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
        ctx.engine, member_id, digest(token), purpose, now, now + ctx.settings.member_link_lifetime
    )
    return _link(ctx, purpose, token)


def set_password_link(ctx: Context, member_id: str) -> str:
    """A fresh one-time link for the member to set their first password."""
    return _new_link(ctx, member_id, MemberTokenPurpose.SET_PASSWORD)


def invite(
    ctx: Context, actor: Actor, org_id: str, email: str, role: MemberRole, reason: str | None = None
) -> Invitation:
    """A new member of the organization with a one-time link to set their password
    (``MEMBER_INVITED`` naming ``actor``, and an operator's ``reason`` when given)."""
    address = email_address(email)
    try:
        member = store.add_member(
            ctx.engine, org_id, address, MemberRole(role), utcnow(), actor=str(actor), reason=reason
        )
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.EmailTaken as exc:
        raise Conflict(str(exc)) from exc
    return Invitation(member, _new_link(ctx, member.id, MemberTokenPurpose.SET_PASSWORD))


INVITE_EVERY = timedelta(minutes=1)


class NotSent(Exception):
    """The invitation e-mail could not be sent: ``reason`` says why, in a few words."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the invitation e-mail was not sent ({reason}): send it again from the list")
        self.reason = reason


def _send(ctx: Context, address: str, subject: str, text: str) -> None:
    """Send through the codes' delivery path; ``NotSent`` with the reason when it cannot."""
    try:
        transport_for(ctx.settings, "email").send(Message("email", address, subject, text))
    except Undeliverable as exc:
        raise NotSent(exc.code) from exc
    except (OSError, smtplib.SMTPException) as exc:
        raise NotSent(f"mail server: {type(exc).__name__}") from exc


def _invitation_text(ctx: Context, org_name: str, role: str, link: str | None) -> str:
    """The invitation; with no link for an address that signs in elsewhere already, which only
    its owner may learn (the one inviting sees an invitation like any other)."""
    hours = int(ctx.settings.member_link_lifetime.total_seconds() // 3600)
    invited = f"You are invited to the Mandatum dashboard of {one_line(org_name, 200)}, as {role}.\n\n"
    if link is None:
        return invited + ELSEWHERE_TEXT
    return invited + (
        f"To choose your password, open:\n\n{link}\n\n"
        f"The link works once, for {hours} hours. If you did not expect this, ignore this message.\n"
    )


ELSEWHERE_TEXT = (
    "This address already signs in to the Mandatum dashboard of another organization, and an "
    "address signs in to one place only: ask the person who invited you to invite another address "
    "of yours. If you did not expect this, ignore this message.\n"
)


def invite_by_email(
    ctx: Context, actor: Actor, org_id: str, email: str, role: MemberRole, reason: str | None = None
) -> Member:
    """Invite a member and e-mail them the link (never shown to the one inviting). The member is
    added even when the e-mail cannot be sent: ``NotSent`` then says why, and ``send_invitation``
    sends a fresh link."""
    invitation = invite(ctx, actor, org_id, email, role, reason)
    _mail_invitation(ctx, invitation.member, invitation.link)
    return invitation.member


def _mail_invitation(ctx: Context, member: Member, link: str) -> None:
    place = (
        orgs_store.get_organization(ctx.engine, member.organization_id).name
        if member.organization_id
        else "this installation (operators)"
    )
    shown = None if store.signs_in_elsewhere(ctx.engine, member) else link
    _send(ctx, member.email, INVITATION_SUBJECT, _invitation_text(ctx, place, member.role, shown))


INVITATION_SUBJECT = "Your invitation to the Mandatum dashboard"


def send_invitation(ctx: Context, actor: Actor, org_id: str, member_id: str) -> Member:
    """E-mail a fresh set-password link to a member who has not set a password yet (the links sent
    before keep working until they expire). ``TooMany`` within a minute of the last one,
    ``Conflict`` for a member with a password or disabled."""
    member = member_in(ctx, org_id, member_id)
    if member.password_hash is not None or member.disabled_at is not None:
        raise Conflict(f"{member.email} has set a password or is disabled: nothing to send")
    now = utcnow()
    if store.recent_token(ctx.engine, member.id, MemberTokenPurpose.SET_PASSWORD, now - INVITE_EVERY):
        raise TooMany("An invitation went to this member less than a minute ago", retry_after=60)
    _mail_invitation(ctx, member, _new_link(ctx, member.id, MemberTokenPurpose.SET_PASSWORD))
    return member


def member_in(ctx: Context, org_id: str | None, member_id: str) -> Member:
    member = store.get_member(ctx.engine, member_id)
    if member is None or member.organization_id != org_id:
        raise NotFound(f"member {member_id} not found")
    return member


def list_members(ctx: Context, org_id: str) -> list[tuple[Member, int]]:
    """The organization's members, oldest first, each with how many sessions they have open."""
    now = utcnow()
    counts = sessions.live_session_counts(ctx.engine, org_id, now, now - ctx.settings.dashboard_idle)
    return [(m, counts.get(m.id, 0)) for m in store.members_of(ctx.engine, org_id)]


def _changing(change: Callable[[], T]) -> T:
    try:
        return change()
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.LastOwner as exc:
        raise Conflict(str(exc)) from exc


def change_role(ctx: Context, actor: Actor, org_id: str, member_id: str, role: str) -> Member:
    """The member's new role; ``Conflict`` when it would leave the organization without an owner."""
    try:
        chosen = MemberRole(role)
    except ValueError as exc:
        raise Invalid(f"a role is one of {', '.join(r.value for r in MemberRole)}") from exc
    return _changing(lambda: store.change_role(ctx.engine, org_id, member_id, chosen, actor=str(actor)))


def set_disabled(ctx: Context, actor: Actor, org_id: str | None, member_id: str, disabled: bool) -> Member:
    """Disable a member (their sessions end at once) or enable them again. Nobody disables
    themselves, and the last enabled owner is not disabled (``Conflict``)."""
    if disabled and str(actor) in (str(Actor.member(member_id)), str(Actor.dashboard_operator(member_id))):
        raise Conflict("You cannot disable yourself: another owner can")
    return _changing(
        lambda: store.set_disabled(ctx.engine, org_id, member_id, disabled, utcnow(), actor=str(actor))
    )


def password_reset_link(ctx: Context, actor: Actor, email: str) -> str | None:
    """A one-time link to set a new password, for a member with that e-mail (None for anyone else:
    the page that asks says the same either way)."""
    member = store.member_by_email(ctx.engine, email_address(email))
    if member is None or member.disabled_at is not None:
        return None
    return _new_link(ctx, member.id, MemberTokenPurpose.RESET_PASSWORD)


RESET_EVERY = timedelta(minutes=1)
FACTOR_STAYS = "Your second factor stays on; you will need it to log in."
FACTOR_STAYS_TEXT = (
    f"\n{FACTOR_STAYS} If you lost it, log in with one of your recovery codes, or ask an owner of "
    "your organization (operators: an operator) to turn it off.\n"
)


def send_password_reset(ctx: Context, actor: Actor, email: str) -> None:
    """E-mail a member a one-time link to choose a new password, through the delivery path of the
    subjects' codes (the dev outbox in development). Nothing happens for an address no member has,
    a disabled member, or a member sent one less than a minute ago: the page that asks says the
    same in every case, so it tells nobody who is a member and floods no inbox."""
    try:
        address = email_address(email)
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
    ) + (FACTOR_STAYS_TEXT if member.totp_enabled_at is not None else "")
    try:
        _send(ctx, address, "Reset your Mandatum password", text)
    except NotSent as exc:  # the asker is told the same; the operator sees why in the log
        log.warning("password reset e-mail to member %s not sent: %s", member.id, exc.reason)


LINK_PURPOSES = (MemberTokenPurpose.SET_PASSWORD, MemberTokenPurpose.RESET_PASSWORD)


def actor_names(ctx: Context, org_id: str) -> dict[str, str]:
    """How pages show who did something (issue 34): the recorded actor of each of the
    organization's members to their e-mail, of each of its API keys to the key's name, of each
    operator to their e-mail as staff. Subjects are named per page (``subject_names``)."""
    names = {str(actor_of(m)): m.email for m in store.members_of(ctx.engine, org_id)}
    for key in orgs_store.list_keys(ctx.engine, org_id):
        shown = f"“{key.name}”" if key.name else f"{key.key_prefix}…"
        names[str(Actor.api_key(key.id))] = f"API key {shown}"
    for staff in store.operator_members(ctx.engine):
        names[str(actor_of(staff))] = f"{staff.email} (Mandatum staff)"
    return names


def subject_names(ctx: Context, org_id: str, actors: Iterable[str]) -> dict[str, str]:
    """The ``subject:<id>`` actors among ``actors`` that are the organization's subjects, to
    their masked contact (``a•••@example.com``): a page names a person without showing them."""
    ids = {a.split(":", 1)[1] for a in actors if a.startswith("subject:")}
    return {
        f"subject:{subject.id}": f"subject {mask_contact(subject.contact)}"
        for subject in subject_store.subjects_by_id(ctx.engine, org_id, ids)
    }


def actor_of(member: Member) -> Actor:
    """Who a member's actions are recorded as: ``member:<id>``, or ``staff:<id>`` for operators."""
    return Actor.dashboard_operator(member.id) if member.role == PLATFORM_ROLE else Actor.member(member.id)
