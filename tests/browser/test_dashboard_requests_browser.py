"""Requests in the dashboard, in Debian's Chromium: a support member finds a request by its
internal id, reads its subject's progress, is told when a fresh code can be sent, shows the
subject's link and cancels the request, by keyboard where a person would; at desktop and phone
width, accessible, with screenshots. A fresh code asked for within CONTRACT 4's minute is refused
with how long to wait (its sending once the minute has passed is tested over HTTP on the
time-skipping server, ``tests/api/dashboard/test_requests.py``, rather than waited here in real
time), and each of the support member's actions is an audit record naming them."""

from __future__ import annotations

import re
import uuid

from playwright.async_api import Page, expect

from core.kinds import MemberRole
from tests.support.a11y import assert_accessible
from tests.support.api_client import policy_request
from tests.support.audit import chain
from tests.support.dashboard_browser import fits, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack


async def _request(live: LiveStack, org: object, internal_id: str) -> str:
    created = await live.api(org).post(  # type: ignore[arg-type]
        "/request", policy_request(contacts=["ana@example.com"], internalId=internal_id, name="Lease for Ana")
    )
    assert created.status_code == 201, created.text
    request_id: str = created.json()["data"]["id"]
    return request_id


async def test_a_support_member_finds_a_request_shows_the_link_and_cancels_it(
    live: LiveStack, browser_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    internal_id = f"order-{uuid.uuid4().hex[:8]}"
    request_id = await _request(live, org, internal_id)
    await _request(live, org, "another-order")
    page = browser_page
    email = f"support-{org.organization_id}@example.com"
    await set_password_and_log_in(page, live, org.organization_id, email, MemberRole.SUPPORT)
    await expect(page.get_by_role("link", name="API keys", exact=True)).to_have_count(0)  # not for support

    await page.get_by_role("link", name="Requests", exact=True).click()
    await expect(page.get_by_role("heading", name="2 requests")).to_be_visible()
    await page.get_by_label("Your request id (internalId)").fill(internal_id)
    await page.keyboard.press("Enter")  # the filter form is sent from the keyboard
    await expect(page.get_by_role("heading", name="1 request", exact=True)).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "the requests list")
    await shot(page, "dashboard-requests-desktop")

    await page.get_by_role("link", name="Lease for Ana").click()
    await expect(page.get_by_role("heading", name=f"Request {request_id}")).to_be_visible()
    await expect(page.get_by_text("1 sent by email")).to_be_visible(timeout=20_000)
    await page.get_by_role("button", name="Send a new code to ana@example.com").click()
    await expect(page.get_by_role("alert")).to_contain_text("A new code can be sent in")
    wait = re.search(r"can be sent in (\d+) seconds", await page.get_by_role("alert").inner_text())
    assert wait is not None and 1 <= int(wait.group(1)) <= 60
    await page.get_by_role("button", name="Show the link of ana@example.com").click()
    link = (await page.locator("#subject-link").inner_text()).strip()
    assert link.startswith(f"{live.url}/r/")
    await assert_accessible(page, axe_source, "a request with its subject's link")
    await fits(page)
    await shot(page, "dashboard-request-desktop")

    await page.get_by_role("checkbox", name="canceling is final").check()
    await page.get_by_role("button", name="Cancel the request").focus()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("status")).to_contain_text("The request is canceled")
    await expect(page.locator("#request-status")).to_have_text("CANCELED")
    await expect(page.get_by_role("table").last).to_contain_text("MANDATE_CANCELED")
    await expect(page.get_by_role("button", name="Cancel the request")).to_have_count(0)
    by_member = [
        (r.type, r.actor) for r in chain(live.engine, org.organization_id) if r.request_id == request_id
    ]
    member = [r.actor for r in chain(live.engine, org.organization_id) if r.type == "MEMBER_INVITED"][-1]
    assert member == "operator:tests"  # the test invited the member; what they did names them:
    support = [a for t, a in by_member if t == "SUBJECT_LINK_SHOWN"]
    assert len(support) == 1 and support[0] is not None and support[0].startswith("member:")
    assert [t for t, a in by_member if a == support[0]] == ["SUBJECT_LINK_SHOWN", "MANDATE_CANCELED"]


async def test_a_request_fits_a_phone(live: LiveStack, phone_page: Page, axe_source: str) -> None:
    org = live.new_org()
    request_id = await _request(live, org, "phone-order")
    page = phone_page
    email = f"phone-support-{org.organization_id}@example.com"
    await set_password_and_log_in(page, live, org.organization_id, email, MemberRole.SUPPORT)
    await page.goto(f"{live.url}/dashboard/requests")
    await fits(page)
    await assert_accessible(page, axe_source, "the requests list on a phone")
    await shot(page, "dashboard-requests-phone")
    await page.goto(f"{live.url}/dashboard/requests/{request_id}")
    await expect(page.get_by_text("1 sent by email")).to_be_visible(timeout=20_000)
    await fits(page)
    await assert_accessible(page, axe_source, "a request on a phone")
    await shot(page, "dashboard-request-phone")
