"""The second factor's lifecycle over HTTP (the real app, in process; issue 30, item 7): a stolen
session changes nothing of it without the password and a code; the recovery codes are shown once,
never cached, logged or recorded, and each logs in once; guesses at a change are throttled as a
login's; an owner turns off a lost factor with their own password and factor; a reset link says
the factor stays on. Operators, and the members of an organization that requires it, reach
nothing but the set-up until their factor is on (every route tried)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pyotp
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from adapters.delivery import outbox_of
from api.routes import dashboard as dashboard_routes
from core.actors import Actor
from core.kinds import MemberRole
from core.settings import Settings
from services import operators
from services.context import Context
from store import audit
from store import members as member_store
from store.tables import Member
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import PASSWORD, client_address, csrf_of, log_in_as, page_client
from tests.support.second_factor import CODES_RE, ENROL, SECRET_RE, factor_on_by_pages, fresh_code

RESET_RE = re.compile(r"https?://\S+(/dashboard/reset-password/[A-Za-z0-9_-]+)")
STAYS = "Your second factor stays on; you will need it to log in."


def _row(engine: Engine, member_id: str) -> Member:
    found = member_store.get_member(engine, member_id)
    assert found is not None
    return found


def _change(csrf: str, change: str, code: str = "", password: str = PASSWORD) -> dict[str, str]:
    return {"csrf": csrf, "change": change, "password": password, "code": code}


async def test_a_stolen_session_can_neither_set_up_replace_nor_turn_off_a_factor(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as thief:  # holds the member's session, not their password
        member_id, csrf = await log_in_as(thief, ctx, org, MemberRole.DEVELOPER, "victim")
        one_click = await thief.post("/dashboard/account/factor", data={"csrf": csrf})
        assert one_click.status_code == 404  # the set-up that needed a session alone is gone
        for password in ("", "a guess at the password"):
            tried = await thief.post(ENROL, data=_change(csrf, "set-up", password=password))
            assert tried.status_code == 400 and "Wrong password or code" in tried.text
            assert not SECRET_RE.search(tried.text)
        row = _row(engine, member_id)
        assert row.totp_pending_ciphertext is None and row.totp_secret_ciphertext is None

    async with page_client(app) as owner_of_it, page_client(app) as thief:
        member_id, csrf = await log_in_as(owner_of_it, ctx, org, MemberRole.DEVELOPER, "victim2")
        totp, _, _ = await factor_on_by_pages(owner_of_it, csrf)
        secret = _row(engine, member_id).totp_secret_ciphertext
        # the thief has the session cookie (and so its CSRF token) and the password, not the app
        thief.cookies.update(owner_of_it.cookies)
        for change in ("set-up", "codes", "off"):
            for code in ("", "000000", "AAAA-BBBB-CCCC-DDDD"):
                tried = await thief.post(ENROL, data=_change(csrf, change, code))
                assert tried.status_code in (400, 429) and not SECRET_RE.search(tried.text), (change, code)
                assert not CODES_RE.search(tried.text)
        row = _row(engine, member_id)
        assert row.totp_secret_ciphertext == secret and row.totp_pending_ciphertext is None

        # a set-up begun by the member shows its secret in that answer only, never to the session again
        begun = await owner_of_it.post(
            ENROL, data=_change(csrf, "set-up", fresh_code(engine, member_id, totp))
        )
        assert begun.status_code == 200 and SECRET_RE.search(begun.text)
        later = await thief.get(ENROL)
        assert "A new app waits for its first code" in later.text and not SECRET_RE.search(later.text)


async def test_the_recovery_codes_are_shown_once_never_kept_in_clear_and_each_logs_in_once(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "saver")
        begun = await browser.post(ENROL, data=_change(csrf, "set-up"))
        secret = SECRET_RE.search(begun.text)
        assert secret is not None
        totp = pyotp.TOTP(secret.group(1))
        shown = await browser.post(f"{ENROL}/confirm", data={"csrf": csrf, "code": totp.now()})
        assert shown.status_code == 200 and shown.headers["cache-control"] == "no-store"
        assert "shown this once" in shown.text and "Print the codes" in shown.text
        codes = CODES_RE.findall(shown.text)
        assert len(set(codes)) == 10
        again = await browser.post(f"{ENROL}/confirm", data={"csrf": csrf, "code": totp.now()})
        assert again.status_code == 409 and not CODES_RE.search(again.text)  # shown once only
        page = await browser.get(ENROL)
        assert "10 of 10 recovery codes left" in page.text and not CODES_RE.search(page.text)

    email = _row(engine, member_id).email
    async with page_client(app) as phoneless:
        assert (
            await phoneless.post("/dashboard/login", data={"email": email, "password": PASSWORD})
        ).status_code == 303
        used = await phoneless.post("/dashboard/login/code", data={"code": codes[0].lower()})
        assert used.status_code == 303 and used.headers["location"] == f"{ENROL}?notice=recovery-used"
        told = await phoneless.get(used.headers["location"])
        assert (
            "You logged in with a recovery code" in told.text and "9 of 10 recovery codes left" in told.text
        )
    async with page_client(app) as replay:
        await replay.post("/dashboard/login", data={"email": email, "password": PASSWORD})
        refused = await replay.post("/dashboard/login/code", data={"code": codes[0]})
        assert refused.status_code == 401 and "not right" in refused.text
        assert (await replay.get("/dashboard")).headers["location"] == "/dashboard/login"

    (record,) = [r for r in chain(engine, org.organization_id) if r.type == audit.MEMBER_RECOVERY_CODE_USED]
    assert (record.actor, record.data["memberId"], record.data["remaining"]) == (
        f"member:{member_id}",
        member_id,
        9,
    )
    plain = set(codes) | {c.replace("-", "") for c in codes}
    assert not [c for c in plain if c in str([r.data for r in chain(engine, org.organization_id)])]
    assert not [c for c in plain if c in caplog.text]  # nor in any log line


async def test_codes_guessed_at_a_change_are_throttled_like_a_login(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, settings: Settings
) -> None:
    address = client_address()
    async with page_client(app, address) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "guessed")
        totp, _, _ = await factor_on_by_pages(browser, csrf)
        statuses = [
            (await browser.post(ENROL, data=_change(csrf, "codes", f"{n:06d}"))).status_code
            for n in range(settings.login_failures_before_lock)
        ]
        assert statuses == [400] * settings.login_failures_before_lock
        locked = await browser.post(ENROL, data=_change(csrf, "codes", fresh_code(engine, member_id, totp)))
        assert locked.status_code == 429 and int(locked.headers["Retry-After"]) > 0
        assert not CODES_RE.search(locked.text)
    async with page_client(app, address) as same_client:  # one throttle: the login waits too
        again = await same_client.post(
            "/dashboard/login", data={"email": _row(engine, member_id).email, "password": PASSWORD}
        )
        assert again.status_code == 429


async def test_an_owner_turns_off_a_lost_factor_with_their_own_password_and_factor(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as owner, page_client(app) as dev:
        owner_id, owner_csrf = await log_in_as(owner, ctx, org, MemberRole.OWNER, "owner")
        owner_app, _, _ = await factor_on_by_pages(owner, owner_csrf)
        dev_id, dev_csrf = await log_in_as(dev, ctx, org, MemberRole.DEVELOPER, "lost")
        dev_app, _, _ = await factor_on_by_pages(dev, dev_csrf)
        path = f"/dashboard/members/{dev_id}/second-factor"
        listed = await owner.get("/dashboard/members")
        assert f'href="{path}"' in listed.text
        assert (
            f'href="/dashboard/members/{owner_id}/second-factor"' not in listed.text
        )  # one's own is one's page
        confirm = await owner.get(path)
        assert confirm.status_code == 200 and f"lost-{org.organization_id}@example.com" in confirm.text
        for code in ("", fresh_code(engine, dev_id, dev_app)):  # none, or the member's own code
            refused = await owner.post(path, data={"csrf": owner_csrf, "password": PASSWORD, "code": code})
            assert refused.status_code == 400 and "Wrong password or code" in refused.text
        assert _row(engine, dev_id).totp_enabled_at is not None
        done = await owner.post(
            path,
            data={"csrf": owner_csrf, "password": PASSWORD, "code": fresh_code(engine, owner_id, owner_app)},
        )
        assert done.status_code == 303 and done.headers["location"] == "/dashboard/members?notice=factor-off"
        (record,) = [
            r for r in chain(engine, org.organization_id) if r.type == audit.MEMBER_SECOND_FACTOR_OFF
        ]
        assert (record.actor, record.data["memberId"]) == (f"member:{owner_id}", dev_id)
        # a developer may not turn off anyone's, and nobody another organization's
        denied = await dev.post(f"/dashboard/members/{owner_id}/second-factor", data={"csrf": dev_csrf})
        assert denied.status_code == 403
    async with page_client(app) as dev:
        login = await dev.post(
            "/dashboard/login", data={"email": _row(engine, dev_id).email, "password": PASSWORD}
        )
        assert login.status_code == 303 and login.headers["location"] == "/dashboard"  # no code asked


async def test_a_reset_link_and_its_e_mail_say_the_second_factor_stays_on(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, settings: Settings
) -> None:
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "forgetful")
        await factor_on_by_pages(browser, csrf)
    email = _row(engine, member_id).email
    async with page_client(app) as browser:
        asked = await browser.post("/dashboard/forgot-password", data={"email": email})
        assert asked.status_code == 200
        (message,) = outbox_of(settings).entries(to=email)
        assert STAYS in message.text
        link = RESET_RE.search(message.text)
        assert link is not None
        form = await browser.get(link.group(1))
        assert form.status_code == 200 and STAYS in form.text
        done = await browser.post(
            link.group(1), data={"password": "a new long password", "again": "a new long password"}
        )
        assert done.headers["location"] == "/dashboard/login?notice=password-set-factor"
        assert STAYS in (await browser.get(done.headers["location"])).text
        login = await browser.post(
            "/dashboard/login", data={"email": email, "password": "a new long password"}
        )
        assert login.headers["location"] == "/dashboard/login/code"  # the factor is still asked for


# --- who must have a factor reaches nothing else -----------------------------------------------

OPEN = {  # what a member who must set up a factor may still use
    "/dashboard/login",
    "/dashboard/login/code",
    "/dashboard/logout",
    "/dashboard/forgot-password",
    "/dashboard/set-password/{token}",
    "/dashboard/reset-password/{token}",
    ENROL,
    f"{ENROL}/confirm",
}
VALUES = {
    "key_id": "0" * 24,
    "event_id": "urn:via:event:00000000-0000-4000-8000-000000000000",
    "kind": "retry",
    "request_id": "0" * 24,
    "subject_id": "00000000-0000-4000-8000-000000000000",
    "credential_id": "urn:via:credential:00000000-0000-4000-8000-000000000000",
    "key": "urn:via:action:00000000-0000-4000-8000-000000000000",
    "number": "1",
    "member_id": "0" * 24,
    "action": "cancel",
    "approval_id": "0" * 24,
    "workflow_id": "0" * 24,
    "endpoint_id": "0" * 24,
}
CHANGE_OF = {"keys": "rotate", "requests": "resend", "members": "role"}


def _routes(prefix: str = "/dashboard") -> Iterator[tuple[str, str]]:
    """(method, path) of every dashboard route under ``prefix`` but the ``OPEN`` ones, the path's
    parameters filled with values of the right form (so no route refuses it for its form)."""

    def walk(routes: list[Any]) -> Iterator[Any]:
        for route in routes:
            yield from walk(route.original_router.routes) if hasattr(route, "original_router") else [route]

    for section in dashboard_routes.SECTIONS:
        for route in walk(section.router.routes):
            if route.path in OPEN or not route.path.startswith(prefix):
                continue
            values = {**VALUES, "change": CHANGE_OF.get((route.path.split("/") + [""] * 3)[2], "")}
            for method in route.methods:
                yield method, route.path.format(**values)


async def _every_route_sends_to_the_set_up(browser: httpx.AsyncClient, csrf: str, prefix: str) -> int:
    tried = 0
    for method, path in _routes(prefix):
        answer = await browser.request(method, path, data={"csrf": csrf} if method == "POST" else None)
        assert (answer.status_code, answer.headers.get("location")) == (303, ENROL), (method, path)
        tried += 1
    return tried


async def test_operators_without_a_factor_reach_nothing_of_the_operators_area(
    app: FastAPI, ctx: Context
) -> None:
    made = operators.create(ctx, Actor.shell_operator("tests"), f"new-{client_address()}@ops.example.com")
    async with page_client(app) as browser:
        path = "/dashboard/" + made.link.split("/dashboard/", 1)[1]
        await browser.post(path, data={"password": PASSWORD, "again": PASSWORD})
        assert (
            await browser.post("/dashboard/login", data={"email": made.member.email, "password": PASSWORD})
        ).status_code == 303
        first = await browser.get("/dashboard")
        assert first.headers["location"] == ENROL  # after the password, the set-up
        page = await browser.get(ENROL)
        assert page.status_code == 200 and "Operators need a second factor" in page.text
        assert 'href="/dashboard/operators"' not in page.text  # no way in shown either
        csrf = csrf_of(page.text)
        # the search, a request's timeline, its actions, sending it again and the two retries (issue 32)
        assert await _every_route_sends_to_the_set_up(browser, csrf, "/dashboard/operators") == 6
        assert (await browser.get("/dashboard/account")).headers["location"] == ENROL
        await factor_on_by_pages(browser, csrf)
        opened = await browser.get("/dashboard/operators")
        assert opened.status_code == 200 and "Find a request" in opened.text


async def test_an_organization_that_requires_a_factor_opens_nothing_else_until_it_is_on(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as owner, page_client(app) as dev:
        owner_id, owner_csrf = await log_in_as(owner, ctx, org, MemberRole.OWNER, "strict")
        dev_id, dev_csrf = await log_in_as(dev, ctx, org, MemberRole.DEVELOPER, "lax")
        settings_page = await owner.get("/dashboard/settings")
        assert "Require a second factor of every member" in settings_page.text
        form = {"csrf": owner_csrf, "required": "yes", "password": PASSWORD}
        first = await owner.post("/dashboard/settings/second-factor", data=form)
        assert first.status_code == 409 and "your own second factor on first" in first.text
        owner_app, _, _ = await factor_on_by_pages(owner, owner_csrf)
        without_code = await owner.post("/dashboard/settings/second-factor", data=form)
        assert without_code.status_code == 400 and "Wrong password or code" in without_code.text
        by_dev = await dev.post("/dashboard/settings/second-factor", data={**form, "csrf": dev_csrf})
        assert by_dev.status_code == 403
        assert (await dev.get("/dashboard")).status_code == 200  # not required yet
        on = await owner.post(
            "/dashboard/settings/second-factor",
            data={**form, "code": fresh_code(engine, owner_id, owner_app)},
        )
        assert (
            on.status_code == 303 and on.headers["location"] == "/dashboard/settings?notice=factor-required"
        )
        (record,) = [
            r
            for r in chain(engine, org.organization_id)
            if r.type == audit.SETTINGS_CHANGED and r.data["setting"] == "requireSecondFactor"
        ]
        assert (record.actor, record.data["value"]) == (f"member:{owner_id}", True)
        assert (await owner.get("/dashboard")).status_code == 200  # the owner's factor is on

        # the developer's open session reaches the set-up only, whatever page or form it tries
        assert await _every_route_sends_to_the_set_up(dev, dev_csrf, "/dashboard") > 40
        required = await dev.get(ENROL)
        assert "Your organization requires a second factor" in required.text
        dev_app, _, _ = await factor_on_by_pages(dev, dev_csrf)
        assert (await dev.get("/dashboard/keys")).status_code == 200
        kept = await dev.post(ENROL, data=_change(dev_csrf, "off", fresh_code(engine, dev_id, dev_app)))
        assert kept.status_code == 409 and "requires a second factor" in kept.text
        assert _row(engine, dev_id).totp_enabled_at is not None
