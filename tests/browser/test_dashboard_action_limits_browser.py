"""Use limits in the action editor (issue 31) in Debian's Chromium at a phone's width, by keyboard:
a developer adds a new version of the example action, types a sum limit whose max and param are
wrong and sees each problem beside the limit as they type, fixes them, adds a count whose
kind-dependent fields are unavailable and skipped by Tab, publishes, and reads the limits in words.
Each page accessible and within the viewport. Screenshots go to ``docs/screenshots/``."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect

from core.kinds import MemberRole
from tests.support.a11y import assert_accessible
from tests.support.dashboard_browser import SCREENSHOTS, fits, set_password_and_log_in
from tests.support.live_stack import LiveStack


async def test_a_developer_adds_limits_by_keyboard_on_a_phone(
    live: LiveStack, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    page = phone_page
    await set_password_and_log_in(
        page, live, org.organization_id, f"limits-{org.organization_id}@example.com", MemberRole.DEVELOPER
    )
    await page.get_by_role("link", name="Actions", exact=True).click()
    await page.get_by_role("link", name="Rent payments, version 1").click()
    await expect(page.get_by_role("heading", name="Limits")).to_be_visible()
    await expect(page.locator("#limits-heading + p")).to_contain_text("None: a mandate's use is bounded only")
    await page.get_by_role("button", name="Add a new version").click()
    await expect(page.get_by_role("heading", name="Version 2 draft")).to_be_visible()
    await expect(page.get_by_role("group", name="Add a limit")).to_be_visible()

    # a sum, by keyboard: name, kind (arrow keys on the select), max, param, period, unit
    await page.locator("#l-0-name").focus()
    await page.keyboard.type("monthly")
    await expect(page.get_by_role("group", name="Limit 1")).to_be_visible()
    await expect(page.get_by_role("group", name="Add a limit")).to_be_visible()  # the next blank row
    await page.keyboard.press("Tab")
    kind = page.locator("#l-0-kind")
    await expect(kind).to_be_focused()
    await expect(page.locator("#l-0-param")).to_be_disabled()  # an executions limit has no param
    await page.keyboard.press("ArrowDown")
    await expect(kind).to_have_value("sum")
    await expect(page.locator("#l-0-param")).to_be_enabled()
    await page.keyboard.press("Tab")
    # the hint first; the live check may already have added this row's problems after it (it runs
    # when typing pauses, which a busy machine can make happen before this line)
    await expect(page.locator("#l-0-max")).to_have_accessible_description(
        re.compile(
            "^"
            + re.escape(
                "Max: a number, or userParams.<name> (a number user param), so that each request sets "
                "its own. A request's maxExecutions is one more executions limit: no limit may take "
                "that name."
            )
        )
    )
    await page.keyboard.type("userParams.monthly")
    await page.keyboard.press("Tab")
    await expect(page.locator("#l-0-param")).to_be_focused()
    await page.keyboard.type("payee")
    problems = page.locator("#l-0-problems")
    await expect(problems.locator("p")).to_have_text(
        ["executionParams.payee is a string; a sum needs a number", "userParams has no param monthly"]
    )
    await expect(page.locator("#l-0-max")).to_have_attribute("aria-invalid", "true")
    await page.keyboard.press("Tab")
    period = page.locator("#l-0-period")
    await expect(period).to_be_focused()
    for _ in range(3):
        await page.keyboard.press("ArrowDown")
    await expect(period).to_have_value("P1M")
    await page.keyboard.press("Tab")
    await page.keyboard.type("EUR")
    await expect(page.locator("#check-summary")).to_have_text("2 problems to fix before publishing.")
    await fits(page)
    await assert_accessible(page, axe_source, "the editor showing a limit's problems on a phone")
    # the screen the keyboard user sees: the limit's fields down to its problems
    await problems.scroll_into_view_if_needed()
    await page.screenshot(path=str(SCREENSHOTS / "dashboard-action-limits-editor-phone.png"))

    await page.locator("#l-0-max").fill("userParams.maxAmount")
    await page.locator("#l-0-param").fill("amount")
    await expect(problems).to_be_empty()
    await expect(page.locator("#check-summary")).to_have_text("No problems: ready to publish.")

    # a count: its param, period and unit are unavailable, so Tab goes from max to the description
    await page.locator("#l-1-name").focus()
    await page.keyboard.type("uses")
    await page.keyboard.press("Tab")
    await expect(page.locator("#l-1-kind")).to_have_value("executions")
    await page.keyboard.press("Tab")
    await page.keyboard.type("5")
    for field in ("param", "period", "unit"):
        await expect(page.locator(f"#l-1-{field}")).to_be_disabled()
    await page.keyboard.press("Tab")
    await expect(page.locator("#l-1-description")).to_be_focused()
    await page.keyboard.type("Five payments in all")
    await expect(page.locator("#check-summary")).to_have_text("No problems: ready to publish.")
    await fits(page)
    await assert_accessible(page, axe_source, "the editor with two limits on a phone")

    await page.get_by_role("button", name="Publish").click()
    await expect(page.get_by_role("heading", name="Version 2 published")).to_be_visible()
    limits = page.locator("ul.limits > li")
    await expect(limits).to_have_text(
        [
            "monthly: sum of amount at most userParams.maxAmount EUR per calendar month (UTC)",
            "uses: at most 5 executions over the mandate's life Five payments in all",
        ],
        use_inner_text=True,  # the description on a line of its own
    )
    await fits(page)
    await assert_accessible(page, axe_source, "a published version's limits on a phone")
    await page.get_by_role("heading", name="Limits").scroll_into_view_if_needed()
    await page.screenshot(path=str(SCREENSHOTS / "dashboard-action-limits-published-phone.png"))
    await page.set_viewport_size({"width": 1280, "height": 900})
    await fits(page)
