"""Support's retry of a FAILED issuance on a request's page (issue 32), in Debian's Chromium: the
Retry block shows under the FAILED credential, a support member gives a reason and issues it again
by keyboard; accessible, fits a phone, with a screenshot (docs/screenshots/request-retry.png)."""

from __future__ import annotations

from playwright.async_api import Page, expect

from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit
from tests.support.a11y import assert_accessible
from tests.support.audit import chain
from tests.support.dashboard_browser import fits, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack
from tests.support.retries import failed_credential, repair
from tests.support.workflow import activities_with, db_request, fresh_queue, running_worker


async def test_a_support_member_issues_a_failed_credential_again(
    live: LiveStack,
    browser_page: Page,
    phone_page: Page,
    axe_source: str,
    settings: Settings,
    cipher: SecretCipher,
) -> None:
    org = live.new_org()
    queue = fresh_queue()  # the request's own workflow, on a worker with the test outbox
    async with running_worker(live.temporal, queue, activities_with(live.engine, settings)):
        request_id, cred = await failed_credential(live.temporal, queue, live.engine, org.organization_id)
    page = browser_page
    email = f"retry-support-{org.organization_id}@example.com"
    await set_password_and_log_in(page, live, org.organization_id, email, MemberRole.SUPPORT)
    await page.goto(f"{live.url}/dashboard/requests/{request_id}")
    await expect(page.get_by_role("heading", name="Retry")).to_be_visible()
    await expect(page.get_by_role("cell", name="FAILED", exact=True)).to_be_visible()
    reason = page.get_by_label("Reason (recorded in the audit trail)")
    await reason.fill("The amount was fixed by hand")
    await fits(page)
    await assert_accessible(page, axe_source, "a request with a FAILED credential to issue again")
    await page.get_by_role("heading", name="Retry").scroll_into_view_if_needed()
    await shot(page, "request-retry")
    phone_email = f"phone-{email}"
    await set_password_and_log_in(phone_page, live, org.organization_id, phone_email, MemberRole.OWNER)
    await phone_page.goto(f"{live.url}/dashboard/requests/{request_id}")
    await expect(phone_page.get_by_role("button", name="Issue again Rent payments")).to_be_visible()
    await fits(phone_page)
    await assert_accessible(phone_page, axe_source, "the retry on a phone")

    repair(live.engine, cred)
    await reason.focus()
    await page.keyboard.press("Enter")  # the form is sent from the keyboard
    await expect(page.get_by_role("status")).to_contain_text("The credential is issued", timeout=30_000)
    await expect(page.get_by_role("heading", name="Retry")).to_have_count(0)
    [stored] = db_request(live.engine, org.organization_id, request_id).credentials
    assert stored.status == "ACTIVE" and stored.mandate_id is not None
    await expect(page.get_by_role("status")).to_contain_text(stored.mandate_id)
    await assert_accessible(page, axe_source, "a request whose credential was issued again")
    [record] = [
        r for r in chain(live.engine, org.organization_id) if r.type == audit.MANDATE_ISSUANCE_RETRIED
    ]
    assert record.actor is not None and record.actor.startswith("member:")
    assert record.data["reason"] == "The amount was fixed by hand"

    # on a phone too, with the mandate's id now in the table
    await phone_page.reload()
    await expect(phone_page.get_by_role("heading", name="Retry")).to_have_count(0)
    await fits(phone_page)
