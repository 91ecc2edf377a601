"""A webhook event's page in Debian's Chromium (issue 34): the payload, the next try and each
attempt's answer (headers and the start of the body, folded), accessible and within the viewport
at desktop and phone width, with screenshots."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from playwright.async_api import Page, expect
from sqlalchemy import update
from sqlmodel import col

from core.actors import Actor
from core.kinds import MemberRole
from services import webhooks
from store.db import utcnow, write_session
from store.tables import WebhookAttempt, WebhookEvent
from tests.support.a11y import assert_accessible
from tests.support.dashboard_browser import fits, live_context, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack


def _event_with_an_answer(live: LiveStack, org_id: str) -> str:
    """A pending test event of the organization's endpoint, one answer recorded and a retry due."""
    endpoint = webhooks.add_endpoint(
        live_context(live), Actor.shell_operator("tests"), org_id, "https://hooks.example.com/mandatum"
    )
    event_id = f"urn:via:event:{uuid.uuid4()}"
    now = utcnow()
    with write_session(live.engine) as session:
        session.add(
            WebhookEvent(
                id=event_id,
                organization_id=org_id,
                fact_key=f"test:{event_id}",
                event_type="test",
                endpoint_id=endpoint.endpoint_id,
                payload={"id": event_id, "eventType": "test", "message": "Hello from Mandatum"},
                created_at=now - timedelta(minutes=1),
                state="pending",
                attempts=1,
                last_status=503,
                last_error="HTTP 503",
                next_attempt_at=datetime(2030, 1, 2, 3, 4, tzinfo=UTC),
            )
        )
        session.flush()
        session.add(
            WebhookAttempt(
                event_id=event_id,
                number=1,
                scheduled_at=now - timedelta(seconds=50),
                finished_at=now - timedelta(seconds=49),
                status_code=503,
                error="HTTP 503",
                url="https://hooks.example.com/mandatum",
                duration_ms=87,
                response_headers=[["content-type", "text/plain"], ["retry-after", "30"]],
                response_body="Service unavailable: the queue is full, try again later. " * 4,
            )
        )
    return event_id


async def test_the_event_page_shows_the_payload_and_the_answers(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    event_id = _event_with_an_answer(live, org.organization_id)
    for page, width in ((browser_page, "desktop"), (phone_page, "phone")):
        await set_password_and_log_in(
            page,
            live,
            org.organization_id,
            f"events-{width}-{org.organization_id}@example.com",
            MemberRole.SUPPORT,
        )
        await page.goto(f"{live.url}/dashboard/events/{event_id}")
        await expect(page.locator("#payload")).to_contain_text('"message": "Hello from Mandatum"')
        await expect(page.locator("#next-attempt")).to_have_text("2030-01-02 03:04 UTC")
        await expect(page.locator("#event-endpoint")).to_have_text("https://hooks.example.com/mandatum")
        await page.get_by_text("Headers and body").click()  # the folded answer, opened
        await expect(page.get_by_role("region", name="Attempts")).to_contain_text("retry-after: 30")
        await fits(page)
        await assert_accessible(page, axe_source, f"a webhook event's page ({width})")
        await shot(page, f"dashboard-event-{width}")


async def test_an_unknown_dashboard_address_is_the_dashboards_own_page(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    """Issue 34: a mistyped address reads as a page of the dashboard, with the way back, not as
    the API's JSON; the tab has the service's icon."""
    org = live.new_org()
    for page, width in ((browser_page, "desktop"), (phone_page, "phone")):
        await set_password_and_log_in(
            page,
            live,
            org.organization_id,
            f"lost-{width}-{org.organization_id}@example.com",
            MemberRole.OWNER,
        )
        answer = await page.goto(f"{live.url}/dashboard/no-such-page")
        assert answer is not None and answer.status == 404
        await expect(page.get_by_role("heading", name="Not found")).to_be_visible()
        await expect(page.get_by_role("link", name="Back to the dashboard")).to_be_visible()
        await fits(page)
        await assert_accessible(page, axe_source, f"the dashboard's 404 page ({width})")
        await shot(page, f"dashboard-404-{width}")
    icon = await browser_page.request.get(f"{live.url}/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/vnd.microsoft.icon"


async def test_a_pending_delivery_updates_on_the_page_by_itself(
    live: LiveStack, browser_page: Page, axe_source: str
) -> None:
    """Issue 34: while an event's delivery is under way its page follows it without the member
    reloading (no external script, the CSP unchanged); the box turns that off."""
    org = live.new_org()
    event_id = _event_with_an_answer(live, org.organization_id)  # pending, a retry due
    page = browser_page
    await set_password_and_log_in(
        page, live, org.organization_id, f"follow-{org.organization_id}@example.com", MemberRole.SUPPORT
    )
    answer = await page.goto(f"{live.url}/dashboard/events/{event_id}")
    assert answer is not None and "connect-src" not in answer.headers["content-security-policy"]
    await expect(page.locator("#event-state")).to_have_text("pending")
    await expect(
        page.get_by_label("update this page every 5 seconds while the delivery is under way")
    ).to_be_checked()
    await assert_accessible(page, axe_source, "a pending event's page that follows its delivery")
    with write_session(live.engine) as session:  # the retry went through meanwhile
        session.execute(
            update(WebhookEvent)
            .where(col(WebhookEvent.id) == event_id)
            .values(state="delivered", next_attempt_at=None, delivered_at=utcnow())
        )
    await expect(page.locator("#event-state")).to_have_text("delivered", timeout=15_000)
    await expect(page.locator("#follow")).to_have_count(0)  # nothing left to follow
