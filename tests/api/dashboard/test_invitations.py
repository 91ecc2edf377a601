"""Invitations reveal nobody's membership elsewhere (issue 30, item 6; docs/adr/0003): an owner
inviting an address that already signs in to another organization's dashboard gets exactly what a
new address gets (the answer, the row in the list, the audit record, "send again"). Only the
address's owner learns, from the e-mail, that it cannot join with that address; the member's own
organization is untouched."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine

from adapters.delivery import outbox_of
from api.app import create_app
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services.context import Context
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.dashboard import PASSWORD, invitation, log_in_as, page_client

LINK_RE = re.compile(r"https?://\S+/dashboard/set-password/[A-Za-z0-9_-]+")


@pytest_asyncio.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    made = create_app(settings)
    yield made
    made.state.ctx.engine.dispose()


def _row(page: str, email: str) -> str:
    """The members list's row of ``email``, with the address and the member's id taken out."""
    row = page.split(f'<td data-label="Member" class="who">{email}', 1)[1].split("</tr>", 1)[0]
    return re.sub(
        r"/dashboard/members/[0-9a-f]{24}/", "/dashboard/members/ID/", row.replace(email, "ADDRESS")
    )


async def test_inviting_a_member_of_another_organization_answers_like_a_new_address(
    app: FastAPI, ctx: Context, org: Credentials, settings: Settings, engine: Engine, cipher: SecretCipher
) -> None:
    elsewhere = new_org(engine, cipher, settings)
    taken = f"taken-{org.organization_id}@example.com"
    path, _ = invitation(ctx, elsewhere, taken, MemberRole.DEVELOPER)
    async with page_client(app) as theirs:
        assert (await theirs.post(path, data={"password": PASSWORD, "again": PASSWORD})).status_code == 303
    fresh = f"fresh-{org.organization_id}@example.com"
    async with page_client(app) as owner:
        _, csrf = await log_in_as(owner, ctx, org, MemberRole.OWNER, "inviter")
        answers = [
            await owner.post("/dashboard/members", data={"csrf": csrf, "email": e, "role": "support"})
            for e in (taken, fresh)
        ]
        assert [(a.status_code, a.headers.get("location")) for a in answers] == [
            (303, "/dashboard/members?notice=invited")
        ] * 2
        listed = (await owner.get("/dashboard/members")).text
        assert _row(listed, taken) == _row(listed, fresh)
        assert ">invited<" in _row(listed, taken)

    outbox = outbox_of(settings)
    (to_new,) = outbox.entries(to=fresh)
    (to_taken,) = outbox.entries(to=taken)
    assert to_new.subject == to_taken.subject and LINK_RE.search(to_new.text)
    assert not LINK_RE.search(to_taken.text) and "another organization" in to_taken.text
    async with page_client(app) as theirs:  # their own dashboard is untouched
        own = await theirs.post("/dashboard/login", data={"email": taken, "password": PASSWORD})
        assert own.status_code == 303


async def test_an_address_of_this_organization_is_still_named_as_a_member(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    """The inviting owner sees their own organization's members anyway."""
    async with page_client(app) as owner:
        _, csrf = await log_in_as(owner, ctx, org, MemberRole.OWNER, "owner")
        email = f"twice-{org.organization_id}@example.com"
        first = await owner.post("/dashboard/members", data={"csrf": csrf, "email": email, "role": "support"})
        assert first.status_code == 303
        again = await owner.post("/dashboard/members", data={"csrf": csrf, "email": email, "role": "support"})
        assert again.status_code == 400 and "already a member" in again.text
