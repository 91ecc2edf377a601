"""Approvals on the subject's approval page in Debian's Chromium: a DOCUMENT approval's PDF linked,
a FORM's fields as labelled inputs of their types, axe-core's check of the decision step, a
required value missing refused on the server, then the form filled in and the credential issued
with the values."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from playwright.async_api import Page, expect

from core import i18n
from core.kinds import MemberRole
from services.context import Context
from tests.support.a11y import assert_accessible
from tests.support.approvals import DOCUMENT, FORM, make
from tests.support.dashboard_browser import fits, set_password_and_log_in, shot
from tests.support.journey_messages import LINK_RE, code_in
from tests.support.live_stack import LiveStack
from tests.support.smtp_server import text_of


def t(key: str, **values: object) -> str:
    return i18n.text("ENG", key, **values)


async def issued(live: LiveStack, creds: Any, request_id: str) -> list[dict[str, Any]]:
    for _ in range(100):
        got = (await live.api(creds).get(f"/request/{request_id}")).json()["credentials"]
        if all(c["status"] == "ACTIVE" for c in got):
            return list(got)
        await asyncio.sleep(0.1)
    raise AssertionError(f"not issued: {got}")


async def test_a_form_and_a_document_on_the_approval_page(
    live: LiveStack, browser_page: Page, axe_source: str, ctx: Context
) -> None:
    creds = live.new_org()
    ids = [make(ctx, creds.organization_id, raw) for raw in (FORM, DOCUMENT)]
    contact = f"subject-{uuid.uuid4().hex[:10]}@example.com"
    body = {"contacts": [contact], "securityLevel": "CONTACT", "resourcesIds": ids}
    created = await live.api(creds).post("/request", body)
    assert created.status_code == 201, created.text
    text = text_of(await live.smtp.wait_for(contact, timeout=20))
    [link] = [m.group(0) for m in LINK_RE.finditer(text)]

    page = browser_page
    await page.goto(link)
    await expect(page.get_by_role("link", name=t("read_document"))).to_be_visible()
    await page.get_by_role("textbox", name=t("otp_label")).fill(code_in(text))
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name=t("decide_heading"))).to_be_visible()
    form = page.get_by_role("group", name="Onboarding form")
    # the full name left empty: required, refused on the server (the page does not block a decline)
    await form.get_by_label("Age").fill("42")
    await form.get_by_label("Start date").fill("2026-12-01")
    await form.get_by_label("Newsletter").check()
    await form.get_by_label("Plan").select_option("pro")
    await assert_accessible(page, axe_source, "the decision step with a FORM's fields")
    await shot(page, "journey-form-approval")
    for group in ("Onboarding form", "Lease contract"):
        await page.get_by_role("group", name=group).get_by_label(t("approve")).check()
    await page.get_by_role("button", name=t("send_decision")).click()
    await expect(page.get_by_role("alert")).to_contain_text("Full name")

    await form.get_by_label("Full name").fill("Ana Silva")  # the other values were kept on the page
    for group in ("Onboarding form", "Lease contract"):
        await page.get_by_role("group", name=group).get_by_label(t("approve")).check()
    await page.get_by_role("button", name=t("send_decision")).click()
    await expect(page.get_by_role("heading", name=t("done_heading"))).to_be_visible()

    filled, lease = await issued(live, creds, created.json()["data"]["id"])
    assert [i["value"] for i in filled["w3cCredential"]["credentialSubject"]["data"]] == [
        "Ana Silva",
        "42",
        "2026-12-01",
        "true",
        "pro",
    ]
    assert lease["w3cCredential"]["credentialSubject"]["data"][0]["type"] == "PDF"


async def test_the_dashboards_approvals_page(
    live: LiveStack, browser_page: Page, axe_source: str, ctx: Context
) -> None:
    org = live.new_org()
    made = make(ctx, org.organization_id, DOCUMENT)
    page = browser_page
    email = f"approvals-{org.organization_id}@example.com"
    await set_password_and_log_in(page, live, org.organization_id, email, MemberRole.DEVELOPER)
    await page.get_by_role("link", name="Approvals", exact=True).click()
    await expect(page.get_by_role("heading", name="Approvals and workflows")).to_be_visible()
    await page.get_by_label("Spec (JSON or YAML)", exact=True).fill(json.dumps(FORM))
    await page.get_by_role("button", name="Create the approval").click()
    await expect(page.get_by_role("status")).to_contain_text("The approval was created")
    await page.get_by_label("Name", exact=True).fill("Lease")
    await page.get_by_label("Approval ids, in order (separated by spaces or commas)").fill(made)
    await page.get_by_role("button", name="Create the workflow").click()
    await expect(page.get_by_role("status")).to_contain_text("The workflow was created")
    await assert_accessible(page, axe_source, "the approvals page with approvals and a workflow")
    await shot(page, "dashboard-approvals")
    await fits(page)
