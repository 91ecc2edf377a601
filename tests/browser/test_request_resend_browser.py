"""Sending a canceled request again from its page (issue 32), in Debian's Chromium: a support
member gives a reason and sends it by keyboard, lands on the new request, which names the first,
and back on the first, which names the new one; accessible and within the viewport at desktop and
phone width, with screenshots."""

from __future__ import annotations

from playwright.async_api import Page, expect

from core.kinds import MemberRole
from tests.support.a11y import assert_accessible
from tests.support.api_client import policy_request
from tests.support.dashboard_browser import fits, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack


async def test_a_support_member_sends_a_canceled_request_again(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    api = live.api(org)
    created = await api.post("/request", policy_request(contacts=["ana@example.com"], name="Lease"))
    assert created.status_code == 201, created.text
    old = created.json()["data"]["id"]
    assert (await api.delete(f"/request/{old}")).status_code == 200
    await set_password_and_log_in(
        phone_page,
        live,
        org.organization_id,
        f"phone-again-{org.organization_id}@example.com",
        MemberRole.OWNER,
    )
    await phone_page.goto(f"{live.url}/dashboard/requests/{old}")
    await expect(phone_page.get_by_role("button", name="Send it again")).to_be_visible()
    await fits(phone_page)
    await assert_accessible(phone_page, axe_source, "a canceled request to send again, on a phone")
    await phone_page.get_by_role("button", name="Send it again").scroll_into_view_if_needed()
    await shot(phone_page, "request-send-again-phone")

    page = browser_page
    await set_password_and_log_in(
        page, live, org.organization_id, f"again-{org.organization_id}@example.com", MemberRole.SUPPORT
    )
    await page.goto(f"{live.url}/dashboard/requests/{old}")
    reason = page.get_by_label("Reason (kept in the audit trail)")
    await reason.fill("The subject asked for a new link")
    await reason.press("Enter")  # sent from the keyboard
    await expect(page.get_by_role("status")).to_contain_text("This is the request sent again")
    await expect(page.get_by_text("Sent again from")).to_be_visible()
    await expect(page.locator("#request-status")).to_have_text("PENDING")
    new = page.url.split("/dashboard/requests/", 1)[1].split("?")[0]
    assert new != old
    await fits(page)
    await assert_accessible(page, axe_source, "the request sent again")
    await shot(page, "request-sent-again")
    await page.get_by_role("link", name=old).click()
    await expect(page.locator("#resent-as")).to_have_text(new)
    await expect(page.get_by_role("button", name="Send it again")).to_have_count(0)
