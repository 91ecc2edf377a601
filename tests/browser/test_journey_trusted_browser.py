"""The trusted browser session in Debian's Chromium (issue 36, ``iframe.cookie``): two approvals of
one organization to one contact in one browser. The first asks for the code and remembers the
browser (an HttpOnly, SameSite=Lax cookie on the approval pages only); the second goes straight to
the decision; "Forget this browser" ends it, and the code is asked again. Screenshots go to
``docs/screenshots/journey-trusted-*.png``."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from playwright.async_api import Page, expect
from sqlmodel import select

from core import i18n
from store.db import read_session
from store.tables import Decision, TrustedSession
from tests.support.a11y import assert_accessible
from tests.support.api_client import Credentials, policy_request
from tests.support.dashboard_browser import fits, shot
from tests.support.journey_messages import LINK_RE, code_in
from tests.support.live_stack import LiveStack
from tests.support.smtp_server import text_of


def t(key: str, **values: object) -> str:
    return i18n.text("ENG", key, **values)


async def new_request(
    live: LiveStack, org: Credentials, contact: str, nth: int
) -> tuple[dict[str, Any], str, str]:
    """A request allowing a 1-hour session; (its record, the code, the link) from its message."""
    body = policy_request(contacts=[contact], iframe={"cookie": {"allow": True, "duration": 3600}})
    created = await live.api(org).post("/request", body)
    assert created.status_code == 201, created.text
    for _ in range(400):
        if len(live.smtp.received_for(contact)) >= nth:
            break
        await asyncio.sleep(0.05)
    text = text_of(live.smtp.received_for(contact)[nth - 1].message)
    [link] = [m.group(0) for m in LINK_RE.finditer(text)]
    return created.json()["data"], code_in(text), link


async def approve(page: Page) -> None:
    await page.get_by_role("group", name="Rent payments").get_by_label(t("approve")).check()
    await page.get_by_role("button", name=t("send_decision")).click()
    await expect(page.get_by_role("heading", name=t("done_heading"))).to_be_visible()


async def test_two_approvals_in_one_browser_the_second_without_the_code(
    live: LiveStack, browser_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    contact = f"trusted-{uuid.uuid4().hex[:10]}@example.com"
    page = browser_page

    # the first approval: the code, and the browser is remembered
    first, code, link = await new_request(live, org, contact, 1)
    await page.goto(link)
    await expect(page.get_by_role("heading", name=t("otp_heading"))).to_be_visible()
    await page.get_by_role("textbox", name=t("otp_label")).fill(code)
    await page.get_by_role("button", name=t("continue")).click()
    await expect(page.get_by_role("status")).to_contain_text("This browser is remembered for 1 h")
    await expect(page.get_by_role("button", name=t("trusted_forget"))).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the decision after the code, with the browser remembered")
    await shot(page, "journey-trusted-remembered-desktop")
    [cookie] = [c for c in await page.context.cookies() if c["name"] == "mandatum_trusted"]
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["path"]) == (True, "Lax", "/r/")
    await approve(page)

    # the second: straight to the decision, no code typed
    second, _, link = await new_request(live, org, contact, 2)
    await page.goto(link)
    await expect(page.get_by_role("heading", name=t("decide_heading"))).to_be_visible()
    await expect(page.get_by_role("status")).to_have_text(t("trusted_used"))
    await expect(page.get_by_role("textbox", name=t("otp_label"))).to_have_count(0)
    await fits(page)
    await assert_accessible(page, axe_source, "the decision reached by a trusted browser")
    await shot(page, "journey-trusted-skipped-desktop")
    await approve(page)
    with read_session(live.engine) as session:
        [decision] = session.exec(
            select(Decision).where(Decision.credential_id == second["credentials"][0]["id"])
        )
    assert decision.channel == "trusted"

    # the third: the subject forgets this browser, and the code is asked again
    _, _, link = await new_request(live, org, contact, 3)
    await page.goto(link)
    await expect(page.get_by_role("heading", name=t("decide_heading"))).to_be_visible()
    await page.get_by_role("button", name=t("trusted_forget")).click()
    await expect(page.get_by_role("status")).to_have_text(t("trusted_forgotten"))
    await shot(page, "journey-trusted-forgotten-desktop")
    assert not [c for c in await page.context.cookies() if c["name"] == "mandatum_trusted"]
    await page.goto(link)
    await expect(page.get_by_role("heading", name=t("otp_heading"))).to_be_visible()
    await shot(page, "journey-trusted-code-again-desktop")
    with read_session(live.engine) as session:
        rows = list(session.exec(select(TrustedSession).where(TrustedSession.request_id == first["id"])))
    assert [r.revoked_at is not None for r in rows] == [True]
