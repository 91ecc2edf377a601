"""The operators' area in Debian's Chromium: an operator logs in, sets up the second factor operators
must have, lands in the operators' area,
types the subject's e-mail as a complaint spells it, opens the request's timeline (its code sent,
its workflow in the Temporal UI) and sends a fresh code with a reason, by keyboard; at desktop and
phone width, accessible, with screenshots."""

from __future__ import annotations

import uuid

import pyotp
from playwright.async_api import Page, expect

from core.actors import Actor
from services import operators
from tests.support.a11y import assert_accessible
from tests.support.api_client import policy_request
from tests.support.audit import chain
from tests.support.dashboard import PASSWORD
from tests.support.dashboard_browser import fits, live_context, log_in_by_keyboard, shot
from tests.support.live_stack import LiveStack


async def _operator_logged_in(page: Page, live: LiveStack, name: str, axe_source: str) -> str:
    email = f"{name}-{uuid.uuid4().hex[:8]}@ops.example.com"
    made = operators.create(live_context(live), Actor.shell_operator("tests"), email)
    await page.goto(made.link)
    await page.get_by_label("New password").fill(PASSWORD)
    await page.get_by_label("The same password again").fill(PASSWORD)
    await page.get_by_role("button", name="Save the password").click()
    await log_in_by_keyboard(page, email)
    # operators set up a second factor before the operators' area opens
    await expect(page.locator("#enrol-first")).to_contain_text("Operators need a second factor")
    await expect(page.get_by_role("link", name="Search")).to_have_count(0)  # nothing else is offered
    await fits(page)
    await assert_accessible(
        page, axe_source, f"the second factor's set-up, before the operators' area ({name})"
    )
    await shot(page, "operators-second-factor-" + ("desktop" if name == "desk" else name))
    await page.get_by_label("Your password").fill(PASSWORD)
    await page.keyboard.press("Enter")
    secret = (await page.locator("#totp-secret").inner_text()).strip()
    await page.get_by_label("The code your app shows").fill(pyotp.TOTP(secret).now())
    await page.keyboard.press("Enter")
    await expect(page.locator("#recovery-codes li")).to_have_count(10)
    await page.get_by_role("link", name="I have saved them: continue").click()
    await expect(page.get_by_role("heading", name="Find a request")).to_be_visible()
    return made.member.id


async def test_operators_find_a_request_by_a_contact_and_act_on_its_timeline(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    contact = f"fred-{uuid.uuid4().hex[:6]}@example.com"
    created = await live.api(org).post(
        "/request", policy_request(contacts=[contact], internalId="order-7", name="Lease for Fred")
    )
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    page = browser_page
    operator_id = await _operator_logged_in(page, live, "desk", axe_source)
    await page.get_by_label("Request id, internalId, mandate URN").fill(f"  {contact.upper()} ")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="1 request found")).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the operators' search")
    await shot(page, "operators-search-desktop")

    await page.get_by_role("link", name="Lease for Fred").click()
    await expect(page.get_by_role("heading", name=f"Request {request_id}")).to_be_visible()
    await expect(page.locator("#timeline")).to_contain_text(f"Code 1 sent to subject 1 ({contact}) by email")
    workflow = page.get_by_role("link", name="open in the Temporal UI")
    assert f"credential-request%3A{request_id}" in (await workflow.get_attribute("href") or "")
    await page.get_by_label("Reason to cancel the request").fill("ticket 7: the customer asked")
    await page.get_by_role("button", name="Cancel the request").focus()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("status")).to_contain_text("The request is canceled")
    await expect(page.locator("#request-status")).to_have_text("CANCELED")
    await expect(page.locator("#timeline")).to_contain_text("Audit: MANDATE_CANCELED")
    await fits(page)
    await assert_accessible(page, axe_source, "a request's timeline")
    await shot(page, "operators-timeline-desktop")
    [record] = [
        r
        for r in chain(live.engine, org.organization_id)
        if r.type == "MANDATE_CANCELED" and r.request_id == request_id
    ]
    assert (record.actor, record.data.get("reason")) == (
        f"staff:{operator_id}",
        "ticket 7: the customer asked",
    )

    await _operator_logged_in(phone_page, live, "phone", axe_source)
    await phone_page.goto(f"{live.url}/dashboard/operators/requests/{request_id}")
    await expect(phone_page.locator("#timeline")).to_contain_text("Audit: MANDATE_CANCELED")
    await fits(phone_page)
    await assert_accessible(phone_page, axe_source, "a request's timeline on a phone")
    await shot(phone_page, "operators-timeline-phone")
