"""``mandatum member list|reset-factor|add-owner``, ``mandatum operator reset-factor`` and ``mandatum org
set-second-factor`` (issue 30, item 7), on the session's databases: each argument checked where it
enters (ids, e-mail, a reason of one line), refused with one line and exit 1 before anything is
done; the changes recorded with the operator running the command and the reason."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Engine

from adapters.delivery import outbox_of
from core.actors import Actor
from core.kinds import MemberRole
from core.settings import Settings
from services import logins, member_sessions, members, operators, second_factor
from services.context import Context
from store import audit
from store import members as member_store
from store.db import utcnow
from store.tables import Member
from tests.conftest import MASTER_KEY
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.cli import operator_shell
from tests.support.dashboard import PASSWORD, client_address
from tests.support.second_factor import factor_on

OPERATOR = "operator:desk-olga"  # LOGNAME of the commands run here
REASON = "ticket 42: lost phone and codes"


@pytest.fixture
def shell(settings: Settings) -> Any:
    return operator_shell(settings, MASTER_KEY, "desk-olga")


async def _member(
    ctx: Context, org: Credentials, name: str, role: MemberRole = MemberRole.DEVELOPER
) -> Member:
    invited = members.invite(
        ctx,
        Actor.shell_operator("tests"),
        org.organization_id,
        f"{name}-{org.organization_id}@example.com",
        role,
    )
    return await logins.set_password(ctx, invited.link.rsplit("/", 1)[1], PASSWORD)


def _row(engine: Engine, member_id: str) -> Member:
    found = member_store.get_member(engine, member_id)
    assert found is not None
    return found


async def test_member_list_shows_roles_factor_and_last_login(
    ctx: Context, org: Credentials, shell: Any
) -> None:
    owner, dev = await _member(ctx, org, "own", MemberRole.OWNER), await _member(ctx, org, "dev")
    await factor_on(ctx, dev)
    before = utcnow()
    await logins.login(ctx, owner.email, PASSWORD, client_address())
    members.invite(
        ctx,
        Actor.shell_operator("tests"),
        org.organization_id,
        f"new-{org.organization_id}@example.com",
        MemberRole.SUPPORT,
    )
    done = shell("member", "list", "--org", org.organization_id, "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["email"]: r for r in json.loads(done.stdout)}
    assert (rows[owner.email]["role"], rows[owner.email]["secondFactor"], rows[owner.email]["status"]) == (
        "owner",
        False,
        "active",
    )
    assert before <= datetime.fromisoformat(rows[owner.email]["lastLoginAt"]) <= utcnow()
    assert (rows[dev.email]["secondFactor"], rows[dev.email]["lastLoginAt"]) == (
        True,
        None,
    )  # never logged in
    assert rows[f"new-{org.organization_id}@example.com"]["status"] == "invited"
    text = shell("member", "list", "--org", org.organization_id)
    assert f"{dev.email}  developer  active  factor on  last login -" in text.stdout
    for bad in ("nope", org.organization_id.upper(), "0" * 24):
        refused = shell("member", "list", "--org", bad)
        assert refused.returncode == 1 and refused.stderr.startswith("error:"), bad


async def test_reset_factor_needs_a_reason_and_ends_the_sessions(
    ctx: Context, org: Credentials, engine: Engine, shell: Any
) -> None:
    member = await _member(ctx, org, "phoneless")
    totp, _ = await factor_on(ctx, member)
    client = client_address()
    waiting = await logins.login(ctx, member.email, PASSWORD, client)
    opened = logins.second_factor(ctx, waiting.session_token, totp.now(), client)
    base = ("member", "reset-factor", "--org", org.organization_id, "--member", member.id)
    for extra, said in (
        ((), "--reason is required"),
        (("--reason", ""), "--reason: the reason is empty"),
        (("--reason", "lost\nMEMBER_ENABLED"), "--reason: the reason must be one line"),
        (("--reason", "x" * 201), "--reason: the reason is 201 characters long"),
    ):
        refused = shell(*base, *extra)
        assert refused.returncode == 1 and said in refused.stderr, refused.stderr
    for args in (
        ("--org", "../x", "--member", member.id),
        ("--org", org.organization_id, "--member", member.id[:-1]),
        ("--org", org.organization_id, "--member", "f" * 24),  # not a member of it
    ):
        refused = shell("member", "reset-factor", *args, "--reason", REASON)
        assert refused.returncode == 1 and refused.stderr.startswith("error:"), args
    assert _row(engine, member.id).totp_enabled_at is not None  # nothing done so far

    done = shell(*base, "--reason", REASON, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"memberId": member.id, "secondFactor": False, "sessionsEnded": 1}
    assert _row(engine, member.id).totp_enabled_at is None and second_factor.codes_left(ctx, member) == 0
    assert member_sessions.session_member(ctx, opened.session_token) is None
    (record,) = [r for r in chain(engine, org.organization_id) if r.type == audit.MEMBER_SECOND_FACTOR_OFF]
    assert (record.actor, record.data["reason"], record.data["sessionsEnded"], record.data["memberId"]) == (
        OPERATOR,
        REASON,
        1,
        member.id,
    )


async def test_operators_reset_factor_turns_off_an_operators_factor(
    ctx: Context, shell: Any, engine: Engine
) -> None:
    made = operators.create(ctx, Actor.shell_operator("tests"), f"ops-{client_address()}@ops.example.com")
    ops = await logins.set_password(ctx, made.link.rsplit("/", 1)[1], PASSWORD)
    await factor_on(ctx, ops)
    refused = shell("operator", "reset-factor", ops.email)
    assert refused.returncode == 1 and "--reason is required" in refused.stderr
    done = shell("operator", "reset-factor", ops.email.upper(), "--reason", REASON, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["secondFactor"] is False
    assert _row(engine, ops.id).totp_enabled_at is None and second_factor.must_enrol(
        ctx, _row(engine, ops.id)
    )


async def test_add_owner_sends_the_invitation_and_records_the_reason(
    ctx: Context, org: Credentials, engine: Engine, settings: Settings, shell: Any
) -> None:
    email = f"heir-{org.organization_id}@example.com"
    base = ("member", "add-owner", "--org", org.organization_id)
    for args, said in (
        ((*base, "--email", email), "--reason is required"),
        ((*base, "--email", "not an address", "--reason", REASON), "--email:"),
        ((*base, "--email", "+15551234567", "--reason", REASON), "--email: email must be an e-mail address"),
        (("member", "add-owner", "--org", "0" * 24, "--email", email, "--reason", REASON), "not found"),
        ((*base, "--email", email, "--reason", "two\nlines"), "--reason: the reason must be one line"),
    ):
        refused = shell(*args)
        assert refused.returncode == 1 and said in refused.stderr, (args, refused.stderr)
    assert outbox_of(settings).entries(to=email) == []
    done = shell(*base, "--email", email.upper(), "--reason", REASON, "--json")
    assert done.returncode == 0, done.stderr
    added = json.loads(done.stdout)
    assert (added["email"], added["role"]) == (email, "owner") and "link" not in done.stdout.lower()
    (message,) = outbox_of(settings).entries(to=email)
    assert message.subject == "Your invitation to the Mandatum dashboard" and "as owner" in message.text
    assert re.search(r"/dashboard/set-password/[A-Za-z0-9_-]{43}", message.text)
    (record,) = [
        r
        for r in chain(engine, org.organization_id)
        if r.type == audit.MEMBER_INVITED and r.data["email"] == email
    ]
    assert (record.actor, record.data["reason"], record.data["role"]) == (OPERATOR, REASON, "owner")
    again = shell(*base, "--email", email, "--reason", REASON)
    assert again.returncode == 1 and "--email:" in again.stderr and "already a member" in again.stderr


def test_org_set_second_factor_requires_it_of_every_member(
    ctx: Context, org: Credentials, engine: Engine, shell: Any
) -> None:
    assert shell("org", "set-second-factor", "--org", "nope", "--required").returncode == 1
    done = shell("org", "set-second-factor", "--org", org.organization_id, "--required")
    assert done.returncode == 0 and "requires a second factor of every member" in done.stdout
    (record,) = [r for r in chain(engine, org.organization_id) if r.type == audit.SETTINGS_CHANGED]
    assert (record.actor, record.data) == (
        OPERATOR,
        {"setting": "requireSecondFactor", "value": True, "previous": False},
    )
    off = shell("org", "set-second-factor", "--org", org.organization_id, "--optional")
    assert off.returncode == 0 and "leaves the second factor to each member" in off.stdout
