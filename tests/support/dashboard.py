"""The dashboard from a test's side: an unsigned client of the app that sends what a browser on
our own pages sends, a member invited and logged in, the CSRF token read from a page."""

from __future__ import annotations

import secrets

import httpx
from fastapi import FastAPI

from core.actors import Actor
from core.kinds import MemberRole
from services import members
from services.context import Context
from store.tables import Member
from tests.support.api_client import Credentials

PASSWORD = "correct horse battery staple"


def client_address() -> str:
    """A client address of its own (in 198.18.0.0/15, the range RFC 2544 sets aside for tests):
    logins are throttled per client address too, and every test shares the session's database."""
    return f"198.{18 + secrets.randbelow(2)}.{secrets.randbelow(256)}.{1 + secrets.randbelow(254)}"


def page_client(app: FastAPI, address: str | None = None) -> httpx.AsyncClient:
    """A client of the real app (in process) as a browser on our own pages, from ``address`` (a
    fresh one unless given): same-origin fetch metadata on every request; cookies kept."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=(address or client_address(), 50000)),
        base_url="https://mandatum.test",
        headers={"Sec-Fetch-Site": "same-origin"},
    )


def invitation(
    ctx: Context, org: Credentials, email: str, role: MemberRole = MemberRole.OWNER
) -> tuple[str, Member]:
    """A new member of ``org`` and the path of their one-time set-password link."""
    invited = members.invite(ctx, Actor.shell_operator("tests"), org.organization_id, email, role)
    return "/dashboard/" + invited.link.split("/dashboard/", 1)[1], invited.member


def csrf_of(page: str) -> str:
    """The CSRF token of a logged-in page's forms."""
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


async def log_in_as(
    browser: httpx.AsyncClient, ctx: Context, org: Credentials, role: MemberRole, name: str
) -> tuple[str, str]:
    """``browser`` logged in as a new member of ``org`` (``name-<org>@example.com``): the member's
    id and the CSRF token of their session."""
    path, member = invitation(ctx, org, f"{name}-{org.organization_id}@example.com", role)
    assert (await browser.post(path, data={"password": PASSWORD, "again": PASSWORD})).status_code == 303
    login = {"email": member.email, "password": PASSWORD}
    assert (await browser.post("/dashboard/login", data=login)).status_code == 303
    return member.id, csrf_of((await browser.get("/dashboard")).text)
