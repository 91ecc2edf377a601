"""The dashboard's front door in Debian's Chromium: an owner sets a password from the invitation
link, logs in by keyboard, sees the organization's overview, and logs out; at desktop and phone
width, without horizontal scrolling. Screenshots go to ``docs/screenshots/`` (linked from the
README)."""

from __future__ import annotations

import asyncio
import re

from playwright.async_api import Page, expect

from core.actors import Actor
from services import orgs as organizations
from tests.support.a11y import assert_accessible
from tests.support.api_client import Credentials, assert_error_shape, policy_request
from tests.support.dashboard import PASSWORD
from tests.support.dashboard_browser import fits, invite, live_context, log_in_by_keyboard, shot
from tests.support.live_stack import LiveStack
from tests.support.webhook_receiver import receiving


async def test_an_owner_sets_a_password_logs_in_and_out(
    live: LiveStack, browser_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    created = await live.api(org).post("/request", policy_request())  # something in the trail
    assert created.status_code == 201, created.text
    email = f"owner-{org.organization_id}@example.com"
    page = browser_page

    await page.goto(invite(live, org.organization_id, email))
    await expect(page.get_by_role("heading", name="Choose your password")).to_be_visible()
    await assert_accessible(page, axe_source, "the set-password page")
    await page.get_by_label("New password").fill(PASSWORD)
    await page.get_by_label("The same password again").fill(PASSWORD + " but not")
    await page.get_by_role("button", name="Save the password").click()
    await expect(page.get_by_role("alert")).to_contain_text("The two passwords differ")
    await assert_accessible(page, axe_source, "the set-password page with its error")
    await page.get_by_label("New password").fill(PASSWORD)
    await page.get_by_label("The same password again").fill(PASSWORD)
    await page.get_by_role("button", name="Save the password").click()
    await expect(page.get_by_role("status")).to_contain_text("Your password is set")
    await assert_accessible(page, axe_source, "the login page")
    await shot(page, "dashboard-login-desktop")

    await log_in_by_keyboard(page, email)
    await expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    await expect(page.locator("header")).to_contain_text(email)
    await expect(page.get_by_role("table")).to_contain_text("REQUEST_CREATED")
    # the key by its name (unnamed: its prefix), the recorded actor as the tooltip (issue 34)
    await expect(page.get_by_role("table").locator(f'span[title="apiKey:{org.key_id}"]')).to_contain_text(
        "API key mdt_"
    )
    await fits(page)
    await assert_accessible(page, axe_source, "the overview")
    await shot(page, "dashboard-overview-desktop")

    # API keys: a new one, named, is shown once; a request signed with it works, and shows as its
    # last use; revoked after confirming, the same request is refused
    await page.get_by_role("link", name="API keys", exact=True).click()
    await expect(page.get_by_role("heading", name="API keys", exact=True)).to_be_visible()
    create = page.get_by_role("form", name="Create a key")
    await create.get_by_label("Name", exact=True).fill("Billing service")
    await create.get_by_label("Description (optional)").fill("Nightly invoices, production")
    await create.get_by_label("Expires after (days; empty for never)").fill("90")
    await page.get_by_role("button", name="Create the key").click()
    await expect(page.get_by_role("heading", name="New API key: save it now")).to_be_visible()
    await expect(page.locator("#issued-name")).to_have_text("Billing service")
    await expect(page.locator("#issued-description")).to_have_text("Nightly invoices, production")
    key_id = (await page.locator("#key-id").inner_text()).strip()
    api_key = (await page.locator("#api-key").inner_text()).strip()
    secret = (await page.locator("#signature-secret").inner_text()).strip()
    assert api_key.startswith("mdt_") and secret
    row = page.get_by_role("row").filter(has_text=key_id)
    await expect(row).to_contain_text("Billing service")
    await expect(row.locator('td[data-label="Last used"]')).to_have_text("never")
    await fits(page)
    await assert_accessible(page, axe_source, "the keys page with a new key")
    await shot(page, "dashboard-keys-desktop")

    signed = live.api(Credentials(org.organization_id, key_id, api_key, secret, org.did))
    me = await signed.get("/me")
    assert me.status_code == 200 and me.json()["organizationId"] == org.organization_id, me.text
    last_used = row.locator('td[data-label="Last used"]')
    for _ in range(100):  # written a moment after the call, off its path: reloaded as a person would
        await page.goto(f"{live.url}/dashboard/keys")
        if (await last_used.inner_text()).strip() != "never":
            break
        await asyncio.sleep(0.1)
    await expect(last_used).to_have_text(re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC"))
    await expect(row.locator('td[data-label="Key"]')).to_contain_text("Nightly invoices, production")
    await row.get_by_role("button", name=f"Revoke key {key_id}").click()  # the box is not ticked
    await expect(row.get_by_text("active")).to_be_visible()  # the browser asks for the box first
    await row.get_by_role("checkbox").check()
    await row.get_by_role("button", name=f"Revoke key {key_id}").click()
    await expect(page.get_by_role("status")).to_contain_text("The key is revoked")
    await expect(page.get_by_role("row").filter(has_text=key_id)).to_contain_text("revoked")
    await expect(page.get_by_text(api_key)).to_have_count(0)  # never shown again
    assert_error_shape(await signed.get("/me"), 401)

    # the webhook: an endpoint, its secrets once, the test event delivered in its log (the pages
    # of several endpoints: test_dashboard_webhooks_browser.py, which takes their screenshots)
    with receiving(lambda n: 200) as receiver:
        await page.get_by_role("link", name="Webhooks", exact=True).click()
        await page.get_by_label("URL").fill(receiver.url)
        await page.get_by_role("button", name="Add the endpoint").click()
        await expect(page.get_by_role("heading", name="New secrets: save them now")).to_be_visible()
        await page.get_by_role("button", name="Send the test event").click()
        await expect(page.get_by_role("status")).to_contain_text("The test event is on its way")
        for _ in range(100):  # the page is reloaded as a person would, until the delivery shows
            if await page.get_by_role("cell", name="delivered").count():
                break
            await asyncio.sleep(0.1)
            await page.reload()
        await expect(page.get_by_role("cell", name="delivered")).to_be_visible()
        await expect(page.get_by_role("cell", name="HTTP 200")).to_be_visible()
        assert receiver.count() == 1
        await fits(page)
        await assert_accessible(page, axe_source, "the webhook endpoint's page with its log")

    await page.get_by_role("button", name="Log out").focus()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("status")).to_contain_text("You are logged out")
    await page.goto(f"{live.url}/dashboard")  # the session is over
    await expect(page.get_by_role("heading", name="Log in")).to_be_visible()


async def test_the_dashboard_fits_a_phone(live: LiveStack, phone_page: Page, axe_source: str) -> None:
    org = live.new_org()
    email = f"phone-{org.organization_id}@example.com"
    page = phone_page
    await page.goto(invite(live, org.organization_id, email))
    await fits(page)
    await shot(page, "dashboard-password-phone")
    await page.get_by_label("New password").fill(PASSWORD)
    await page.get_by_label("The same password again").fill(PASSWORD)
    await page.get_by_role("button", name="Save the password").click()
    # the login page has loaded before it is measured (mid-navigation there is no document)
    await expect(page.get_by_role("status")).to_contain_text("Your password is set")
    await fits(page)
    await page.get_by_label("E-mail").fill(email)
    await page.get_by_label("Password", exact=True).fill(PASSWORD + "x")
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("alert")).to_contain_text("Wrong e-mail or password")
    await assert_accessible(page, axe_source, "the login page with its error, on a phone")
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the overview on a phone")
    await shot(page, "dashboard-overview-phone")
    ctx, someone = live_context(live), Actor.shell_operator("tests")
    mobile = organizations.create_key(
        ctx, someone, org.organization_id, name="Mobile app", description="iOS and Android"
    )
    await page.get_by_role("link", name="API keys", exact=True).click()
    await expect(page.get_by_role("heading", name="API keys", exact=True)).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the keys page on a phone")
    await shot(page, "dashboard-keys-phone")
    # the key renamed from its row: the form opens in place, and the page still fits
    row = page.get_by_role("row").filter(has_text=mobile.key_id)
    await row.get_by_text("Edit name").click()
    await row.get_by_label("Name", exact=True).fill("Mobile app (beta)")
    await fits(page)
    await assert_accessible(page, axe_source, "the keys page with a key's name form open, on a phone")
    await row.get_by_role("button", name=f"Save name of key {mobile.key_id}").click()
    await expect(page.get_by_role("status")).to_contain_text("name and description are saved")
    await expect(page.get_by_role("row").filter(has_text=mobile.key_id)).to_contain_text("Mobile app (beta)")
