"""Actions in Debian's Chromium: an owner creates an action, declares its params (a size bound typed
by keyboard; a bound that does not apply to the type is unavailable and skipped by Tab), types a
rule that refers to an undeclared field and sees the problem appear beside the rule as they type
(the page does not reload), fixes it, tries the rules on sample values (one over its bound),
publishes and sees the digest and the bounds; each page accessible and within the viewport, at
desktop and phone width. Screenshots go to ``docs/screenshots/``."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import Locator, Page, expect

from core.kinds import MemberRole
from policy.cel import parse
from policy.cost import declared_roots, estimate
from policy.params import Param
from tests.support.a11y import assert_accessible
from tests.support.dashboard_browser import SCREENSHOTS, fits, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack

UNDECLARED = "refers to undeclared field userParams.max"


def param_row(page: Page, name: str) -> Locator:
    """The row of a published version's param ``name``."""
    return page.get_by_role("row").filter(has=page.locator("code", has_text=re.compile(f"^{name}$")))


BOUNDS_HINT = re.compile(
    r"Max length: the most characters of a string .+ Left empty, 1,000 characters and 100 items;"
)


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
    # a number has neither characters nor items: both its bounds are unavailable
    await expect(page.locator("#e-0-maxlength")).to_be_disabled()
    await expect(page.locator("#e-0-maxitems")).to_be_disabled()
    # the payee's bound by keyboard: Tab from its description reaches Max length, then skips Max
    # items (a string has none) to the next row
    await page.locator("#e-1-description").focus()
    await page.keyboard.press("Tab")
    max_length = page.locator("#e-1-maxlength")
    await expect(max_length).to_be_focused()
    await expect(max_length).to_have_accessible_name("Max length (default 1,000)")
    await expect(max_length).to_have_accessible_description(BOUNDS_HINT)
    await page.keyboard.type("64")
    await page.keyboard.press("Tab")
    await expect(page.locator("#e-2-name")).to_be_focused()
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
    await expect(page.locator("#e-1-maxlength")).to_have_value("64")  # as stored
    await page.get_by_label("executionParams.amount (number)").fill("1200")
    await page.get_by_label("executionParams.payee (string)").fill("B" * 65)
    await page.get_by_label("userParams.maxAmount (number)").fill("1000")
    await page.get_by_role("button", name="Try the rules").click()
    results = page.locator("#try-results")
    await expect(results).to_contain_text(
        "executionParams.payee is 65 characters long, more than its maxLength of 64"
    )
    await expect(results.get_by_role("row")).to_have_count(0)  # no rule ran
    await fits(page)
    await assert_accessible(page, axe_source, "the editor with a value over its bound")
    await shot(page, "dashboard-action-try-bound-desktop")
    await page.get_by_label("executionParams.payee (string)").fill("Bob")
    await page.get_by_role("button", name="Try the rules").click()
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
    payee = param_row(page, "payee")
    await expect(payee.get_by_role("cell").nth(2)).to_have_text("64")  # Max length, as declared
    await expect(payee.get_by_role("cell").nth(3)).to_have_text("does not apply")
    amount = param_row(page, "amount")
    await expect(amount.get_by_role("cell").nth(2)).to_have_text("does not apply")
    await fits(page)
    await assert_accessible(page, axe_source, "a published version")
    await shot(page, "dashboard-action-published-desktop")

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
    payees = param_row(page, "payees")
    await expect(payees).to_contain_text("1,000 (default)")  # both bounds of an array<string>
    await expect(payees).to_contain_text("100 (default)")
    await page.get_by_role("button", name="Add a new version").click()
    await expect(page.get_by_role("heading", name="Version 2 draft")).to_be_visible()
    # the payees' Max items by keyboard at phone width: checked as typed, then fixed
    await page.locator("#u-1-description").focus()
    await page.keyboard.press("Tab")
    await expect(page.locator("#u-1-maxlength")).to_be_focused()  # an array<string>: both apply
    await page.keyboard.press("Tab")
    max_items = page.locator("#u-1-maxitems")
    await expect(max_items).to_be_focused()
    await page.keyboard.type("lots")
    await expect(page.locator("#u-1-problems")).to_have_text(
        "maxItems must be a whole number from 1 to 10,000"
    )
    await expect(max_items).to_have_attribute("aria-invalid", "true")
    await expect(page.locator("#u-0-maxitems")).to_be_disabled()  # maxAmount is a number
    for _ in range(4):
        await page.keyboard.press("Backspace")
    await page.keyboard.type("10")
    await expect(page.locator("#u-1-problems")).to_be_empty()
    await expect(max_items).not_to_have_attribute("aria-invalid", "true")
    await fits(page)
    await assert_accessible(page, axe_source, "the editor with a bound on a phone")
    # the screen the keyboard user sees: the row, its bounds and the focus (the whole page is long)
    await page.locator("#u-1-name").scroll_into_view_if_needed()
    await page.screenshot(path=str(SCREENSHOTS / "dashboard-action-editor-bounds-phone.png"))
    await page.get_by_role("button", name="Save the draft").click()
    await expect(page.get_by_role("status").first).to_have_text("The draft is saved.")
    await expect(page.locator("#u-1-maxitems")).to_have_value("10")
    await page.locator("#r-2-expression").fill("userParams.maxAmount")
    await expect(page.locator("#r-2-problems")).to_contain_text("yields double, not a boolean")
    await fits(page)
    await assert_accessible(page, axe_source, "the editor on a phone")


async def test_a_try_stopped_at_the_budget_reads_as_a_denial(
    live: LiveStack, browser_page: Page, axe_source: str
) -> None:
    """A draft's rule that compares every payee with every other one, tried on 100 distinct payees
    (the default maxItems): it runs in an evaluation process, is stopped at the budget, and the
    page says a verification would be denied with rule_limit_exceeded."""
    org = live.new_org()
    page = browser_page
    await set_password_and_log_in(
        page, live, org.organization_id, f"limit-{org.organization_id}@example.com", MemberRole.DEVELOPER
    )
    await page.get_by_role("link", name="Actions", exact=True).click()
    await page.get_by_role("link", name="Rent payments, version 1").click()
    await page.get_by_role("button", name="Add a new version").click()
    await expect(page.get_by_role("heading", name="Version 2 draft")).to_be_visible()
    await page.locator("#r-2-name").fill("distinct")
    await page.locator("#r-2-expression").fill(
        "userParams.payees.all(x, userParams.payees.exists_one(y, y == x))"
    )
    quadratic = "userParams.payees.all(x, userParams.payees.exists_one(y, y == x))"
    steps = estimate(parse(quadratic), declared_roots([], [Param("payees", "array<string>")]))
    await expect(page.locator("#r-2-problems")).to_contain_text(f"may take up to {steps:,} steps")
    await page.get_by_role("button", name="Save the draft").click()
    await expect(page.get_by_role("status").first).to_have_text("The draft is saved.")
    await page.get_by_label("executionParams.amount (number)").fill("10")
    await page.get_by_label("executionParams.payee (string)").fill("p0")
    payees = ", ".join(f'"p{n}"' for n in range(100))
    await page.get_by_label("userParams.payees (array<string>)").fill(f"[{payees}]")
    await page.get_by_role("button", name="Try the rules").click()
    results = page.locator("#try-results")
    await expect(results).to_contain_text(
        "A verification with these values would be denied with rule_limit_exceeded."
    )
    await expect(results.get_by_role("row").filter(has_text="distinct")).to_contain_text(
        "stopped: the rules took more than the 10,000 steps one verification may take"
    )
    await expect(results.get_by_role("row").filter(has_text="amountWithinLimit")).to_contain_text("true")
    await fits(page)
    await assert_accessible(page, axe_source, "a try stopped at the budget")
    await shot(page, "dashboard-action-try-limit-desktop")


async def test_the_action_page_shows_how_to_use_it_in_a_request(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    """Issue 34: the action's URN and a request example (curl and the Python SDK) with copy
    buttons, which copy exactly the example shown; at desktop and phone width."""
    from api.routes.dashboard.actions_form import key_of
    from cli.devstack import EXAMPLE_ACTION_ID

    org = live.new_org()
    for page, width in ((browser_page, "desktop"), (phone_page, "phone")):
        await set_password_and_log_in(
            page,
            live,
            org.organization_id,
            f"example-{width}-{org.organization_id}@example.com",
            MemberRole.OWNER,
        )
        await page.goto(f"{live.url}/dashboard/actions/{key_of(EXAMPLE_ACTION_ID)}")
        card = page.get_by_role("region", name="Use it in a request")
        await expect(card).to_be_visible()
        await expect(page.locator("#example-curl")).to_contain_text(EXAMPLE_ACTION_ID)
        await expect(page.locator("#example-python")).to_contain_text(f'ActionDto(id="{EXAMPLE_ACTION_ID}"')
        await fits(page)
        await assert_accessible(page, axe_source, f"the action page with its request example ({width})")
        await card.scroll_into_view_if_needed()
        await page.screenshot(path=str(SCREENSHOTS / f"dashboard-action-example-{width}.png"))
    page = browser_page
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.url)
    await page.get_by_role("button", name="Copy the curl example").click()
    await expect(page.locator("#copied")).to_have_text("Copied: the curl example")
    copied = await page.evaluate("navigator.clipboard.readText()")
    assert copied == (await page.locator("#example-curl").text_content() or "").strip()
    assert copied.startswith("# MANDATUM_API_KEY") and "openssl dgst -sha256 -hmac" in copied


async def test_leaving_the_editor_with_unsaved_changes_asks_first(
    live: LiveStack, browser_page: Page
) -> None:
    """Issue 34: a typed change is not lost to a stray click: leaving asks (the browser's own
    dialog), staying keeps the text; Check keeps the draft, after which leaving asks nothing."""
    org = live.new_org()
    page = browser_page
    await set_password_and_log_in(
        page, live, org.organization_id, f"leave-{org.organization_id}@example.com", MemberRole.OWNER
    )
    await page.get_by_role("link", name="Actions", exact=True).click()
    await page.get_by_label("Name").fill("Pay rent")
    await page.get_by_role("button", name="Create the action").click()
    await expect(page.get_by_role("heading", name="Version 1 draft")).to_be_visible()
    editor_url = page.url
    asked: list[str] = []

    async def stay(dialog: Any) -> None:
        asked.append(dialog.type)
        await dialog.dismiss()

    page.on("dialog", stay)
    await page.locator("#e-0-name").fill("amount")
    await page.get_by_role("link", name="Requests", exact=True).click()
    await expect(page.locator("#e-0-name")).to_have_value("amount")  # still here, the text kept
    assert asked == ["beforeunload"] and page.url == editor_url
    await page.get_by_role("button", name="Check").click()
    await expect(page.get_by_role("status").first).to_have_text("The draft is checked and saved.")
    await page.get_by_role("link", name="Requests", exact=True).click()
    await expect(page.get_by_role("heading", name="Requests", exact=True)).to_be_visible()
    assert asked == ["beforeunload"]
    await page.goto(editor_url.split("?")[0])
    await expect(page.locator("#e-0-name")).to_have_value("amount")  # kept by Check
