"""services.second_factor (issue 30, item 7), on SQLite and PostgreSQL, at the test's own clock:
every change to a factor asks for the password and, when it is on, a code of it, counted as a
login; ten recovery codes kept as keyed hashes, each usable once and counted as a code; a
password reset keeps the factor and says so; an operator turns a factor off with a reason; who
must have a factor."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pyotp
import pytest
from sqlalchemy import Engine
from sqlmodel import select

from adapters.delivery import outbox_of
from core.actors import Actor
from core.kinds import MemberRole
from core.settings import Settings
from services import logins, member_admin, member_sessions, members, operators, second_factor
from services.context import Context
from services.errors import Conflict, Forbidden, Invalid, TooMany
from services.second_factor import Proof
from store import audit
from store import members as member_store
from store.db import read_session, utcnow
from store.tables import AuditRecord, Member, MemberRecoveryCode
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import PASSWORD, client_address
from tests.support.second_factor import factor_on

OPERATOR = Actor.shell_operator("olga")
RESET_RE = re.compile(r"https?://\S+/dashboard/reset-password/([A-Za-z0-9_-]+)")


async def _member(
    ctx: Context, org: Credentials, name: str, role: MemberRole = MemberRole.DEVELOPER
) -> Member:
    invited = members.invite(
        ctx, OPERATOR, org.organization_id, f"{name}-{org.organization_id}@example.com", role
    )
    return await logins.set_password(ctx, invited.link.rsplit("/", 1)[1], PASSWORD)


def _row(ctx: Context, member: Member) -> Member:
    found = member_store.get_member(ctx.engine, member.id)
    assert found is not None
    return found


def _records(engine: Engine, org: Credentials, kind: str, member: Member) -> list[AuditRecord]:
    return [
        r for r in chain(engine, org.organization_id) if r.type == kind and r.data["memberId"] == member.id
    ]


async def test_a_session_alone_neither_sets_up_replaces_nor_turns_off_a_factor(
    ctx: Context, org: Credentials, engine: Engine
) -> None:
    member, client = await _member(ctx, org, "careful"), client_address()
    now = utcnow()
    with pytest.raises(Invalid, match="Wrong password or code"):
        await second_factor.begin(ctx, member, Proof("a guessed password", "", client), now)
    assert _row(ctx, member).totp_pending_ciphertext is None  # nothing waits: nothing to confirm
    with pytest.raises(Conflict, match="No new second factor waits"):
        second_factor.confirm(ctx, member, "123456", client, now)

    enrolment = await second_factor.begin(ctx, member, Proof(PASSWORD, "", client), now)
    first = pyotp.TOTP(enrolment.secret)
    with pytest.raises(Invalid, match="not right"):
        second_factor.confirm(ctx, member, "000000", client, now)
    codes = second_factor.confirm(ctx, member, first.at(now), client, now)
    member = _row(ctx, member)
    assert len(codes) == 10 and member.totp_enabled_at == now and member.totp_pending_ciphertext is None

    # with the factor on, the password alone is not enough, nor a wrong or used code (each try
    # from a client of its own: the throttle is the next test's)
    for code in ("", "000000", first.at(now), "AAAA-BBBB-CCCC-DDDD"):
        with pytest.raises(Invalid, match="Wrong password or code"):
            await second_factor.begin(ctx, member, Proof(PASSWORD, code, client_address()), now)
        with pytest.raises(Invalid, match="Wrong password or code"):
            await second_factor.turn_off(ctx, member, Proof(PASSWORD, code, client_address()), member.id, now)
    later = now + timedelta(seconds=30)
    replacing = await second_factor.begin(ctx, member, Proof(PASSWORD, first.at(later), client), later)
    assert _row(ctx, member).totp_secret_ciphertext == member.totp_secret_ciphertext  # the old one works on
    second = pyotp.TOTP(replacing.secret)
    assert second_factor.code_of(ctx, _row(ctx, member), first.at(later + timedelta(seconds=30)), later)
    second_factor.confirm(ctx, member, second.at(later), client, later)
    member = _row(ctx, member)
    assert second_factor.code_of(ctx, member, first.at(later + timedelta(seconds=60)), later) is None
    on = _records(engine, org, audit.MEMBER_SECOND_FACTOR_ON, member)
    assert [r.data["replaced"] for r in on] == [False, True]
    assert all(r.actor == f"member:{member.id}" for r in on)

    end = later + timedelta(seconds=60)
    await second_factor.turn_off(ctx, member, Proof(PASSWORD, second.at(end), client), member.id, end)
    member = _row(ctx, member)
    assert (member.totp_enabled_at, member.totp_secret_ciphertext, member.totp_last_step) == (
        None,
        None,
        None,
    )
    assert second_factor.codes_left(ctx, member) == 0
    (off,) = _records(engine, org, audit.MEMBER_SECOND_FACTOR_OFF, member)
    assert off.actor == f"member:{member.id}"


async def test_wrong_passwords_and_codes_at_a_change_are_counted_as_failed_logins(
    ctx: Context, org: Credentials, settings: Settings
) -> None:
    member, client = await _member(ctx, org, "guessed"), client_address()
    totp, _ = await factor_on(ctx, member)
    member, now = _row(ctx, member), utcnow()
    for i in range(settings.login_failures_before_lock):
        wrong = (
            Proof(PASSWORD, "000000", client) if i % 2 else Proof("not the password", totp.at(now), client)
        )
        with pytest.raises(Invalid):
            await second_factor.make_recovery_codes(ctx, member, wrong, now)
    with pytest.raises(TooMany):  # the right password and code too, from this client, while locked
        await second_factor.make_recovery_codes(ctx, member, Proof(PASSWORD, totp.at(now), client), now)
    with pytest.raises(TooMany):  # one throttle: the login from this client is held back as well
        await logins.login(ctx, member.email, PASSWORD, client, now)
    other = client_address()
    codes = await second_factor.make_recovery_codes(ctx, member, Proof(PASSWORD, totp.at(now), other), now)
    assert len(codes) == 10


async def test_recovery_codes_are_keyed_hashes_each_used_once_in_place_of_a_code(
    ctx: Context, org: Credentials, engine: Engine, settings: Settings
) -> None:
    member = await _member(ctx, org, "lost-phone", MemberRole.OWNER)
    totp, codes = await factor_on(ctx, member)
    assert len(set(codes)) == 10 and all(len(c) == 19 and c.count("-") == 3 for c in codes)
    with read_session(engine) as session:
        stored = list(
            session.exec(select(MemberRecoveryCode).where(MemberRecoveryCode.member_id == member.id))
        )
    plain = {c.replace("-", "") for c in codes}
    assert len(stored) == 10 and all(len(r.code_hash) == 64 for r in stored)
    assert not {r.code_hash for r in stored} & {
        hashlib.sha256(p.encode()).hexdigest() for p in plain | set(codes)
    }

    now, client = utcnow(), client_address()
    pending = await logins.login(ctx, member.email, PASSWORD, client, now)
    typed = " " + codes[3].lower().replace("-", " ") + " "  # any case, spaces for dashes
    opened = logins.second_factor(ctx, pending.session_token, typed, client, now)
    assert opened.recovery_left == 9 and member_sessions.session_member(ctx, opened.session_token) is not None
    (used,) = _records(engine, org, audit.MEMBER_RECOVERY_CODE_USED, member)
    assert used.data["remaining"] == 9 and used.actor == f"member:{member.id}"
    assert not any(p in str(r.data) for r in chain(engine, org.organization_id) for p in plain | set(codes))

    again = await logins.login(ctx, member.email, PASSWORD, client, now)
    with pytest.raises(Invalid, match="not right"):  # a code is used once
        logins.second_factor(ctx, again.session_token, codes[3], client, now)
    member = _row(ctx, member)
    with pytest.raises(Invalid):  # at a change too
        await second_factor.make_recovery_codes(ctx, member, Proof(PASSWORD, codes[3], client), now)
    fresh = await second_factor.make_recovery_codes(ctx, member, Proof(PASSWORD, codes[4], client), now)
    assert second_factor.codes_left(ctx, member) == 10 and not set(fresh) & set(codes)
    (made,) = _records(engine, org, audit.MEMBER_RECOVERY_CODES_MADE, member)
    assert made.data["codes"] == 10 and not any(c in str(made.data) for c in fresh)
    third = await logins.login(ctx, member.email, PASSWORD, client, now)
    with pytest.raises(Invalid):  # the old set is gone with the new one
        logins.second_factor(ctx, third.session_token, codes[5], client, now)

    # wrong recovery codes count like wrong codes: the lock comes, then even a right one waits
    guesser = client_address()
    waiting = await logins.login(ctx, member.email, PASSWORD, guesser, now)
    for _ in range(settings.login_failures_before_lock):
        with pytest.raises(Invalid):
            logins.second_factor(ctx, waiting.session_token, "ABCD-EFGH-IJKL-MNOP", guesser, now)
    with pytest.raises(TooMany):
        logins.second_factor(ctx, waiting.session_token, fresh[0], guesser, now)
    assert second_factor.codes_left(ctx, member) == 10  # the refused one is not used up
    assert logins.second_factor(ctx, waiting.session_token, totp.at(now), client, now).recovery_left is None


async def test_the_code_that_turned_the_factor_on_is_refused_at_login_without_counting(
    ctx: Context, org: Credentials, settings: Settings
) -> None:
    """Issue 34: logging in within the 30 s that turned the factor on, the app still shows the
    code just used. It opens nothing (a code opens once) and says to wait for the next one, but
    it is no failure: many such tries never lock, and the next step's code opens the session."""
    member = await _member(ctx, org, "quick-login", MemberRole.OWNER)
    now, client = utcnow(), client_address()
    totp, _ = await factor_on(ctx, member, at=now)
    for _ in range(settings.login_failures_before_lock + 2):
        pending = await logins.login(ctx, member.email, PASSWORD, client, now)
        with pytest.raises(Invalid, match="used already: wait for the next one"):
            logins.second_factor(ctx, pending.session_token, totp.at(now), client, now)
    later = now + timedelta(seconds=30)
    pending = await logins.login(ctx, member.email, PASSWORD, client, later)
    with pytest.raises(Invalid, match="not right"):  # a wrong code still says so (and counts)
        logins.second_factor(
            ctx, pending.session_token, "000000" if totp.at(later) != "000000" else "111111", client, later
        )
    opened = logins.second_factor(ctx, pending.session_token, totp.at(later), client, later)
    assert member_sessions.session_member(ctx, opened.session_token) is not None


async def test_a_password_reset_keeps_the_factor_and_its_e_mail_says_so(
    ctx: Context, org: Credentials, settings: Settings
) -> None:
    plain, member = await _member(ctx, org, "plain"), await _member(ctx, org, "resetting")
    await factor_on(ctx, member)
    outbox = outbox_of(settings)
    for someone in (plain, member):
        members.send_password_reset(ctx, OPERATOR, someone.email)
    (without,) = outbox.entries(to=plain.email)
    (with_factor,) = outbox.entries(to=member.email)
    assert "second factor" not in without.text  # said to a member who has one on
    assert "Your second factor stays on; you will need it to log in." in with_factor.text
    link = RESET_RE.search(with_factor.text)
    assert link is not None and second_factor.link_holder_has_factor(ctx, link.group(1))
    await logins.set_password(ctx, link.group(1), "another long password")
    assert _row(ctx, member).totp_enabled_at is not None
    after = await logins.login(ctx, member.email, "another long password", client_address())
    assert after.awaiting_code  # the new password alone opens nothing


async def test_an_operator_turns_a_factor_off_with_a_reason_and_ends_the_sessions(
    ctx: Context, org: Credentials, engine: Engine
) -> None:
    member = await _member(ctx, org, "phoneless")
    totp, _ = await factor_on(ctx, member)
    client, now = client_address(), utcnow()
    pending = await logins.login(ctx, member.email, PASSWORD, client, now)
    opened = logins.second_factor(ctx, pending.session_token, totp.at(now), client, now)
    with pytest.raises(Forbidden):  # an organization's member has no operator's reach
        member_admin.reset_factor(ctx, Actor.member(member.id), org.organization_id, member.id, "lost phone")
    for reason, why in (("", "empty"), ("lost\nMEMBER_ENABLED", "one line"), ("x" * 201, "at most 200")):
        with pytest.raises(Invalid, match=why):
            member_admin.reset_factor(ctx, OPERATOR, org.organization_id, member.id, reason)
    with pytest.raises(Invalid, match="member id"):
        member_admin.reset_factor(ctx, OPERATOR, org.organization_id, "../" + member.id, "lost phone")
    assert _row(ctx, member).totp_enabled_at is not None
    ended = member_admin.reset_factor(ctx, OPERATOR, org.organization_id, member.id, "ticket 12: lost phone")
    assert ended == 1 and member_sessions.session_member(ctx, opened.session_token) is None
    assert _row(ctx, member).totp_enabled_at is None and second_factor.codes_left(ctx, member) == 0
    (off,) = _records(engine, org, audit.MEMBER_SECOND_FACTOR_OFF, member)
    assert (off.actor, off.data["reason"], off.data["sessionsEnded"]) == (
        "operator:olga",
        "ticket 12: lost phone",
        1,
    )
    assert not (await logins.login(ctx, member.email, PASSWORD, client)).awaiting_code


async def test_operators_always_and_members_of_an_organization_that_requires_it_must_enrol(
    ctx: Context, org: Credentials, engine: Engine
) -> None:
    owner, dev = await _member(ctx, org, "boss", MemberRole.OWNER), await _member(ctx, org, "dev")
    assert not second_factor.must_enrol(ctx, dev)
    client = client_address()
    with pytest.raises(Conflict, match="your own second factor on first"):
        await second_factor.set_required(ctx, owner, Proof(PASSWORD, "", client), True)
    with pytest.raises(Forbidden):
        await second_factor.set_required(ctx, dev, Proof(PASSWORD, "", client), True)
    totp, _ = await factor_on(ctx, owner)
    owner, now = _row(ctx, owner), utcnow()
    with pytest.raises(Invalid):  # the owner's password alone is not enough
        await second_factor.set_required(ctx, owner, Proof(PASSWORD, "", client), True, now)
    await second_factor.set_required(ctx, owner, Proof(PASSWORD, totp.at(now), client), True, now)
    assert second_factor.must_enrol(ctx, dev) and not second_factor.must_enrol(ctx, owner)
    (record,) = [r for r in chain(engine, org.organization_id) if r.type == audit.SETTINGS_CHANGED]
    assert (record.actor, record.data) == (
        f"member:{owner.id}",
        {"setting": "requireSecondFactor", "value": True, "previous": False},
    )
    later = now + timedelta(seconds=30)
    with pytest.raises(Conflict, match="requires a second factor"):  # nor may one turn their own off
        await second_factor.turn_off(ctx, owner, Proof(PASSWORD, totp.at(later), client), owner.id, later)

    made = operators.create(ctx, OPERATOR, f"ops-{org.organization_id}@ops.example.com")
    ops = await logins.set_password(ctx, made.link.rsplit("/", 1)[1], PASSWORD)
    assert second_factor.must_enrol(ctx, ops)
    await factor_on(ctx, ops)
    assert not second_factor.must_enrol(ctx, _row(ctx, ops))
