"""Members over HTTP (the real app, in process): an owner invites by e-mail (the link goes to the
outbox, never onto the page), sends an invitation again at most once a minute, changes roles,
disables and enables members and ends their sessions, each recorded as theirs; the organization
keeps an owner; only owners reach the page, by URL and by form; another organization's member is
not found. The TOTP second factor asked for at login (a wrong code throttled like a wrong password,
a code used once; its lifecycle is tests/api/dashboard/test_second_factor.py); sessions listed and
the others ended."""

from __future__ import annotations

import re
from datetime import timedelta

from fastapi import FastAPI
from sqlalchemy import Engine, update
from sqlmodel import col

from adapters.delivery import outbox_of
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services.context import Context
from store import audit
from store import members as member_store
from store.db import utcnow, write_session
from store.tables import AuditRecord, Member, MemberSession, MemberToken
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import PASSWORD, log_in_as, page_client
from tests.support.second_factor import factor_on_by_pages, fresh_code

LINK_RE = re.compile(r"https?://\S+/dashboard/set-password/([A-Za-z0-9_-]+)")


def _records(engine: Engine, org: Credentials, kind: str) -> list[AuditRecord]:
    return [r for r in chain(engine, org.organization_id) if r.type == kind]


async def test_an_owner_invites_by_e_mail_and_the_link_is_never_on_the_page(
    app: FastAPI, ctx: Context, org: Credentials, settings: Settings, engine: Engine
) -> None:
    outbox = outbox_of(settings)
    async with page_client(app) as owner:
        owner_id, csrf = await log_in_as(owner, ctx, org, MemberRole.OWNER, "owner")
        page = await owner.get("/dashboard/members")
        assert page.status_code == 200 and 'href="/dashboard/members" aria-current="page"' in page.text
        email = f"Dev-{org.organization_id}@Example.com"
        sent = await owner.post(
            "/dashboard/members", data={"csrf": csrf, "email": email, "role": "developer"}
        )
        assert sent.status_code == 303 and sent.headers["location"] == "/dashboard/members?notice=invited"
        (message,) = outbox.entries(to=email.lower())
        assert message.subject == "Your invitation to the Mandatum dashboard"
        assert "as developer" in message.text and "works once" in message.text
        link = LINK_RE.search(message.text)
        assert link is not None
        listed = await owner.get("/dashboard/members?notice=invited")
        assert "The invitation is on its way." in listed.text and email.lower() in listed.text
        assert link.group(1) not in listed.text  # shown to nobody but the invitee
        (invited,) = [r for r in _records(engine, org, audit.MEMBER_INVITED) if r.data["role"] == "developer"]
        assert invited.actor == f"member:{owner_id}" and invited.data["email"] == email.lower()

        member_id = invited.data["memberId"]
        too_soon = await owner.post(f"/dashboard/members/{member_id}/invite", data={"csrf": csrf})
        assert too_soon.status_code == 429 and "less than a minute ago" in too_soon.text
        with write_session(engine) as session:  # a minute passes for the links made so far
            session.execute(
                update(MemberToken)
                .where(col(MemberToken.member_id) == member_id)
                .values(created_at=utcnow() - timedelta(minutes=2))
            )
        again = await owner.post(f"/dashboard/members/{member_id}/invite", data={"csrf": csrf})
        assert again.status_code == 303
        assert len(outbox.entries(to=email.lower())) == 2

        # the invitee sets a password from the first link (it still works) and logs in
        async with page_client(app) as invitee:
            path = "/dashboard/set-password/" + link.group(1)
            assert (
                await invitee.post(path, data={"password": PASSWORD, "again": PASSWORD})
            ).status_code == 303
            login = await invitee.post("/dashboard/login", data={"email": email, "password": PASSWORD})
            assert login.status_code == 303 and login.headers["location"] == "/dashboard"
        done = await owner.post(f"/dashboard/members/{member_id}/invite", data={"csrf": csrf})
        assert done.status_code == 409 and "nothing to send" in done.text

        for bad, why in (
            ({"email": "not an address", "role": "support"}, "email"),
            ({"email": email, "role": "support"}, "already a member"),
            ({"email": "x@example.com", "role": "admin"}, "A role is one of owner, developer, support"),
            ({"email": "+15551234567", "role": "support"}, "must be an e-mail address"),
        ):
            refused = await owner.post("/dashboard/members", data={"csrf": csrf, **bad})
            assert refused.status_code == 400 and why in refused.text, (bad, refused.text)
        assert outbox.entries(to="x@example.com") == []


async def test_roles_disable_enable_and_sessions_each_recorded_and_an_owner_always_left(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as owner, page_client(app) as dev:
        owner_id, csrf = await log_in_as(owner, ctx, org, MemberRole.OWNER, "owner")
        dev_id, _ = await log_in_as(dev, ctx, org, MemberRole.DEVELOPER, "dev")
        assert (await dev.get("/dashboard/keys")).status_code == 200

        # the last owner can neither step down nor be disabled (nor disable themselves)
        last = await owner.post(f"/dashboard/members/{owner_id}/role", data={"csrf": csrf, "role": "support"})
        assert last.status_code == 409 and "needs an owner" in last.text
        self_off = await owner.post(f"/dashboard/members/{owner_id}/disable", data={"csrf": csrf})
        assert self_off.status_code == 409 and "cannot disable yourself" in self_off.text

        page = await owner.get("/dashboard/members")
        row = page.text.split(f"/dashboard/members/{dev_id}/role", 1)[1].split("</tr>", 1)[0]
        assert '<td data-label="Open sessions">1</td>' in row and ">active<" in row

        changed = await owner.post(
            f"/dashboard/members/{dev_id}/role", data={"csrf": csrf, "role": "support"}
        )
        assert changed.status_code == 303
        assert (await dev.get("/dashboard/keys")).status_code == 403  # support now: refused at once
        bogus = await owner.post(f"/dashboard/members/{dev_id}/role", data={"csrf": csrf, "role": "root"})
        assert bogus.status_code == 409 and "a role is one of" in bogus.text.lower()
        (role,) = _records(engine, org, audit.MEMBER_ROLE_CHANGED)
        assert role.actor == f"member:{owner_id}"
        assert role.data == {
            "memberId": dev_id,
            "email": f"dev-{org.organization_id}@example.com",
            "role": "support",
            "previousRole": "developer",  # as records before 'previous' say it
            "previous": {"role": "developer"},
        }

        ended = await owner.post(f"/dashboard/members/{dev_id}/sessions", data={"csrf": csrf})
        assert ended.status_code == 303
        assert (await dev.get("/dashboard")).headers["location"] == "/dashboard/login"
        (sessions,) = _records(engine, org, audit.MEMBER_SESSIONS_ENDED)
        assert sessions.data["sessions"] == 1 and sessions.actor == f"member:{owner_id}"

        assert (await dev.post("/dashboard/login", data=_login(dev_id, engine))).status_code == 303
        off = await owner.post(f"/dashboard/members/{dev_id}/disable", data={"csrf": csrf, "confirm": "yes"})
        assert off.status_code == 303
        assert (await dev.get("/dashboard")).headers["location"] == "/dashboard/login"
        refused = await dev.post("/dashboard/login", data=_login(dev_id, engine))
        assert refused.status_code == 401  # disabled: the same words as a wrong password
        on = await owner.post(f"/dashboard/members/{dev_id}/enable", data={"csrf": csrf})
        assert on.status_code == 303
        assert (await dev.post("/dashboard/login", data=_login(dev_id, engine))).status_code == 303
        kinds = [r.type for r in chain(engine, org.organization_id) if r.type.startswith("MEMBER_")]
        assert kinds[-3:] == [audit.MEMBER_SESSIONS_ENDED, audit.MEMBER_DISABLED, audit.MEMBER_ENABLED]
        # each with when the member was disabled, before and after (the moment in RFC 3339 UTC)
        (disabled,) = _records(engine, org, audit.MEMBER_DISABLED)
        (enabled,) = _records(engine, org, audit.MEMBER_ENABLED)
        member = {"memberId": dev_id, "email": f"dev-{org.organization_id}@example.com", "role": "support"}
        at = disabled.data["disabledAt"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", at)
        assert disabled.data == {**member, "disabledAt": at, "previous": {"disabledAt": None}}
        assert enabled.data == {**member, "disabledAt": None, "previous": {"disabledAt": at}}

        # the trail shows who by e-mail (the recorded actor as its tooltip)
        trail = await owner.get("/dashboard/activity", params={"type": "MEMBER_ROLE_CHANGED"})
        assert f'<span title="member:{owner_id}">owner-{org.organization_id}@example.com</span>' in trail.text

        # with a second owner, the first may step down; then the members page is not theirs
        promote = await owner.post(f"/dashboard/members/{dev_id}/role", data={"csrf": csrf, "role": "owner"})
        assert promote.status_code == 303
        down = await owner.post(
            f"/dashboard/members/{owner_id}/role", data={"csrf": csrf, "role": "developer"}
        )
        assert down.status_code == 303 and down.headers["location"] == "/dashboard"
        assert (await owner.get("/dashboard/members")).status_code == 403


def _login(member_id: str, engine: Engine) -> dict[str, str]:
    member = member_store.get_member(engine, member_id)
    assert member is not None
    return {"email": member.email, "password": PASSWORD}


async def test_only_owners_reach_members_and_nobody_reaches_another_organizations_member(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    other = new_org(engine, cipher, settings)
    async with page_client(app) as stranger:
        stranger_id, _ = await log_in_as(stranger, ctx, other, MemberRole.OWNER, "stranger")
    for role in (MemberRole.DEVELOPER, MemberRole.SUPPORT):
        async with page_client(app) as client:
            member_id, csrf = await log_in_as(client, ctx, org, role, role.value)
            assert (await client.get("/dashboard/members")).status_code == 403
            assert 'href="/dashboard/members"' not in (await client.get("/dashboard")).text
            for change in ("role", "disable", "sessions", "invite", "enable", "second-factor"):
                sent = await client.post(f"/dashboard/members/{member_id}/{change}", data={"csrf": csrf})
                assert sent.status_code == 403, change
            invite = await client.post("/dashboard/members", data={"csrf": csrf, "email": "a@example.com"})
            assert invite.status_code == 403
    async with page_client(app) as owner:
        _, csrf = await log_in_as(owner, ctx, org, MemberRole.OWNER, "owner")
        page = await owner.get("/dashboard/members")
        assert stranger_id not in page.text and f"stranger-{other.organization_id}" not in page.text
        for change in ("role", "disable", "sessions", "invite", "enable", "second-factor"):
            sent = await owner.post(
                f"/dashboard/members/{stranger_id}/{change}", data={"csrf": csrf, "role": "support"}
            )
            assert sent.status_code == 404, change
        for path in ("/dashboard/members/nope/role", "/dashboard/members/" + "a" * 24 + "/promote"):
            assert (await owner.post(path, data={"csrf": csrf})).status_code == 404
        stale = await owner.post(f"/dashboard/members/{stranger_id}/disable", data={"csrf": "0" * 64})
        assert stale.status_code == 403  # the CSRF check comes before any lookup
    stranger_row = member_store.get_member(engine, stranger_id)
    assert stranger_row is not None and stranger_row.disabled_at is None and stranger_row.role == "owner"


async def test_the_second_factor_is_asked_at_login_throttled_and_used_once(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, settings: Settings
) -> None:
    async with page_client(app) as client:
        member_id, csrf = await log_in_as(client, ctx, org, MemberRole.SUPPORT, "careful")
        account = await client.get("/dashboard/account")
        assert account.status_code == 200 and "Off. With it on" in account.text
        totp, _, _ = await factor_on_by_pages(client, csrf)
        stored = _member_row(engine, member_id)
        assert (
            stored.totp_secret_ciphertext is not None
            and totp.secret.encode() not in stored.totp_secret_ciphertext
        )
        (on,) = _records(engine, org, audit.MEMBER_SECOND_FACTOR_ON)
        assert on.actor == f"member:{member_id}" and "secret" not in str(on.data).lower()
        assert "10 of 10 recovery codes left" in (await client.get("/dashboard/account")).text

    email = f"careful-{org.organization_id}@example.com"
    async with page_client(app) as client:
        step = await client.post("/dashboard/login", data={"email": email, "password": PASSWORD})
        assert step.status_code == 303 and step.headers["location"] == "/dashboard/login/code"
        # a right password alone opens nothing
        assert (await client.get("/dashboard")).headers["location"] == "/dashboard/login"
        assert (await client.get("/dashboard/account")).headers["location"] == "/dashboard/login"
        code_page = await client.get("/dashboard/login/code")
        assert code_page.status_code == 200 and 'autocomplete="one-time-code"' in code_page.text
        assert 'label for="recovery">Recovery code<' in code_page.text
        code = fresh_code(engine, member_id, totp)
        assert (await client.post("/dashboard/login/code", data={"code": code})).status_code == 303
        assert (await client.get("/dashboard")).status_code == 200
        refused_cross_site = await client.post(
            "/dashboard/login/code", data={"code": "123456"}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert refused_cross_site.status_code == 403
    async with page_client(app) as client:  # the code of that step is used, whatever the clock does
        await client.post("/dashboard/login", data={"email": email, "password": PASSWORD})
        replay = await client.post("/dashboard/login/code", data={"code": code})
        assert replay.status_code == 401 and "used already" in replay.text

    # wrong codes count as failed logins: the back-off locks the next try, right code or not
    async with page_client(app) as client:
        await client.post("/dashboard/login", data={"email": email, "password": PASSWORD})
        statuses = []
        for _ in range(settings.login_failures_before_lock):
            statuses.append((await client.post("/dashboard/login/code", data={"code": "000000"})).status_code)
        assert statuses == [401] * settings.login_failures_before_lock
        locked = await client.post(
            "/dashboard/login/code", data={"code": fresh_code(engine, member_id, totp)}
        )
        assert locked.status_code == 429 and int(locked.headers["Retry-After"]) > 0
        # and a right password does not buy more tries at the code
        again = await client.post("/dashboard/login", data={"email": email, "password": PASSWORD})
        assert again.status_code == 429

    # a waiting login expires: the code page then asks to log in again
    async with page_client(app) as client:
        await client.post("/dashboard/login", data={"email": email, "password": PASSWORD})
        with write_session(engine) as session:
            session.execute(
                update(MemberSession)
                .where(MemberSession.member_id == member_id, MemberSession.awaiting_code)  # type: ignore[arg-type]
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
        over = await client.post("/dashboard/login/code", data={"code": fresh_code(engine, member_id, totp)})
        assert over.status_code == 401 and "log in again" in over.text


def _member_row(engine: Engine, member_id: str) -> Member:
    found = member_store.get_member(engine, member_id)
    assert found is not None
    return found


async def test_sessions_are_listed_and_the_others_ended(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as first, page_client(app) as second:
        member_id, csrf = await log_in_as(first, ctx, org, MemberRole.DEVELOPER, "two-browsers")
        assert (await second.post("/dashboard/login", data=_login(member_id, engine))).status_code == 303
        account = await first.get("/dashboard/account")
        assert account.text.count("another browser") == 1 and account.text.count("this one") == 1
        ended = await first.post("/dashboard/account/sessions", data={"csrf": csrf})
        assert ended.status_code == 303 and ended.headers["location"] == "/dashboard/account?notice=ended"
        assert (await second.get("/dashboard")).headers["location"] == "/dashboard/login"
        assert (await first.get("/dashboard")).status_code == 200  # the asking session stays
        (record,) = _records(engine, org, audit.MEMBER_SESSIONS_ENDED)
        assert record.actor == f"member:{member_id}" and record.data["sessions"] == 1
