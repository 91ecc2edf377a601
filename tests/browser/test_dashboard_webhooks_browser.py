"""The webhook endpoints in Debian's Chromium (issue 34, item 5): a developer adds two endpoints,
the first by keyboard, sees each one's secrets once, opens the second and sends it a test event,
delivered; the list shows both (the URL without its query), accessible and within the viewport at
1280 px and on a 390 px phone, with screenshots."""

from __future__ import annotations

import asyncio

from playwright.async_api import Page, expect

from core.kinds import MemberRole
from tests.support.a11y import assert_accessible
from tests.support.dashboard_browser import fits, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack
from tests.support.webhook_receiver import receiving

BILLING = "https://billing.example/mandatum/events?token=receivers-secret"


async def _delivered(page: Page) -> None:
    """The page reloaded as a person would, until the test event's delivery shows (30 s at most:
    the machine may be busy)."""
    deadline = asyncio.get_running_loop().time() + 30
    while asyncio.get_running_loop().time() < deadline:
        if await page.get_by_role("cell", name="delivered").count():
            break
        await asyncio.sleep(0.2)
        await page.reload()
    await expect(page.get_by_role("cell", name="delivered")).to_be_visible()


async def test_a_developer_adds_two_endpoints_and_tests_one(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    page = browser_page
    await set_password_and_log_in(
        page, live, org.organization_id, f"hooks-{org.organization_id}@example.com", MemberRole.DEVELOPER
    )
    await page.get_by_role("link", name="Webhooks", exact=True).click()
    await expect(page.locator("#no-endpoint")).to_contain_text("There is no endpoint yet")
    await assert_accessible(page, axe_source, "the webhooks page without an endpoint")

    # the first by keyboard: the URL, the description, the button
    await page.get_by_label("URL").focus()
    await page.keyboard.type(BILLING)
    await page.keyboard.press("Tab")
    await expect(page.get_by_label("Description (optional)")).to_be_focused()
    await page.keyboard.type("Billing, production")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Add the endpoint")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="New secrets: save them now")).to_be_visible()
    await expect(page.locator("#secret-salt")).not_to_be_empty()
    await assert_accessible(page, axe_source, "a new endpoint's page with its secrets")
    await page.reload()
    await expect(page.get_by_role("heading", name="New secrets: save them now")).to_have_count(0)

    with receiving(lambda n: 200) as receiver:
        await page.get_by_role("link", name="All webhook endpoints").click()
        await page.get_by_label("URL").fill(receiver.url)
        await page.get_by_label("Description (optional)").fill("Staging receiver")
        await page.get_by_role("button", name="Add the endpoint").click()
        await expect(page.get_by_role("status")).to_contain_text("The endpoint is added")
        second = page.url.split("?")[0]

        # the second one opened from the list; its test event, sent by keyboard
        await page.get_by_role("link", name="All webhook endpoints").click()
        await page.get_by_role("link", name=receiver.url).click()
        await expect(page).to_have_url(second)
        await page.get_by_role("button", name="Send the test event").focus()
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("status")).to_contain_text("The test event is on its way")
        await _delivered(page)
        assert receiver.count() == 1
        await fits(page)
        await assert_accessible(page, axe_source, "an endpoint's page with its delivered test event")
        await shot(page, "dashboard-webhook-desktop")

    await page.get_by_role("link", name="All webhook endpoints").click()
    rows = page.locator("#endpoints tbody tr")
    await expect(rows).to_have_count(2)
    await expect(rows.nth(0)).to_contain_text("https://billing.example/mandatum/events")
    await expect(rows.nth(0)).to_contain_text("Billing, production")
    await expect(rows.nth(1)).to_contain_text("Staging receiver")
    await expect(page.get_by_text("receivers-secret")).to_have_count(0)  # the query is not shown
    await expect(page.get_by_role("region", name="Recent events")).to_contain_text("delivered")
    await fits(page)
    await assert_accessible(page, axe_source, "the webhooks page with two endpoints")
    await shot(page, "dashboard-webhooks-desktop")

    # the events of one endpoint, chosen in the filter
    await page.get_by_role("link", name="Events", exact=True).click()
    await page.get_by_label("Only the events sent to").select_option(
        label=f"{receiver.url} (Staging receiver)"
    )
    await page.get_by_role("button", name="Show").click()
    await expect(
        page.get_by_role("heading", name=f"The newest events sent to {receiver.url}")
    ).to_be_visible()
    await expect(page.get_by_role("cell", name=receiver.url)).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the events of one endpoint")

    phone = phone_page
    await set_password_and_log_in(
        phone, live, org.organization_id, f"phone-{org.organization_id}@example.com", MemberRole.OWNER
    )
    await phone.goto(f"{live.url}/dashboard/webhooks")
    await expect(phone.locator("#endpoints tbody tr")).to_have_count(2)
    await fits(phone)
    await assert_accessible(phone, axe_source, "the webhooks page on a phone")
    await shot(phone, "dashboard-webhooks-phone")
    await phone.get_by_role("link", name="https://billing.example/mandatum/events").click()
    await expect(phone.get_by_role("heading", name="Remove this endpoint")).to_be_visible()
    await fits(phone)
    await assert_accessible(phone, axe_source, "an endpoint's page on a phone")
    await shot(phone, "dashboard-webhook-phone")
