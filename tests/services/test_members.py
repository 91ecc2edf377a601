"""services.members: an invitation's one-time link, login with back-off, sessions that end when
idle, at their absolute expiry, at logout or with a new password; CSRF tokens bound to a session;
and ``mandatum org create --owner-email``."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pyotp
import pytest
from sqlalchemy import Engine
from sqlmodel import select

from core.actors import Actor
from core.kinds import MemberRole
from core.settings import Settings
from services import members
from services.context import Context
from services.errors import Conflict, Invalid, TooMany
from store import members as member_store
from store.db import make_engine, read_session, utcnow
from store.tables import Member, MemberSession, MemberToken
from tests.support.cli import Cli
from tests.support.helpers import Credentials

OWNER = Actor.operator("olga")
PASSWORD = "correct horse battery staple"


def _token(link: str) -> str:
    found = re.fullmatch(r"https?://[^/]+/dashboard/(set|reset)-password/([A-Za-z0-9_-]{43})", link)
    assert found, link
    return found.group(2)


async def _member(
    ctx: Context, org: Credentials, role: MemberRole = MemberRole.DEVELOPER
) -> tuple[Member, str]:
    email = f"m-{utcnow().timestamp()}@Example.com"
    invited = members.invite(ctx, OWNER, org.organization_id, email, role)
    assert invited.member.email == email.lower() and invited.member.password_hash is None
    await members.set_password(ctx, _token(invited.link), PASSWORD)
    return invited.member, invited.member.email


async def test_an_invitation_link_sets_the_password_once_and_stores_no_secret_in_clear(
    ctx: Context, engine: Engine, org: Credentials
) -> None:
    invited = members.invite(ctx, OWNER, org.organization_id, "ana.dash@example.com", MemberRole.OWNER)
    token = _token(invited.link)
    with pytest.raises(Invalid, match="12 to 1024"):
        await members.set_password(ctx, token, "short")
    member = await members.set_password(ctx, token, PASSWORD)
    assert member.password_hash is not None and member.password_hash.startswith("$argon2id$")
    with pytest.raises(Invalid, match="unknown, used or expired"):
        await members.set_password(ctx, token, PASSWORD + "!")
    with read_session(engine) as session:
        hashes = [
            t.token_hash for t in session.exec(select(MemberToken).where(MemberToken.member_id == member.id))
        ]
    assert token not in hashes and len(hashes) == 1 and len(hashes[0]) == 64
    with pytest.raises(Conflict):
        members.invite(ctx, OWNER, org.organization_id, "ANA.dash@example.com", MemberRole.SUPPORT)
    with pytest.raises(Invalid):
        members.invite(ctx, OWNER, org.organization_id, "+15551234567", MemberRole.SUPPORT)


async def test_login_opens_a_session_and_a_wrong_password_reads_like_an_unknown_email(
    ctx: Context, org: Credentials
) -> None:
    member, email = await _member(ctx, org)
    opened = await members.login(ctx, email.upper(), PASSWORD)
    assert members.session_member(ctx, opened.session_token).id == member.id  # type: ignore[union-attr]
    assert members.actor_of(member) == Actor.member(member.id)
    with pytest.raises(Invalid) as wrong:
        await members.login(ctx, email, PASSWORD + "x")
    with pytest.raises(Invalid) as unknown:
        await members.login(ctx, "nobody@example.com", PASSWORD)
    assert str(wrong.value) == str(unknown.value) == members.WRONG_LOGIN
    members.logout(ctx, opened.session_token)
    assert members.session_member(ctx, opened.session_token) is None


async def test_repeated_failures_lock_logins_with_a_growing_wait(
    ctx: Context, settings: Settings, org: Credentials
) -> None:
    _, email = await _member(ctx, org)
    now = utcnow()
    for _ in range(settings.login_failures_before_lock):
        with pytest.raises(Invalid):
            await members.login(ctx, email, "wrong password!", now)
    with pytest.raises(TooMany) as locked:  # the right password too, while locked
        await members.login(ctx, email, PASSWORD, now + timedelta(seconds=30))
    assert 0 < (locked.value.retry_after or 0) <= 60
    later = now + timedelta(minutes=1, seconds=1)
    with pytest.raises(Invalid):
        await members.login(ctx, email, "wrong again!!", later)
    with pytest.raises(TooMany) as longer:
        await members.login(ctx, email, PASSWORD, later + timedelta(seconds=1))
    assert 60 < (longer.value.retry_after or 0) <= 120  # 2 minutes after the next failure
    opened = await members.login(ctx, email, PASSWORD, later + timedelta(minutes=3))
    reset = member_store.get_member(ctx.engine, opened.member.id)
    assert reset is not None and (reset.failed_logins, reset.locked_until) == (0, None)


async def test_sessions_end_when_idle_at_their_absolute_expiry_and_with_a_new_password(
    ctx: Context, settings: Settings, engine: Engine, org: Credentials
) -> None:
    member, email = await _member(ctx, org)
    start = utcnow()
    opened = await members.login(ctx, email, PASSWORD, start)
    still = start + settings.dashboard_idle - timedelta(seconds=5)
    assert members.session_member(ctx, opened.session_token, still) is not None  # and it is used now
    assert (
        members.session_member(
            ctx, opened.session_token, still + settings.dashboard_idle + timedelta(seconds=1)
        )
        is None
    )
    second = await members.login(ctx, email, PASSWORD, start)
    beyond = start + settings.dashboard_session_max
    assert members.session_member(ctx, second.session_token, beyond) is None
    third = await members.login(ctx, email, PASSWORD)
    link = members.password_reset_link(ctx, Actor.member(member.id), email)
    assert link is not None and members.password_reset_link(ctx, OWNER, "nobody@example.com") is None
    await members.set_password(ctx, _token(link), "another long password")
    assert members.session_member(ctx, third.session_token) is None
    with read_session(engine) as session:
        stored = [
            s.token_hash
            for s in session.exec(select(MemberSession).where(MemberSession.member_id == member.id))
        ]
    assert third.session_token not in stored and len(stored) == 3


async def test_a_csrf_token_belongs_to_its_session(ctx: Context, org: Credentials) -> None:
    _, email = await _member(ctx, org)
    one, two = await members.login(ctx, email, PASSWORD), await members.login(ctx, email, PASSWORD)
    token = members.csrf_token(ctx, one.session_token)
    assert members.csrf_valid(ctx, one.session_token, token)
    assert not members.csrf_valid(ctx, two.session_token, token)
    assert not members.csrf_valid(ctx, one.session_token, token[:-1] + ("0" if token[-1] != "0" else "1"))
    assert not members.csrf_valid(ctx, one.session_token, None)
    assert not members.csrf_valid(ctx, None, token)


def test_org_create_invites_the_owner_with_a_one_time_link(cli: Cli) -> None:
    created = cli.json("org", "create", "--name", "Dash Org", "--owner-email", "Owner@Example.com")
    assert created["ownerEmail"] == "owner@example.com"
    token = _token(created["ownerSetPasswordLink"])
    engine = make_engine(cli.database_url)
    try:
        with read_session(engine) as session:
            owner = session.exec(select(Member).where(Member.email == "owner@example.com")).one()
            tokens = list(session.exec(select(MemberToken).where(MemberToken.member_id == owner.id)))
    finally:
        engine.dispose()
    assert (owner.organization_id, owner.role, owner.password_hash) == (
        created["organizationId"],
        "owner",
        None,
    )
    assert [t.purpose for t in tokens] == ["set_password"] and tokens[0].token_hash != token
    again = cli.run("org", "create", "--name", "Other", "--owner-email", "owner@example.com")
    assert again.returncode == 1 and "already a member" in again.stderr
    bad = cli.run("org", "create", "--name", "Other", "--owner-email", "not an address")
    assert bad.returncode == 1 and "--owner-email" in bad.stderr
    listed = cli.json("org", "list")
    assert [o["name"] for o in listed].count("Other") == 0  # a refused owner creates no organization


async def _with_second_factor(ctx: Context, org: Credentials) -> tuple[Member, str, pyotp.TOTP]:
    member, email = await _member(ctx, org)
    enrolment = members.begin_second_factor(ctx, member)
    totp = pyotp.TOTP(enrolment.secret)
    start = utcnow() - timedelta(minutes=5)  # confirmed with an older step's code: today's are unused
    members.confirm_second_factor(ctx, member, totp.at(start), now=start)
    return member, email, totp


async def test_one_code_opens_one_session_even_when_two_logins_race_with_it(
    ctx: Context, org: Credentials
) -> None:
    member, email, totp = await _with_second_factor(ctx, org)
    waiting = [await members.login(ctx, email, PASSWORD) for _ in range(4)]
    assert all(w.awaiting_code for w in waiting)
    assert all(members.session_member(ctx, w.session_token) is None for w in waiting)  # nothing opens yet
    code = totp.now()
    barrier = threading.Barrier(len(waiting))

    def attempt(pending: members.Login) -> str | None:
        barrier.wait()
        try:
            return members.second_factor(ctx, pending.session_token, code).session_token
        except Invalid:
            return None

    with ThreadPoolExecutor(len(waiting)) as pool:
        opened = [t for t in pool.map(attempt, waiting) if t is not None]
    assert len(opened) == 1  # the code's time step is used once, whoever comes first
    found = members.session_member(ctx, opened[0])
    assert found is not None and found.id == member.id
    assert opened[0] not in {w.session_token for w in waiting}  # a new token, not the waiting one's


async def test_a_code_outside_the_drift_window_or_of_another_form_is_refused(
    ctx: Context, org: Credentials
) -> None:
    _, email, totp = await _with_second_factor(ctx, org)
    now = utcnow()
    bad = (totp.at(now - timedelta(seconds=90)), totp.at(now + timedelta(seconds=90)), "١٢٣٤٥٦", "12 345")
    assert len(bad) < ctx.settings.login_failures_before_lock
    for code in bad:
        pending = await members.login(ctx, email, PASSWORD, now)
        with pytest.raises(Invalid, match="not right"):
            members.second_factor(ctx, pending.session_token, code, now)
    pending = await members.login(ctx, email, PASSWORD, now)
    assert members.second_factor(ctx, pending.session_token, totp.at(now - timedelta(seconds=30)), now)
    with pytest.raises(Invalid, match="log in again"):  # a waiting session is used once
        members.second_factor(ctx, pending.session_token, totp.at(now + timedelta(seconds=30)), now)
