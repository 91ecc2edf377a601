"""The activity page in Debian's Chromium (issue 34): records with who did them by name (a key
by its name, a member by e-mail, a subject by a masked contact) and what each says in a details
column, a change as its value before and after (a member's role: ``support → owner``); the CSV
download offered. Accessible and within the viewport at desktop and phone width, with
screenshots."""

from __future__ import annotations

from playwright.async_api import Page, expect

from core.actors import Actor
from core.kinds import MemberRole
from store import members
from store.db import utcnow
from store.request_records import record_link_shown
from tests.support.a11y import assert_accessible
from tests.support.api_client import policy_request
from tests.support.dashboard_browser import fits, set_password_and_log_in, shot
from tests.support.live_stack import LiveStack


async def test_the_activity_page_names_who_did_what(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    created = await live.api(org).post("/request", policy_request(contacts=["zoe@example.com"], name="Lease"))
    assert created.status_code == 201, created.text
    request = created.json()["data"]
    subject_id = request["subjects"][0]["id"].rsplit(":", 1)[1]
    record_link_shown(
        live.engine, org.organization_id, request["id"], subject_id, str(Actor.subject(subject_id))
    )
    desk = str(Actor.shell_operator("desk"))
    promoted = members.add_member(
        live.engine, org.organization_id, "lea@example.com", MemberRole.SUPPORT, utcnow(), actor=desk
    )
    members.change_role(live.engine, org.organization_id, promoted.id, MemberRole.OWNER, actor=desk)
    for page, width in ((browser_page, "desktop"), (phone_page, "phone")):
        await set_password_and_log_in(
            page,
            live,
            org.organization_id,
            f"activity-{width}-{org.organization_id}@example.com",
            MemberRole.OWNER,
        )
        await page.get_by_role("link", name="Activity", exact=True).click()
        await expect(page.get_by_role("heading", name="Activity", exact=True)).to_be_visible()
        records = page.get_by_role("region", name="Records")
        await expect(records).to_contain_text("subject z•••@example.com")
        await expect(records).not_to_contain_text("zoe@example.com")
        await expect(records).to_contain_text("REQUEST_CREATED")
        await expect(records).to_contain_text("API key mdt_")  # the unnamed key, by its prefix
        role = records.get_by_role("row").filter(has_text="MEMBER_ROLE_CHANGED")
        await expect(role).to_contain_text("role support → owner")  # before → after, not two blobs
        await expect(role).not_to_contain_text("previous {")
        await expect(page.get_by_role("link", name="Download these as CSV")).to_be_visible()
        await fits(page)
        await assert_accessible(page, axe_source, f"the activity page ({width})")
        await shot(page, f"dashboard-activity-{width}")
