"""Actions in Debian's Chromium: an owner creates an action, declares its params, types a rule that
refers to an undeclared field and sees the problem appear beside the rule as they type (the page
does not reload), fixes it, tries the rules on sample values, publishes and sees the digest; each
page accessible and within the viewport, at desktop and phone width. Screenshots go to
``docs/screenshots/``."""

from __future__ import annotations

from playwright.async_api import Page, expect

from core.kinds import MemberRole
from tests.support.a11y import assert_accessible
from tests.support.dashboard_browser import fits, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack

UNDECLARED = "refers to undeclared field userParams.max"


async def test_an_owner_writes_checks_tries_and_publishes_an_action(
    live: LiveStack, browser_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    page = browser_page
    await set_password_and_log_in(
        page, live, org.organization_id, f"actions-{org.organization_id}@example.com", MemberRole.OWNER
    )
    await page.get_by_role("link", name="Actions", exact=True).click()
    await expect(page.get_by_role("heading", name="Actions", exact=True)).to_be_visible()
    await expect(page.get_by_role("table")).to_contain_text("Rent payments")  # the example action
    await page.get_by_label("Name").fill("Pay rent")
    await page.get_by_label("Description (optional)").fill("Pay the monthly rent, up to an approved amount.")
    await page.get_by_role("button", name="Create the action").click()

    await expect(page.get_by_role("heading", name="Version 1 draft")).to_be_visible()
    await expect(page.get_by_role("status").first).to_contain_text("The action is created")
    await fits(page)
    await assert_accessible(page, axe_source, "the editor of a new draft")
    editor_url = page.url
    await page.locator("#e-0-name").fill("amount")
    await page.locator("#e-0-type").select_option("number")
    # typing into a list's blank row adds the next blank one, without a round trip
    await expect(page.get_by_role("group", name="Execution param 1")).to_be_visible()
    await page.get_by_role("group", name="Add an execution param").get_by_label("Name").fill("payee")
    await expect(page.locator("#e-2-name")).to_be_empty()
    await page.locator("#u-0-name").fill("maxAmount")
    await page.locator("#u-0-type").select_option("number")
    await page.locator("#r-0-name").fill("underMax")
    expression = page.get_by_role("group", name="Rule 1").get_by_label("Expression (CEL)")
    await expression.press_sequentially("executionParams.amount <= userParams.max", delay=20)

    # the problem appears beside the rule while typing, before anything is submitted
    problems = page.locator("#r-0-problems")
    await expect(problems).to_have_text(UNDECLARED)
    await expect(problems).to_have_attribute("aria-live", "polite")
    await expect(expression).to_have_attribute("aria-invalid", "true")
    await expect(expression).to_have_accessible_description(UNDECLARED)
    await expect(page.locator("#check-summary")).to_have_text("1 problem to fix before publishing.")
    assert page.url == editor_url  # no submission: the script checked it
    await assert_accessible(page, axe_source, "the editor showing a rule's problem")
    await shot(page, "dashboard-action-editor-desktop")

    await expression.press_sequentially("Amount", delay=20)
    await expect(problems).to_be_empty()
    await expect(expression).not_to_have_attribute("aria-invalid", "true")
    await expect(page.locator("#check-summary")).to_have_text("No problems: ready to publish.")

    # saved, the draft offers a sample value per param; the rules run as a verification runs them
    await page.get_by_role("button", name="Save the draft").click()
    await expect(page.get_by_role("status").first).to_have_text("The draft is saved.")
    await page.get_by_label("executionParams.amount (number)").fill("1200")
    await page.get_by_label("executionParams.payee (string)").fill("Bob")
    await page.get_by_label("userParams.maxAmount (number)").fill("1000")
    await page.get_by_role("button", name="Try the rules").click()
    results = page.locator("#try-results")
    await expect(results.get_by_role("row").filter(has_text="underMax")).to_contain_text("false")
    await page.get_by_label("executionParams.amount (number)").fill("900")
    await page.get_by_role("button", name="Try the rules").click()
    await expect(results.get_by_role("row").filter(has_text="underMax")).to_contain_text("true")
    await fits(page)
    await assert_accessible(page, axe_source, "the editor with the rules tried")

    await page.get_by_role("button", name="Publish").click()
    await expect(page.get_by_role("heading", name="Version 1 published")).to_be_visible()
    await expect(page.get_by_role("status")).to_contain_text("The version is published")
    digest = (await page.locator("#digest").inner_text()).strip()
    assert digest.startswith("sha256-") and len(digest) == len("sha256-") + 44
    await expect(page.get_by_role("button", name="Publish")).to_have_count(0)  # no edit forms
    await expect(page.get_by_role("textbox")).to_have_count(0)
    await fits(page)
    await assert_accessible(page, axe_source, "a published version")

    await page.get_by_role("link", name="Pay rent").click()
    await expect(page.get_by_role("heading", name="Pay rent")).to_be_visible()
    await expect(page.get_by_role("row").filter(has_text="Version 1")).to_contain_text(digest)
    await fits(page)
    await assert_accessible(page, axe_source, "an action's page")
    await page.get_by_role("link", name="Actions", exact=True).first.click()
    await expect(page.get_by_role("row").filter(has_text="Pay the monthly rent")).to_contain_text("published")
    await fits(page)
    await assert_accessible(page, axe_source, "the actions page")
    await shot(page, "dashboard-actions-desktop")


async def test_the_actions_pages_fit_a_phone(live: LiveStack, phone_page: Page, axe_source: str) -> None:
    org = live.new_org()
    page = phone_page
    await set_password_and_log_in(
        page,
        live,
        org.organization_id,
        f"phone-actions-{org.organization_id}@example.com",
        MemberRole.DEVELOPER,
    )
    await page.get_by_role("link", name="Actions", exact=True).click()
    await expect(page.get_by_role("heading", name="Actions", exact=True)).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the actions page on a phone")
    await shot(page, "dashboard-actions-phone")
    await page.get_by_role("link", name="Rent payments, version 1").click()
    await expect(page.get_by_role("heading", name="Version 1 published")).to_be_visible()
    await fits(page)
    await page.get_by_role("button", name="Add a new version").click()
    await expect(page.get_by_role("heading", name="Version 2 draft")).to_be_visible()
    await page.locator("#r-2-expression").fill("userParams.maxAmount")
    await expect(page.locator("#r-2-problems")).to_contain_text("yields double, not a boolean")
    await fits(page)
    await assert_accessible(page, axe_source, "the editor on a phone")
