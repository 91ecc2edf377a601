"""Members in Debian's Chromium: an owner (at a desk) invites a developer by e-mail; the invitation
arrives at a real SMTP server; the developer (on a phone) sets a password from it, turns on the
second factor with their password and an authenticator's code, and logs in again with password
and code (the factor's pages themselves: tests/browser/test_second_factor_browser.py); the owner
sees the factor on, makes the developer support and ends their sessions, and the audit trail names
the owner for each. Accessible, fitting the width, with screenshots."""

from __future__ import annotations

import re
from datetime import timedelta

import pyotp
from playwright.async_api import Page, expect

from core.kinds import MemberRole
from store import audit
from store.db import utcnow
from tests.support.a11y import assert_accessible
from tests.support.audit import chain
from tests.support.dashboard import PASSWORD
from tests.support.dashboard_browser import fits, log_in_by_keyboard, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack
from tests.support.smtp_server import text_of

LINK_RE = re.compile(r"https?://\S+/dashboard/set-password/[A-Za-z0-9_-]+")


async def test_an_owner_invites_a_member_who_turns_on_the_second_factor_then_is_changed_and_logged_out(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    owner, phone = browser_page, phone_page
    owner_email = f"owner-{org.organization_id}@example.com"
    dev_email = f"dev-{org.organization_id}@example.com"
    await set_password_and_log_in(owner, live, org.organization_id, owner_email, MemberRole.OWNER)

    await owner.get_by_role("link", name="Members", exact=True).click()
    await expect(owner.get_by_role("heading", name="Members")).to_be_visible()
    await owner.get_by_label("E-mail").fill(dev_email)
    await owner.get_by_label("Role", exact=True).select_option("developer")
    await owner.get_by_role("button", name="Send the invitation").click()
    await expect(owner.get_by_role("status")).to_contain_text("The invitation is on its way.")
    row = owner.get_by_role("row").filter(has_text=dev_email)
    await expect(row).to_contain_text("invited")

    message = await live.smtp.wait_for(dev_email, timeout=20)
    assert message["Subject"] == "Your invitation to the Mandatum dashboard"
    link = LINK_RE.search(text_of(message))
    assert link is not None
    await expect(owner.get_by_text(link.group(0).rsplit("/", 1)[1])).to_have_count(0)

    # the developer, on a phone: a password from the e-mail, then the second factor
    await phone.goto(link.group(0))
    await phone.get_by_label("New password").fill(PASSWORD)
    await phone.get_by_label("The same password again").fill(PASSWORD)
    await phone.get_by_role("button", name="Save the password").click()
    await log_in_by_keyboard(phone, dev_email)
    await expect(phone.get_by_role("heading", name="Overview")).to_be_visible()
    await phone.get_by_role("link", name=f"{dev_email} · developer").click()
    await expect(phone.get_by_role("heading", name="Your account")).to_be_visible()
    await fits(phone)
    await assert_accessible(phone, axe_source, "the account page")
    await shot(phone, "dashboard-account-phone")
    await phone.get_by_role("link", name="Set up a second factor").click()
    await phone.get_by_label("Your password").fill(PASSWORD)
    await phone.get_by_role("button", name="Set up a second factor").click()
    await expect(phone.get_by_role("img", name="QR code of your second factor's secret")).to_be_visible()
    secret = (await phone.locator("#totp-secret").inner_text()).strip()
    totp = pyotp.TOTP(secret)
    await phone.get_by_label("The code your app shows").fill("000000")
    await phone.get_by_role("button", name="Turn on the second factor").click()
    await expect(phone.get_by_role("alert")).to_contain_text("not right")
    await phone.get_by_label("The code your app shows").fill(totp.now())
    await phone.get_by_role("button", name="Turn on the second factor").click()
    await expect(phone.get_by_role("status")).to_contain_text("The second factor is on")
    await phone.get_by_role("link", name="I have saved them: continue").click()

    await phone.get_by_role("button", name="Log out").click()
    await log_in_by_keyboard(phone, dev_email)
    await expect(phone.get_by_role("heading", name="Your code")).to_be_visible()
    await fits(phone)
    await assert_accessible(phone, axe_source, "the login code page")
    await phone.get_by_label("Code", exact=True).fill(
        totp.at(utcnow() + timedelta(seconds=30))
    )  # the step after
    await phone.keyboard.press("Enter")
    await expect(phone.get_by_role("heading", name="Overview")).to_be_visible()

    # the owner sees the factor on, makes the developer support, and ends their sessions
    await owner.reload()
    row = owner.get_by_role("row").filter(has_text=dev_email)
    await expect(row.get_by_role("cell", name="on", exact=True)).to_be_visible()
    await expect(row.get_by_role("cell", name="1", exact=True)).to_be_visible()  # one open session
    await row.get_by_label(f"Role of {dev_email}", exact=True).select_option("support")
    await row.get_by_role("button", name=f"Save the role of {dev_email}").click()
    await expect(owner.get_by_role("status")).to_contain_text("The role is changed.")
    await phone.reload()
    await expect(phone.get_by_role("link", name="API keys", exact=True)).to_have_count(0)  # support now
    await fits(owner)
    await assert_accessible(owner, axe_source, "the members page")
    await shot(owner, "dashboard-members-desktop")
    await owner.get_by_role("link", name=f"Turn off the second factor of {dev_email}").click()
    await expect(owner.get_by_role("heading", name="Turn off a member's second factor")).to_be_visible()
    await expect(owner.get_by_label("Your password")).to_be_visible()  # the owner's own, to do it
    await fits(owner)
    await assert_accessible(owner, axe_source, "turning off a member's second factor")
    await shot(owner, "dashboard-member-factor-off-desktop")
    await owner.get_by_role("link", name="Back to the members").click()
    await (
        owner.get_by_role("row")
        .filter(has_text=dev_email)
        .get_by_role("button", name=f"End sessions of {dev_email}")
        .click()
    )
    await expect(owner.get_by_role("status")).to_contain_text("The member's sessions are ended.")
    await phone.reload()
    await expect(phone.get_by_role("heading", name="Log in")).to_be_visible()

    owner_id = [r for r in chain(live.engine, org.organization_id) if r.type == audit.MEMBER_INVITED][
        -1
    ].actor
    kinds = {
        r.type: r.actor
        for r in chain(live.engine, org.organization_id)
        if r.type.startswith("MEMBER_") and r.data.get("email") == dev_email
    }
    assert kinds[audit.MEMBER_INVITED] == owner_id and owner_id is not None and owner_id.startswith("member:")
    assert kinds[audit.MEMBER_ROLE_CHANGED] == owner_id == kinds[audit.MEMBER_SESSIONS_ENDED]
    assert kinds[audit.MEMBER_SECOND_FACTOR_ON] != owner_id  # the developer turned it on


async def test_the_members_and_account_pages_fit_a_phone(
    live: LiveStack, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    email = f"owner-{org.organization_id}@example.com"
    page = phone_page
    await set_password_and_log_in(page, live, org.organization_id, email, MemberRole.OWNER)
    await page.goto(f"{live.url}/dashboard/members")
    await page.get_by_label("E-mail").fill(f"support-{org.organization_id}@example.com")
    await page.get_by_role("button", name="Send the invitation").click()
    await expect(page.get_by_role("status")).to_contain_text("The invitation is on its way.")
    await fits(page)
    await assert_accessible(page, axe_source, "the members page on a phone")
    await shot(page, "dashboard-members-phone")
    await page.goto(f"{live.url}/dashboard/account")
    await expect(page.get_by_role("cell", name="this one")).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the account page on a phone")
