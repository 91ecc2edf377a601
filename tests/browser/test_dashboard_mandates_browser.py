"""Mandates in the dashboard, in Debian's Chromium: a support member opens the list, a mandate
(accepted and issued by the services the request workflow calls, on the live stack's database) that
an agent presented and had verified over the live API, reads its verification, and revokes it with
a reason using the keyboard only; each page is accessible and fits the desktop and a phone.
Screenshots go to ``docs/screenshots/``."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page, expect

from core.kinds import MemberRole
from store import audit
from tests.support.a11y import assert_accessible
from tests.support.api_client import Credentials
from tests.support.audit import chain, issued_mandate
from tests.support.dashboard_browser import fits, live_context, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack
from tests.support.presentations import GOOD, presented, verify


async def _verified_mandate(live: LiveStack, org: Credentials) -> dict[str, Any]:
    """A mandate its subject accepted, and one allowed verification of it over the live API.

    The subject's journey on this stack sends its code by SMTP, which the workflow test helpers do
    not read; the decision and the issuance are recorded by the same services the workflow calls."""
    ctx = live_context(live)
    issued = issued_mandate(live.engine, ctx.cipher, live.settings, org.organization_id)
    api = live.api(org)
    vp = (await presented(api, issued.mandate_id))["presentation"]
    allowed = await verify(api, vp, GOOD)
    assert allowed.status_code == 200, allowed.text
    return {"id": issued.mandate_id, "requestId": issued.request_id, "receipt": allowed.json()["receipt"]}


async def test_a_support_member_reads_and_revokes_a_mandate_by_keyboard(
    live: LiveStack, browser_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    mandate = await _verified_mandate(live, org)
    email = f"support-{org.organization_id}@example.com"
    page = browser_page
    await set_password_and_log_in(page, live, org.organization_id, email, MemberRole.SUPPORT)

    await page.get_by_role("link", name="Mandates", exact=True).click()
    await expect(page.get_by_role("heading", name="Mandates", exact=True)).to_be_visible()
    row = page.get_by_role("row").filter(has_text="Rent")
    await expect(row).to_contain_text("ACTIVE")
    await expect(row).to_contain_text("ana@example.com")
    await expect(row.get_by_role("link", name=mandate["requestId"])).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the mandates list")
    await shot(page, "dashboard-mandates-desktop")
    await page.get_by_label("Status").select_option("REVOKED")
    await page.get_by_role("button", name="Filter").click()
    await expect(page.get_by_role("heading", name="0 credentials matching")).to_be_visible()
    await page.get_by_role("link", name="Show all").click()

    await page.get_by_role("link", name="Rent", exact=True).click()
    await expect(page.get_by_role("heading", name="Rent", level=1)).to_be_visible()
    await expect(page.locator("dl").first).to_contain_text(mandate["id"])
    verification = page.locator("article.verification")
    await expect(verification).to_contain_text(mandate["receipt"]["id"])
    await expect(verification.get_by_role("cell", name="amountWithinLimit")).to_be_visible()
    await verification.get_by_text("Receipt", exact=True).click()  # the receipt's JSON unfolds
    await expect(verification.locator("pre")).to_contain_text('"type": "VERIFICATION_APPROVED"')
    await fits(page)
    await assert_accessible(page, axe_source, "a mandate's page")
    await shot(page, "dashboard-mandate-desktop")

    reason = "The customer closed the account"
    await page.get_by_label("Reason").focus()
    await page.keyboard.type(reason)
    await page.keyboard.press("Tab")  # to the confirmation box
    await page.keyboard.press("Space")
    await page.keyboard.press("Tab")  # to the button
    await expect(page.get_by_role("button", name="Revoke the mandate")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("status")).to_contain_text("The mandate is revoked")
    await expect(page.locator("dl").first).to_contain_text("REVOKED")
    await expect(page.locator("dl").first).to_contain_text(reason)
    await expect(page.get_by_role("button", name="Revoke the mandate")).to_have_count(0)
    await fits(page)
    await assert_accessible(page, axe_source, "a revoked mandate's page")

    [revoked] = [r for r in chain(live.engine, org.organization_id) if r.type == audit.MANDATE_REVOKED]
    assert revoked.actor is not None and revoked.actor.startswith("member:")
    assert (revoked.credential_id, revoked.data["reason"]) == (mandate["id"], reason)


async def test_a_mandates_pages_fit_a_phone(live: LiveStack, phone_page: Page, axe_source: str) -> None:
    org = live.new_org()
    await _verified_mandate(live, org)
    page = phone_page
    email = f"phone-{org.organization_id}@example.com"
    await set_password_and_log_in(page, live, org.organization_id, email, MemberRole.SUPPORT)
    await page.goto(f"{live.url}/dashboard/mandates")
    await expect(page.get_by_role("heading", name="Mandates", exact=True)).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the mandates list on a phone")
    await page.get_by_role("link", name="Rent", exact=True).click()
    await expect(page.get_by_role("heading", name="Rent", level=1)).to_be_visible()
    await page.locator("article.verification").get_by_text("Receipt", exact=True).click()
    await fits(page)  # the JSON wraps: no sideways scrolling
    await assert_accessible(page, axe_source, "a mandate's page on a phone")
    await shot(page, "dashboard-mandate-phone")
