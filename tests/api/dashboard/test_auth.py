"""The dashboard's front door over HTTP (the real app, in process): a password set once from an
invitation link, login and its throttling, the session cookie, the overview, logout with its CSRF
token, refusals of cross-site posts, and a session that ends when idle."""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import Engine, update

from adapters.delivery import outbox_of
from api.app import create_app
from core.settings import Settings
from services.context import Context
from store.db import write_session
from store.tables import MemberSession
from tests.support.api_client import Credentials
from tests.support.dashboard import PASSWORD, csrf_of, invitation, page_client


@pytest_asyncio.fixture
async def browser(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """An unsigned client of the real app (the dashboard needs no Temporal), as a browser on our
    own pages: same-origin fetch metadata on every request."""
    app = create_app(settings)
    async with page_client(app) as client:
        yield client
    app.state.ctx.engine.dispose()


def _invite(ctx: Context, org: Credentials, email: str) -> str:
    return invitation(ctx, org, email)[0]


async def _member(ctx: Context, org: Credentials, browser: httpx.AsyncClient, email: str) -> None:
    path = _invite(ctx, org, email)
    done = await browser.post(path, data={"password": PASSWORD, "again": PASSWORD})
    assert done.status_code == 303, done.text


async def _login(browser: httpx.AsyncClient, email: str, password: str = PASSWORD) -> httpx.Response:
    return await browser.post("/dashboard/login", data={"email": email, "password": password})


async def test_an_invitation_sets_the_password_once_and_the_member_logs_in(
    ctx: Context, org: Credentials, browser: httpx.AsyncClient
) -> None:
    email = f"owner-{org.organization_id}@example.com"
    path = _invite(ctx, org, email)
    form = await browser.get(path)
    assert form.status_code == 200 and 'name="again"' in form.text
    assert "script-src 'nonce-" in form.headers["content-security-policy"]
    assert "<script" not in form.text and form.headers["cache-control"] == "no-store"
    assert form.headers["referrer-policy"] == "same-origin"  # so browsers send our Origin on posts

    differ = await browser.post(path, data={"password": PASSWORD, "again": PASSWORD + "!"})
    assert differ.status_code == 400 and "differ" in differ.text
    short = await browser.post(path, data={"password": "short", "again": "short"})
    assert short.status_code == 400 and "12 to 1024 characters" in short.text
    done = await browser.post(path, data={"password": PASSWORD, "again": PASSWORD})
    assert (done.status_code, done.headers["location"]) == (303, "/dashboard/login?notice=password-set")
    again = await browser.post(path, data={"password": PASSWORD, "again": PASSWORD})
    assert again.status_code == 400 and "unknown, used or expired" in again.text
    assert "Your password is set" in (await browser.get("/dashboard/login?notice=password-set")).text

    assert (await browser.get("/dashboard")).headers["location"] == "/dashboard/login"
    logged = await _login(browser, email.upper())  # the address is case-insensitive
    assert (logged.status_code, logged.headers["location"]) == (303, "/dashboard")
    cookie = logged.headers["set-cookie"]
    assert cookie.startswith("mandatum_dashboard=") and "HttpOnly" in cookie
    assert "Path=/dashboard" in cookie and "SameSite=lax" in cookie
    overview = await browser.get("/dashboard")
    assert overview.status_code == 200
    assert email in overview.text and org.organization_id in overview.text and "owner" in overview.text
    # its first steps: a key and the example action are there, the rest to do (issue 34)
    assert "2 of 5 done" in overview.text
    assert '<a href="/dashboard/webhooks">Set a webhook and send it a test event</a>' in overview.text
    assert overview.text.count(": to do</span>") == 3 and overview.text.count(": done</span>") == 2
    assert (await browser.get("/dashboard/login")).headers["location"] == "/dashboard"


@pytest.mark.parametrize("path", ["/dashboard/set-password/short", "/dashboard/other/" + "a" * 43])
async def test_a_link_of_another_shape_is_not_found(browser: httpx.AsyncClient, path: str) -> None:
    assert (await browser.get(path)).status_code == 404
    assert (await browser.post(path, data={"password": PASSWORD, "again": PASSWORD})).status_code == 404


async def test_a_wrong_password_reads_like_an_unknown_address_and_repeated_failures_lock(
    ctx: Context, org: Credentials, browser: httpx.AsyncClient, settings: Settings
) -> None:
    email = f"dev-{org.organization_id}@example.com"
    await _member(ctx, org, browser, email)
    wrong = await _login(browser, email, PASSWORD + "x")
    unknown = await _login(browser, "nobody-" + email, PASSWORD)
    assert wrong.status_code == unknown.status_code == 401
    assert "Wrong e-mail or password" in wrong.text and "Wrong e-mail or password" in unknown.text
    assert "set-cookie" not in wrong.headers
    for _ in range(settings.login_failures_before_lock - 1):
        await _login(browser, email, PASSWORD + "x")
    locked = await _login(browser, email)  # even the right password, while locked
    assert locked.status_code == 429 and "Too many failed logins" in locked.text
    assert 0 < int(locked.headers["retry-after"]) <= 60
    assert "set-cookie" not in locked.headers


async def test_logout_needs_the_sessions_csrf_token_and_ends_the_session(
    ctx: Context, org: Credentials, browser: httpx.AsyncClient
) -> None:
    email = f"support-{org.organization_id}@example.com"
    await _member(ctx, org, browser, email)
    assert (await _login(browser, email)).status_code == 303
    page = (await browser.get("/dashboard")).text
    token = csrf_of(page)
    assert (await browser.post("/dashboard/logout", data={})).status_code == 403
    assert (await browser.post("/dashboard/logout", data={"csrf": "0" * 64})).status_code == 403
    assert (await browser.get("/dashboard")).status_code == 200  # still logged in
    out = await browser.post("/dashboard/logout", data={"csrf": token})
    assert (out.status_code, out.headers["location"]) == (303, "/dashboard/login?notice=logged-out")
    assert (await browser.get("/dashboard")).status_code == 303


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ({"Sec-Fetch-Site": "cross-site"}, False),
        ({"Sec-Fetch-Site": "same-site"}, False),  # a sibling subdomain is another site's page
        ({"Sec-Fetch-Site": "same-origin", "Origin": "null"}, True),  # fetch metadata decides
        ({"Sec-Fetch-Site": None, "Origin": "https://evil.example"}, False),
        ({"Sec-Fetch-Site": None, "Origin": "null"}, False),  # a sandboxed frame
        ({"Sec-Fetch-Site": None, "Origin": "OURS"}, True),
        ({"Sec-Fetch-Site": None}, True),  # no browser a cross-site page could drive
    ],
)
async def test_posts_from_another_site_are_refused(
    ctx: Context,
    org: Credentials,
    browser: httpx.AsyncClient,
    settings: Settings,
    headers: dict[str, str | None],
    allowed: bool,
) -> None:
    ours = settings.public_url.rstrip("/")
    sent = {k: (ours if v == "OURS" else v) for k, v in headers.items() if v is not None}
    if headers.get("Sec-Fetch-Site", "") is None:
        del browser.headers["Sec-Fetch-Site"]
    email = f"x-{org.organization_id}@example.com"
    path = _invite(ctx, org, email)
    used = await browser.post(path, data={"password": PASSWORD, "again": PASSWORD}, headers=sent)
    assert used.status_code == (303 if allowed else 403)
    if not allowed:  # the link was not used: it still sets the password from our own page
        mine = {"Sec-Fetch-Site": "same-origin"}
        assert (
            await browser.post(path, data={"password": PASSWORD, "again": PASSWORD}, headers=mine)
        ).status_code == 303
    logged = await browser.post("/dashboard/login", data={"email": email, "password": PASSWORD}, headers=sent)
    assert logged.status_code == (303 if allowed else 403)
    assert ("set-cookie" in logged.headers) is allowed


async def test_a_session_ends_when_idle(
    ctx: Context, org: Credentials, browser: httpx.AsyncClient, engine: Engine, settings: Settings
) -> None:
    email = f"idle-{org.organization_id}@example.com"
    await _member(ctx, org, browser, email)
    logged = await _login(browser, email)
    token = logged.cookies["mandatum_dashboard"]
    assert (await browser.get("/dashboard")).status_code == 200
    digest = hashlib.sha256(token.encode()).hexdigest()
    with write_session(engine) as session:  # its last use, just over the idle limit ago
        row = session.get(MemberSession, digest)
        assert row is not None
        session.execute(
            update(MemberSession)
            .where(MemberSession.token_hash == digest)  # type: ignore[arg-type]
            .values(last_seen_at=row.last_seen_at - settings.dashboard_idle - timedelta(seconds=1))
        )
    assert (await browser.get("/dashboard")).headers["location"] == "/dashboard/login"


async def test_a_forgotten_password_is_reset_by_e_mail_once_a_minute(
    browser: httpx.AsyncClient, ctx: Context, org: Credentials, settings: Settings
) -> None:
    email = f"forgetful-{org.organization_id}@example.com"
    await _member(ctx, org, browser, email)
    outbox = outbox_of(settings)
    asked = await browser.post("/dashboard/forgot-password", data={"email": email.upper()})
    assert asked.status_code == 200 and "If that address belongs to a member" in asked.text
    (message,) = outbox.entries(to=email)
    assert message.subject == "Reset your Mandatum password"
    link = re.search(r"https?://\S+/dashboard/reset-password/[A-Za-z0-9_-]+", message.text)
    assert link is not None
    again = await browser.post("/dashboard/forgot-password", data={"email": email})
    assert again.text.count("If that address belongs to a member") == 1
    assert len(outbox.entries(to=email)) == 1  # one a minute: no flood of a member's inbox

    stranger = f"nobody-{org.organization_id}@example.com"
    unknown = await browser.post("/dashboard/forgot-password", data={"email": stranger})
    assert unknown.status_code == 200 and "If that address belongs to a member" in unknown.text
    assert outbox.entries(to=stranger) == []  # the same words, nothing sent
    not_an_address = await browser.post("/dashboard/forgot-password", data={"email": "not an address"})
    assert not_an_address.status_code == 200 and "If that address belongs to a member" in not_an_address.text
    too_long = await browser.post("/dashboard/forgot-password", data={"email": "x" * 321})
    assert too_long.status_code == 400  # the form field's limit
    cross_site = await browser.post(
        "/dashboard/forgot-password", data={"email": email}, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert cross_site.status_code == 403

    path = "/dashboard/" + link.group(0).split("/dashboard/", 1)[1]
    new_password = PASSWORD + " again"
    chosen = await browser.post(path, data={"password": new_password, "again": new_password})
    assert chosen.status_code == 303
    assert (await _login(browser, email)).status_code == 401  # the old password is gone
    assert (await _login(browser, email, new_password)).status_code == 303
    reused = await browser.post(path, data={"password": new_password, "again": new_password})
    assert reused.status_code == 400 and "unknown, used or expired" in reused.text
