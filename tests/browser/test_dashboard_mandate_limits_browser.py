"""A mandate's use limits on its dashboard page in Debian's Chromium (issue 31): a mandate whose
action has a monthly budget and a daily rate, with the request's maxExecutions, issued by the
services the request workflow calls and used over the live API (two allowed payments, one refused
for want of room); a support member reads the executions left, each limit's use and the history,
on the desktop and on a phone, by keyboard. Each page is accessible and fits. Screenshots:
``docs/screenshots/dashboard-mandate-limits-desktop.png`` and ``-phone.png``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from playwright.async_api import Page, expect

from core.actors import TEMPORAL
from core.ids import urn
from core.kinds import MemberRole
from services import mandates
from store import actions
from store import requests as store
from store.db import utcnow
from tests.support.a11y import assert_accessible
from tests.support.api_client import Credentials
from tests.support.dashboard_browser import fits, live_context, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack
from tests.support.mandates import PAY_WITH_LIMITS as PAY
from tests.support.presentations import presented, verify


def limited_mandate(live: LiveStack, org_id: str) -> tuple[str, str]:
    """An issued mandate of the PAY action with a 300 EUR monthly budget and maxExecutions 5, as
    the request workflow issues it on acceptance: (credential id, mandate id)."""
    engine = live.engine
    version = actions.install_published(engine, org_id, PAY)
    where = "credentials.0.action"
    pin, problems = actions.pin_for_request(
        engine, org_id, version.action_id, {"monthlyLimit": 300}, where=where
    )
    assert pin is not None, problems
    bounds, problems = actions.bounds_for_pin(engine, pin, where=where)
    assert bounds is not None, problems
    new = store.NewRequest(
        security_level="CONTACT",
        contacts=[store.NewContact("ana@example.com", "email")],
        credentials=[
            store.NewCredential(
                "POLICY", "Invoices", scope="invoices", action=pin, max_executions=5, limits=bounds
            )
        ],
        name="Pay the invoices",
    )
    bundle = store.create_request(engine, org_id, new, timedelta(days=30), 10_000, None, None)
    assert isinstance(bundle, store.RequestBundle)
    subject, cred = bundle.subjects[0][1], bundle.credentials[0]
    decided = (True, "email", "hosted", utcnow(), True)
    store.record_decision(engine, urn("decision"), bundle.request.id, cred.id, subject.id, *decided)
    cipher = live_context(live).cipher
    done = mandates.issue(engine, cipher, live.settings, cred.id, actor=TEMPORAL)
    return cred.id, done.mandate_id


async def used(live: LiveStack, org: Credentials, mandate_id: str) -> list[dict[str, Any]]:
    """Two payments allowed and one refused for want of room, over the live API."""
    answers = []
    for amount in (120, 80.5, 150):
        vp = (await presented(live.api(org), mandate_id))["presentation"]
        answers.append((await verify(live.api(org), vp, {"amount": amount})).json())
    assert [a["decision"] for a in answers] == ["allow", "allow", "deny"], answers
    return answers


async def test_a_mandates_use_limits_on_the_desktop_and_a_phone(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    _, mandate_id = limited_mandate(live, org.organization_id)
    await used(live, org, mandate_id)
    for page, name in ((browser_page, "desktop"), (phone_page, "phone")):
        email = f"support-{name}-{org.organization_id}@example.com"
        await set_password_and_log_in(page, live, org.organization_id, email, MemberRole.SUPPORT)
        await page.goto(f"{live.url}/dashboard/mandates")
        link = page.get_by_role("link", name="Invoices", exact=True)
        await link.focus()
        await page.keyboard.press("Enter")  # by keyboard from the list
        await expect(page.get_by_role("heading", name="Invoices", level=1)).to_be_visible()
        section = page.get_by_role("region", name="Use limits")
        await expect(section.locator(".remaining")).to_have_text("3 executions remaining")
        monthly = section.get_by_role("row").filter(has_text="Card payments")
        await expect(monthly).to_contain_text("200.5 EUR / 300 EUR")
        await expect(monthly).to_contain_text("99.5 EUR")
        await expect(section.get_by_role("row").filter(has_text="maxExecutions")).to_contain_text("2 / 5")
        history = section.locator("table.history tbody tr")
        await expect(history).to_have_count(3)
        await expect(history.nth(0)).to_contain_text("denied limit_exceeded: no room under monthly")
        await expect(history.nth(0)).to_contain_text("150 EUR (not counted)")
        await expect(history.nth(2)).to_contain_text("120 EUR")
        await fits(page)
        await assert_accessible(page, axe_source, f"a mandate's use limits ({name})")
        await section.scroll_into_view_if_needed()
        await shot(page, f"dashboard-mandate-limits-{name}")
