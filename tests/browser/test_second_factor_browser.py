"""The second factor's lifecycle in Debian's Chromium (issue 30, item 7), by keyboard, at desktop
(1280 px) and phone (390 px) width, accessible: a member sets it up with their password and the
app's first code, sees the ten recovery codes once (copy and print buttons), logs out and back in
with a recovery code, and is told how many remain; an owner then requires a second factor of every
member from the settings page, with their password and a code."""

from __future__ import annotations

import re

import pyotp
from playwright.async_api import Page, expect

from core.kinds import MemberRole
from store import members as member_store
from tests.support.a11y import assert_accessible
from tests.support.dashboard import PASSWORD
from tests.support.dashboard_browser import fits, log_in_by_keyboard, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack
from tests.support.second_factor import fresh_code


async def _type_into(page: Page, label: str, text: str) -> None:
    await page.get_by_label(label, exact=True).focus()
    await page.keyboard.type(text)


async def _set_up_and_recover(
    page: Page, live: LiveStack, axe_source: str, width: str
) -> tuple[str, pyotp.TOTP]:
    """A new owner sets the factor up and logs in again with a recovery code: their e-mail and app."""
    org = live.new_org()
    email = f"careful-{width}-{org.organization_id}@example.com"
    await set_password_and_log_in(page, live, org.organization_id, email, MemberRole.OWNER)
    await page.get_by_role("link", name=f"{email} · owner").click()
    await page.get_by_role("link", name="Set up a second factor").focus()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Your second factor")).to_be_visible()
    await _type_into(page, "Your password", "not my password")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("alert")).to_contain_text("Wrong password or code")
    await _type_into(page, "Your password", PASSWORD)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("img", name="QR code of your second factor's secret")).to_be_visible()
    totp = pyotp.TOTP((await page.locator("#totp-secret").inner_text()).strip())
    await fits(page)
    await assert_accessible(page, axe_source, f"the second factor's set-up ({width})")
    await shot(page, f"dashboard-second-factor-setup-{width}")
    await _type_into(page, "The code your app shows", totp.now())
    await page.keyboard.press("Enter")

    await expect(page.get_by_role("heading", name="Save them now: they are shown this once")).to_be_visible()
    codes = [c.strip() for c in await page.locator("#recovery-codes code").all_inner_texts()]
    assert len(set(codes)) == 10
    copy = page.get_by_role("button", name="Copy the codes")
    await expect(page.get_by_role("button", name="Print the codes")).to_be_visible()
    await copy.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#copied")).to_have_text(re.compile(r"^(Copied|Selected): "))

    await fits(page)
    await assert_accessible(page, axe_source, f"the recovery codes ({width})")
    await shot(page, f"dashboard-recovery-codes-{width}")
    await page.goto(f"{live.url}/dashboard/account/second-factor")  # never shown again
    await expect(page.locator("#codes-left")).to_contain_text("10 of 10 recovery codes left")
    await expect(page.locator("#recovery-codes")).to_have_count(0)

    await page.goto(f"{live.url}/dashboard/account")
    await page.get_by_role("button", name="Log out").click()
    await log_in_by_keyboard(page, email)
    await expect(page.get_by_role("heading", name="Your code")).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, f"the login's code page ({width})")
    if width == "phone":
        await shot(page, "dashboard-code-phone")
    await _type_into(page, "Recovery code", codes[0].lower())
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("status")).to_contain_text("You logged in with a recovery code")
    await expect(page.locator("#codes-left")).to_contain_text("9 of 10 recovery codes left")
    await fits(page)
    await assert_accessible(page, axe_source, f"the second factor's page after a recovery code ({width})")
    await shot(page, f"dashboard-second-factor-{width}")
    return email, totp


async def test_a_member_sets_up_the_factor_and_logs_in_with_a_recovery_code_on_a_desktop(
    live: LiveStack, browser_page: Page, axe_source: str
) -> None:
    page = browser_page
    email, totp = await _set_up_and_recover(page, live, axe_source, "desktop")

    # the owner requires a second factor of every member, with their password and a code
    await page.get_by_role("link", name="Settings", exact=True).click()
    await expect(page.get_by_role("heading", name="Second factor for every member")).to_be_visible()
    member = member_store.member_signing_in(live.engine, email)
    assert member is not None
    await _type_into(page, "Your password", PASSWORD)
    await _type_into(page, "A current code, or a recovery code", fresh_code(live.engine, member.id, totp))
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("status")).to_contain_text("From now on every member needs a second factor")
    await expect(page.locator("#require-state")).to_contain_text("Required")
    await fits(page)
    await assert_accessible(page, axe_source, "the settings page with the requirement")
    await shot(page, "dashboard-settings-desktop")


async def test_a_member_sets_up_the_factor_and_logs_in_with_a_recovery_code_on_a_phone(
    live: LiveStack, phone_page: Page, axe_source: str
) -> None:
    await _set_up_and_recover(phone_page, live, axe_source, "phone")
