"""A mandate's use limits on the subject's approval page in Debian's Chromium, on a phone (390 px)
and in French (issue 31): each limit in words before the code and again beside the decision, the
whole journey by keyboard; the mandate issued carries the limits the subject read. The screenshot
goes to ``docs/screenshots/journey-limits-phone.png``."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from playwright.async_api import Page, expect

from core import i18n
from store import actions
from tests.support.a11y import assert_accessible
from tests.support.api_client import Credentials
from tests.support.dashboard_browser import fits, shot
from tests.support.journey_messages import LINK_RE, code_in
from tests.support.live_stack import LiveStack
from tests.support.smtp_server import text_of

PAY = {
    "name": "Payer des factures",
    "executionParams": [{"name": "amount", "type": "number"}],
    "userParams": [{"name": "monthlyBudget", "type": "number"}],
    "rules": [{"name": "positive", "expression": "executionParams.amount > 0"}],
    "limits": [
        {
            "name": "monthly",
            "kind": "sum",
            "param": "amount",
            "max": "userParams.monthlyBudget",
            "period": "P1M",
            "unit": "EUR",
        },
        {"name": "daily", "kind": "rate", "max": 3, "period": "P1D"},
        {"name": "lifetime", "kind": "sum", "param": "amount", "max": 10000, "unit": "EUR"},
    ],
}
LINES = [
    "Au plus 5 utilisations",
    "Au plus 1\u202f500 EUR par mois civil (UTC)",
    "Au plus 3 utilisations par jour (UTC)",
    "Au plus 10\u202f000 EUR au total",
]


async def issued(live: LiveStack, org: Credentials, request_id: str) -> dict[str, Any]:
    """The request's credential once the worker has issued it."""
    for _ in range(100):
        got = await live.api(org).get(f"/request/{request_id}")
        [cred] = got.json()["credentials"]
        if cred["status"] != "PENDING":
            return dict(cred)
        await asyncio.sleep(0.1)
    raise AssertionError(f"not issued: {cred}")


def t(key: str, **values: object) -> str:
    return i18n.text("FRA", key, **values)


async def test_the_limits_in_words_on_a_phone_in_french_by_keyboard(
    live: LiveStack, phone_page: Page, axe_source: str
) -> None:
    org = live.new_org()
    version = actions.install_published(live.engine, org.organization_id, PAY)
    contact = f"subject-{uuid.uuid4().hex[:10]}@example.com"
    credential = {
        "type": "POLICY",
        "name": "Factures du fournisseur",
        "action": {"id": version.action_id, "userParams": {"monthlyBudget": 1500}},
        "maxExecutions": 5,
    }
    body = {"contacts": [contact], "securityLevel": "CONTACT", "name": "Factures", "language": "FRA"}
    created = await live.api(org).post("/request", {**body, "credentials": [credential]})
    assert created.status_code == 201, created.text
    text = text_of(await live.smtp.wait_for(contact, timeout=20))
    [link] = [m.group(0) for m in LINK_RE.finditer(text)]

    page = phone_page
    await page.goto(link)
    limits = page.get_by_role("list", name=t("limits_heading"))
    await expect(limits.get_by_role("listitem")).to_have_text(LINES)
    for raw in ("monthly", "daily", "lifetime", "maxExecutions", "P1M"):  # never a limit's raw name
        await expect(limits).not_to_contain_text(raw)
    await fits(page)
    await assert_accessible(page, axe_source, "the approval page with use limits")

    await page.keyboard.type(code_in(text))  # the code field has the focus on arrival
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name=t("decide_heading"))).to_be_visible()
    await expect(limits.get_by_role("listitem")).to_have_text(LINES)  # read again beside the decision
    approve = page.get_by_role("group", name="Factures du fournisseur").get_by_label(t("approve"))
    await approve.focus()
    await page.keyboard.press("Space")
    await expect(approve).to_be_checked()
    await fits(page)
    await shot(page, "journey-limits-phone")
    await page.get_by_role("button", name=t("send_decision")).focus()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name=t("done_heading"))).to_be_visible()

    cred = await issued(live, org, created.json()["data"]["id"])
    assert (cred["status"], cred["maxExecutions"], cred["executionsRemaining"]) == ("ACTIVE", 5, 5)
    signed = cred["w3cCredential"]["credentialSubject"]["mandate"]
    assert [(b["name"], b["max"]) for b in signed["limits"]] == [
        ("monthly", 1500),
        ("daily", 3),
        ("lifetime", 10000),
    ]
