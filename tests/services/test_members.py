"""services.members, services.member_sessions and services.logins: an invitation's one-time
link, login, sessions that end when idle, at their absolute expiry, at logout or with a new
password; CSRF tokens bound to a session; the second factor; and ``mandatum org create
--owner-email``. The login's throttle is tests/services/test_logins.py."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pyotp
import pytest
from sqlalchemy import Engine, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from core.actors import Actor
from core.ids import new_object_id
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import logins, member_sessions, members
from services.context import Context
from services.errors import Conflict, Invalid
from store.db import make_engine, read_session, utcnow, write_session
from store.tables import Member, MemberSession, MemberToken
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.cli import Cli
from tests.support.dashboard import client_address
from tests.support.second_factor import factor_on

OWNER = Actor.shell_operator("olga")
PASSWORD = "correct horse battery staple"
CLIENT = client_address()  # logins are counted per address with client address, and per client


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
    await logins.set_password(ctx, _token(invited.link), PASSWORD)
    return invited.member, invited.member.email


async def test_an_invitation_link_sets_the_password_once_and_stores_no_secret_in_clear(
    ctx: Context, engine: Engine, org: Credentials
) -> None:
    invited = members.invite(ctx, OWNER, org.organization_id, "ana.dash@example.com", MemberRole.OWNER)
    token = _token(invited.link)
    with pytest.raises(Invalid, match="12 to 1024"):
        await logins.set_password(ctx, token, "short")
    member = await logins.set_password(ctx, token, PASSWORD)
    assert member.password_hash is not None and member.password_hash.startswith("$argon2id$")
    with pytest.raises(Invalid, match="unknown, used or expired"):
        await logins.set_password(ctx, token, PASSWORD + "!")
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
    opened = await logins.login(ctx, email.upper(), PASSWORD, CLIENT)
    assert member_sessions.session_member(ctx, opened.session_token).id == member.id  # type: ignore[union-attr]
    assert members.actor_of(member) == Actor.member(member.id)
    with pytest.raises(Invalid) as wrong:
        await logins.login(ctx, email, PASSWORD + "x", CLIENT)
    with pytest.raises(Invalid) as unknown:
        await logins.login(ctx, "nobody@example.com", PASSWORD, CLIENT)
    assert str(wrong.value) == str(unknown.value) == logins.WRONG_LOGIN
    member_sessions.logout(ctx, opened.session_token)
    assert member_sessions.session_member(ctx, opened.session_token) is None


async def test_sessions_end_when_idle_at_their_absolute_expiry_and_with_a_new_password(
    ctx: Context, settings: Settings, engine: Engine, org: Credentials
) -> None:
    member, email = await _member(ctx, org)
    start = utcnow()
    opened = await logins.login(ctx, email, PASSWORD, CLIENT, start)
    still = start + settings.dashboard_idle - timedelta(seconds=5)
    assert member_sessions.session_member(ctx, opened.session_token, still) is not None  # and it is used now
    assert (
        member_sessions.session_member(
            ctx, opened.session_token, still + settings.dashboard_idle + timedelta(seconds=1)
        )
        is None
    )
    second = await logins.login(ctx, email, PASSWORD, CLIENT, start)
    beyond = start + settings.dashboard_session_max
    assert member_sessions.session_member(ctx, second.session_token, beyond) is None
    third = await logins.login(ctx, email, PASSWORD, CLIENT)
    link = members.password_reset_link(ctx, Actor.member(member.id), email)
    assert link is not None and members.password_reset_link(ctx, OWNER, "nobody@example.com") is None
    await logins.set_password(ctx, _token(link), "another long password")
    assert member_sessions.session_member(ctx, third.session_token) is None
    with read_session(engine) as session:
        stored = [
            s.token_hash
            for s in session.exec(select(MemberSession).where(MemberSession.member_id == member.id))
        ]
    assert third.session_token not in stored and len(stored) == 3


async def test_a_csrf_token_belongs_to_its_session(ctx: Context, org: Credentials) -> None:
    _, email = await _member(ctx, org)
    one, two = (
        await logins.login(ctx, email, PASSWORD, CLIENT),
        await logins.login(ctx, email, PASSWORD, CLIENT),
    )
    token = member_sessions.csrf_token(ctx, one.session_token)
    assert member_sessions.csrf_valid(ctx, one.session_token, token)
    assert not member_sessions.csrf_valid(ctx, two.session_token, token)
    other = token[:-1] + ("0" if token[-1] != "0" else "1")
    assert not member_sessions.csrf_valid(ctx, one.session_token, other)
    assert not member_sessions.csrf_valid(ctx, one.session_token, None)
    assert not member_sessions.csrf_valid(ctx, None, token)


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
    totp, _ = await factor_on(ctx, member)  # confirmed with an older step's code: today's are unused
    return member, email, totp


async def test_one_code_opens_one_session_even_when_two_logins_race_with_it(
    ctx: Context, org: Credentials
) -> None:
    member, email, totp = await _with_second_factor(ctx, org)
    waiting = [await logins.login(ctx, email, PASSWORD, CLIENT) for _ in range(4)]
    assert all(w.awaiting_code for w in waiting)
    # nothing opens yet
    assert all(member_sessions.session_member(ctx, w.session_token) is None for w in waiting)
    code = totp.now()
    barrier = threading.Barrier(len(waiting))

    def attempt(pending: logins.Login) -> str | None:
        barrier.wait()
        try:
            return logins.second_factor(ctx, pending.session_token, code, CLIENT).session_token
        except Invalid:
            return None

    with ThreadPoolExecutor(len(waiting)) as pool:
        opened = [t for t in pool.map(attempt, waiting) if t is not None]
    assert len(opened) == 1  # the code's time step is used once, whoever comes first
    found = member_sessions.session_member(ctx, opened[0])
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
        pending = await logins.login(ctx, email, PASSWORD, CLIENT, now)
        with pytest.raises(Invalid, match="not right"):
            logins.second_factor(ctx, pending.session_token, code, CLIENT, now)
    pending = await logins.login(ctx, email, PASSWORD, CLIENT, now)
    assert logins.second_factor(ctx, pending.session_token, totp.at(now - timedelta(seconds=30)), CLIENT, now)
    with pytest.raises(Invalid, match="log in again"):  # a waiting session is used once
        logins.second_factor(ctx, pending.session_token, totp.at(now + timedelta(seconds=30)), CLIENT, now)


async def test_an_address_signs_in_to_one_place_and_an_invitation_elsewhere_cannot_be_taken_up(
    ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    """An owner may invite any address (the answer reveals nothing, docs/adr/0003); the address
    takes up one invitation, and the others are refused to the link's holder (its owner)."""
    other = new_org(engine, cipher, settings)
    email = f"both-{org.organization_id}@example.com"
    here = members.invite(ctx, OWNER, org.organization_id, email, MemberRole.SUPPORT)
    there = members.invite(ctx, OWNER, other.organization_id, email, MemberRole.OWNER)
    assert here.member.id != there.member.id
    await logins.set_password(ctx, _token(there.link), PASSWORD)
    with pytest.raises(Conflict, match="another organization"):
        await logins.set_password(ctx, _token(here.link), PASSWORD)
    opened = await logins.login(ctx, email, PASSWORD, CLIENT)
    assert opened.member.organization_id == other.organization_id
    with pytest.raises(IntegrityError), write_session(engine) as session:  # the database holds it too
        session.execute(
            update(Member).where(col(Member.id) == here.member.id).values(password_hash="$argon2id$x")
        )


async def test_the_same_address_invited_twice_at_once_is_one_member_and_one_conflict(
    ctx: Context, org: Credentials, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two owners invite one address at the same moment (PostgreSQL runs both transactions at
    once; SQLite's write lock makes them one after the other): one invitation is made, the other
    answers "already a member" (409) instead of a 500. The race is made certain: the other
    invitation commits between this one's check and its insert."""
    if ctx.engine.dialect.name != "postgresql":
        pytest.skip("SQLite writes one transaction at a time: no two invitations overlap")
    from store import members as store_members

    address = f"race-{org.organization_id[-6:]}@example.com"
    real_record, raced = store_members.record_change, list[bool]()

    def racing(session: Any, key: Any, kind: str, member: Member, actor: str, **extra: Any) -> None:
        if not raced:
            raced.append(True)
            other = make_engine(str(ctx.engine.url.render_as_string(hide_password=False)))
            try:  # the other owner's invitation, committed on its own connection
                with write_session(other) as elsewhere:
                    elsewhere.add(
                        Member(
                            id=new_object_id(),
                            organization_id=org.organization_id,
                            email=address,
                            role=MemberRole.DEVELOPER,
                            created_at=utcnow(),
                        )
                    )
            finally:
                other.dispose()
        real_record(session, key, kind, member, actor, **extra)

    monkeypatch.setattr(store_members, "record_change", racing)
    with pytest.raises(Conflict, match="already a member"):
        members.invite(ctx, Actor.member("f" * 24), org.organization_id, address, MemberRole.DEVELOPER)
    with read_session(ctx.engine) as session:
        found = session.exec(select(Member).where(Member.email == address)).all()
    assert [m.role for m in found] == ["developer"]
