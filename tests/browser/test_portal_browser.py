"""The subject's portal in Debian's Chromium (issue 32): a person whose contact two organizations
issued mandates to signs in with the code from their mailbox, reads the list and a mandate's page
(its limits' use and the verification an agent had made over the live API), and revokes it after
the confirmation; on a phone too. Each page is accessible and fits the desktop and a 390 px phone.
Screenshots go to ``docs/screenshots/portal-*.png``."""

from __future__ import annotations

import asyncio

from playwright.async_api import Page, expect
from sqlmodel import select

from core.kinds import CredentialStatus
from store.db import read_session
from store.tables import AuditRecord, Credential
from tests.support.a11y import assert_accessible
from tests.support.dashboard_browser import fits, live_context, shot
from tests.support.journey_messages import code_in
from tests.support.live_stack import LiveStack
from tests.support.portal import issued_to, new_contact
from tests.support.presentations import GOOD, presented, verify
from tests.support.smtp_server import text_of


async def sign_in(page: Page, live: LiveStack, contact: str) -> None:
    """From the portal's first page to the list, by the code the mailbox received."""
    await page.goto(f"{live.url}/portal")
    await expect(page.get_by_role("heading", name="See and revoke your mandates")).to_be_visible()
    before = len(live.smtp.received_for(contact))
    await page.get_by_label("E-mail address or phone number").fill(contact)
    await page.get_by_role("button", name="Send me a code").click()
    await expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()
    for _ in range(400):
        arrived = live.smtp.received_for(contact)
        if len(arrived) > before:
            break
        await asyncio.sleep(0.05)
    assert len(arrived) > before, "no portal code arrived"
    await page.get_by_label("Code", exact=True).fill(code_in(text_of(arrived[-1].message)))
    await page.get_by_role("button", name="Continue").click()
    await expect(page.get_by_role("heading", name="Your mandates", level=1)).to_be_visible()


async def test_a_person_signs_in_reads_and_revokes_a_mandate(
    live: LiveStack, browser_page: Page, phone_page: Page, axe_source: str
) -> None:
    ctx = live_context(live)
    first, second = live.new_org(), live.new_org()
    contact = new_contact("portal-browser")
    rent = issued_to(ctx, first.organization_id, contact, "Pay the rent", max_executions=12)
    issued_to(ctx, second.organization_id, contact, "Book travel")
    vp = (await presented(live.api(first), rent.mandate_id))["presentation"]
    assert (await verify(live.api(first), vp, GOOD)).status_code == 200

    page = browser_page
    await page.goto(f"{live.url}/portal")
    await fits(page)
    await assert_accessible(page, axe_source, "the portal's sign-in page")
    await shot(page, "portal-signin-desktop")
    await sign_in(page, live, contact)
    cards = page.locator("ul.mandates > li")
    await expect(cards).to_have_count(2)
    await expect(cards.filter(has_text="Pay the rent")).to_contain_text("Active")
    await fits(page)
    await assert_accessible(page, axe_source, "the portal's list")
    await shot(page, "portal-list-desktop")

    await page.get_by_role("link", name="Details of Pay the rent").click()
    await expect(page.get_by_role("heading", name="Pay the rent", level=1)).to_be_visible()
    checks = page.get_by_role("table")
    await expect(checks).to_contain_text("Allowed")
    await expect(checks).to_contain_text("did:web:")
    await expect(page.get_by_text("At most 12 uses: 1 used, 11 left")).to_be_visible()
    await fits(page)
    await assert_accessible(page, axe_source, "a mandate's page in the portal")
    await shot(page, "portal-mandate-desktop")

    await page.get_by_role("link", name="Revoke this mandate").click()
    await expect(page.get_by_role("heading", name="Revoke this mandate?")).to_be_visible()
    await assert_accessible(page, axe_source, "the revocation's confirmation")
    await shot(page, "portal-revoke-desktop")
    await page.get_by_role("button", name="Yes, revoke it").click()
    await expect(page.get_by_role("status")).to_contain_text("The mandate is revoked")
    await expect(page.locator("#status")).to_have_text("Revoked")
    await expect(page.get_by_role("link", name="Revoke this mandate")).to_have_count(0)
    with read_session(live.engine) as db:
        row = db.get(Credential, rent.credential_id)
        assert row is not None and row.status == CredentialStatus.REVOKED
        actors = db.exec(
            select(AuditRecord.actor).where(
                AuditRecord.organization_id == first.organization_id, AuditRecord.type == "MANDATE_REVOKED"
            )
        ).all()
        assert actors == [f"subject:{rent.subject_id}"]

    phone = phone_page
    await phone.goto(f"{live.url}/portal?lang=PRT")
    await expect(phone.get_by_role("heading", name="Veja e revogue os seus mandatos")).to_be_visible()
    await fits(phone)
    await shot(phone, "portal-signin-phone")
    await sign_in(phone, live, contact)
    await expect(phone.locator("ul.mandates > li").filter(has_text="Pay the rent")).to_contain_text("Revoked")
    await fits(phone)
    await assert_accessible(phone, axe_source, "the portal's list on a phone")
    await shot(phone, "portal-list-phone")
    await phone.get_by_role("link", name="Details of Book travel").click()
    await phone.get_by_role("link", name="Revoke this mandate").click()
    await expect(phone.get_by_role("button", name="Yes, revoke it")).to_be_visible()
    await fits(phone)
    await shot(phone, "portal-revoke-phone")
    await phone.get_by_role("link", name="No, keep it").click()
    await expect(phone.locator("#status")).to_have_text("Active")
    await phone.get_by_role("button", name="Sign out").click()
    await expect(phone.get_by_role("status")).to_contain_text("You are signed out.")
