"""The subject's journey in a real browser (Debian's Chromium): the code read from a real SMTP
server, the hosted page in each language, the iframe inside another origin's page, the lockout."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from playwright.async_api import Page, async_playwright, expect
from sqlmodel import select

from api.routes.journey_pages import for_the_browser
from core import i18n
from store import orgs
from store.audit import OTP_LOCKED
from store.db import read_session
from store.tables import AuditRecord, Decision, WebhookEvent
from tests.support.api_client import policy_request
from tests.support.journey_fixtures import CHROMIUM
from tests.support.journey_messages import LINK_RE, code_in
from tests.support.live_stack import LiveStack
from tests.support.parent_site import parent_site
from tests.support.ports import free_port
from tests.support.smtp_server import text_of


async def new_request(live: LiveStack, **overrides: Any) -> tuple[dict[str, Any], str, str]:
    """A request to a fresh mailbox; (its record, the code, the link) from the message it sent."""
    creds = live.new_org()
    contact = f"subject-{uuid.uuid4().hex[:10]}@example.com"
    resp = await live.api(creds).post("/request", policy_request(contacts=[contact], **overrides))
    assert resp.status_code == 201, resp.text
    message = await live.smtp.wait_for(contact, timeout=20)
    text = text_of(message)
    [link] = [m.group(0) for m in LINK_RE.finditer(text)]
    return (
        {**resp.json()["data"], "org": creds, "contact": contact, "subject": message["Subject"]},
        code_in(text),
        link,
    )


def decisions_of(live: LiveStack, credential_id: str) -> list[Decision]:
    with read_session(live.engine) as session:
        return list(session.exec(select(Decision).where(Decision.credential_id == credential_id)))


def events_of(live: LiveStack, request_id: str, event_type: str) -> list[WebhookEvent]:
    with read_session(live.engine) as session:
        return list(
            session.exec(
                select(WebhookEvent).where(
                    WebhookEvent.request_id == request_id, WebhookEvent.event_type == event_type
                )
            )
        )


@pytest.mark.parametrize("language", i18n.LANGUAGES)
async def test_hosted_journey_in_each_language(live: LiveStack, browser_page: Page, language: str) -> None:
    def t(key: str, **values: object) -> str:
        return i18n.text(language, key, **values)

    page = browser_page
    # the integrator's redirectUrl is on another site (the page's form-action must allow it)
    with parent_site(free_port(), "<h1>Back at the integrator</h1>") as integrator:
        redirect = f"{integrator}/after-approval?step=done"
        request, code, link = await new_request(live, language=language, redirectUrl=redirect)
        org_name = orgs.get_organization(live.engine, request["org"].organization_id).name
        assert request["subject"] == t("email_subject", org=org_name)  # the message is in the language too
        await page.goto(link)
        assert await page.get_attribute("html", "lang") == i18n.HTML_LANG[language]
        await expect(page.get_by_role("heading", level=1)).to_have_text(t("asks", org=org_name))
        # the credential in human terms: its name and the userParams being approved
        await expect(page.get_by_role("heading", name="Rent payments")).to_be_visible()
        await expect(page.locator("dl")).to_contain_text("Max amount")  # the label, never the raw name
        await expect(page.locator("dl")).to_contain_text("1200")
        # the code field is labelled and focused on arrival
        field = page.get_by_role("textbox", name=t("otp_label"))
        await expect(field).to_be_focused()
        await field.fill(code)
        await page.get_by_role("button", name=t("continue"), exact=True).click()
        await expect(page.get_by_role("heading", name=t("decide_heading"))).to_be_visible()
        await page.get_by_role("group", name="Rent payments").get_by_label(t("approve")).check()
        await page.get_by_role("button", name=t("send_decision")).click()
        await page.wait_for_url(redirect)  # sent on to the integrator's redirectUrl
        await expect(page.get_by_role("heading", level=1)).to_have_text("Back at the integrator")

    got = await live.api(request["org"]).get(f"/request/{request['id']}")
    [cred] = got.json()["credentials"]
    assert cred["status"] == "ACTIVE" and cred["id"].startswith("urn:via:credential:")
    [decision] = decisions_of(live, request["credentials"][0]["id"])
    assert (decision.accepted, decision.channel, decision.surface) == (True, "email", "hosted")
    # the link is useless once the request has ended: it shows the outcome, never the form again
    await page.goto(link)
    await expect(page.get_by_role("textbox", name=t("otp_label"))).to_have_count(0)
    await expect(page.get_by_role("heading", name=t("done_heading"))).to_be_visible()


async def test_a_wrong_link_shows_an_error_page(live: LiveStack, browser_page: Page) -> None:
    _, _, link = await new_request(live)
    tampered = link[:-3] + ("AAA" if not link.endswith("AAA") else "BBB")
    response = await browser_page.goto(tampered)
    assert response is not None and response.status == 404
    heading = browser_page.get_by_role("heading", level=1)
    await expect(heading).to_have_text(i18n.text("ENG", "invalid_heading"))


async def test_five_wrong_codes_lock_the_code_and_report_it(live: LiveStack, browser_page: Page) -> None:
    request, code, link = await new_request(live)
    wrong = f"{(int(code) + 1) % 1_000_000:06d}"
    page = browser_page
    await page.goto(link)
    for left in (4, 3, 2, 1):
        await page.get_by_role("textbox", name="Security code").fill(wrong)
        await page.get_by_role("button", name="Continue", exact=True).click()
        await expect(page.get_by_role("alert")).to_have_text(i18n.text("ENG", "otp_wrong", left=left))
    await page.get_by_role("textbox", name="Security code").fill(wrong)
    await page.get_by_role("button", name="Continue", exact=True).click()
    await expect(page.get_by_role("alert")).to_have_text(i18n.text("ENG", "otp_locked"))
    # locked: even the right code is refused now
    await page.get_by_role("textbox", name="Security code").fill(code)
    await page.get_by_role("button", name="Continue", exact=True).click()
    await expect(page.get_by_role("alert")).to_have_text(i18n.text("ENG", "otp_locked"))
    await expect(page.get_by_role("heading", name="Your decision")).to_have_count(0)

    [event] = events_of(live, request["id"], "otp.failed")
    assert event.payload["otp"]["error"]["code"] == "INVALID_CODE_LIMIT"
    assert event.payload["otp"]["resendEndpoint"].startswith(f"{live.url}/request/resend/{request['id']}?id=")
    assert event.payload["user"]["contact"] == request["contact"]
    with read_session(live.engine) as session:
        records = list(
            session.exec(
                select(AuditRecord).where(
                    AuditRecord.request_id == request["id"], AuditRecord.type == OTP_LOCKED
                )
            )
        )
    assert len(records) == 1 and records[0].data["failures"] == 5


# --- the iframe -----------------------------------------------------------------------------------

PARENT_PAGE = """<!doctype html><html lang="en"><head><title>Integrator app</title></head><body>
<h1>Integrator app</h1>
<iframe id="approval" title="Approval" src="{src}" width="420" height="700"></iframe>
<script>
  window.received = [];
  window.addEventListener("message", function (event) {{
    window.received.push({{origin: event.origin, data: event.data}});
  }});
</script></body></html>"""


async def test_iframe_posts_the_credential_event_to_the_allowed_parent(
    live: LiveStack,
    browser_page: Page,
) -> None:
    request, code, _ = await new_request(live)
    parent_port = free_port()
    parent_origin = f"http://localhost:{parent_port}"
    orgs.set_frame_origins(
        live.engine, request["org"].organization_id, [parent_origin], True, actor="operator:tests"
    )
    # the integrator asks for the embeddable address of its subject's page
    link = await live.api(request["org"]).get(
        f"/request/link/{request['id']}", params={"contact": request["contact"], "parent": parent_origin}
    )
    assert link.status_code == 200, link.text
    src = link.json()["data"]["iframeUrl"]
    with parent_site(parent_port, PARENT_PAGE.format(src=src)):
        page = browser_page
        await page.goto(parent_origin)
        frame = page.frame_locator("#approval")
        await frame.get_by_role("textbox", name="Security code").fill(code)
        await frame.get_by_role("button", name="Continue", exact=True).click()
        await frame.get_by_role("group", name="Rent payments").get_by_label("Approve").check()
        await frame.get_by_role("button", name="Send my decision").click()
        await expect(frame.get_by_role("heading", name="Thank you")).to_be_visible()
        received: list[dict[str, Any]] = []
        for _ in range(100):
            received = await page.evaluate("window.received")
            if received:
                break
            await asyncio.sleep(0.05)
    [message] = received
    assert message["origin"] == live.url  # sent by the approval page, to this parent only
    payload = message["data"]
    assert payload["eventType"] == "credential" and payload["requestId"] == request["id"]
    assert payload["decision"]["action"] == "accept"
    assert payload["credential"]["id"].startswith("urn:via:credential:")
    [event] = events_of(live, request["id"], "credential")
    assert payload == for_the_browser(event.payload)  # the webhook's, without the credential's content
    assert payload["credential"]["id"] == event.payload["credential"]["id"]
    [decision] = decisions_of(live, request["credentials"][0]["id"])
    assert decision.surface == "iframe"


async def test_iframe_in_a_page_of_another_origin_is_refused(live: LiveStack, browser_page: Page) -> None:
    request, _, link = await new_request(live)
    allowed = f"http://localhost:{free_port()}"
    orgs.set_frame_origins(
        live.engine, request["org"].organization_id, [allowed], True, actor="operator:tests"
    )
    # a page of a site that is not allowed, claiming to be the allowed one
    html = PARENT_PAGE.format(src=f"{link}?surface=iframe&parent={allowed}")
    with parent_site(free_port(), html) as intruder:
        page = browser_page
        await page.goto(intruder)
        await asyncio.sleep(1.0)
        frame = page.frame_locator("#approval")
        await expect(frame.get_by_role("textbox", name="Security code")).to_have_count(0)
    # and an origin that is not on the list at all gets a refusal page that cannot be framed
    direct = await live.http.get(f"{link}?surface=iframe&parent=https://evil.example")
    assert direct.status_code == 403
    assert "frame-ancestors 'none'" in direct.headers["content-security-policy"]


# --- identity checks ------------------------------------------------------------------------------


async def code_step(page: Page, link: str, code: str) -> None:
    await page.goto(link)
    await page.get_by_role("textbox", name="Security code").fill(code)
    await page.get_by_role("button", name="Continue", exact=True).click()


async def test_a_kyc_request_cannot_be_accepted_before_the_check(live: LiveStack, browser_page: Page) -> None:
    request, code, link = await new_request(live, securityLevel="PLATFORM_REVALIDATION")
    page = browser_page
    await code_step(page, link, code)
    await expect(page.get_by_role("heading", name="Verify your identity")).to_be_visible()
    await expect(page.get_by_text("Step 2 of 3")).to_be_visible()
    await expect(page.get_by_role("radio")).to_have_count(0)  # nothing to accept yet
    # a decision forged into this page's form is refused: the check step comes back
    session = await page.locator('input[name="session"]').first.get_attribute("value")
    forged = await page.request.post(
        f"{link}/decide",
        form={"session": session or "", f"decision-{request['credentials'][0]['id']}": "accept"},
    )
    assert "Verify your identity" in await forged.text()
    got = await live.api(request["org"]).get(f"/request/{request['id']}")
    assert got.json()["credentials"][0]["status"] == "PENDING"

    await page.get_by_role("button", name="Verify my identity").click()  # to the provider's page
    await expect(page.get_by_role("heading", name="Identity check (simulated)")).to_be_visible()
    await page.get_by_role("button", name="Finish the check").click()  # both checks pass
    await expect(page.get_by_role("heading", name="Your decision")).to_be_visible()
    await page.get_by_role("group", name="Rent payments").get_by_label("Approve").check()
    await page.get_by_role("button", name="Send my decision").click()
    await expect(page.get_by_role("heading", name="Thank you")).to_be_visible()
    got = await live.api(request["org"]).get(f"/request/{request['id']}")
    assert got.json()["credentials"][0]["status"] == "ACTIVE"
    assert got.json()["subjects"][0]["kyc"] == "VERIFIED"


async def test_a_failed_kyc_check_ends_the_journey(live: LiveStack, phone_page: Page) -> None:
    request, code, link = await new_request(live, securityLevel="PLATFORM_KYC")
    page = phone_page  # on a phone this time
    await code_step(page, link, code)
    await page.get_by_role("button", name="Verify my identity").click()
    await page.get_by_label("Document rejected").check()
    await page.get_by_role("button", name="Finish the check").click()
    await expect(page.get_by_role("heading", name="Identity not verified")).to_be_visible()
    await expect(page.get_by_role("radio")).to_have_count(0)
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing wider than the phone's screen
    got = await live.api(request["org"]).get(f"/request/{request['id']}")
    [cred] = got.json()["credentials"]
    assert cred["status"] == "REJECTED" and not cred["id"].startswith("urn:via:credential:")
    assert [e.payload["decision"]["success"] for e in events_of(live, request["id"], "identity")] == [False]


@asynccontextmanager
async def blocking_third_party_cookies() -> AsyncIterator[Page]:
    """A page of a Chromium that blocks third-party cookies (as Chrome's phase-out, incognito and
    other browsers do): only partitioned ones are kept in a frame of another site."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--test-third-party-cookie-phaseout"],
        )
        try:
            context = await browser.new_context()
            context.set_default_timeout(10_000)
            yield await context.new_page()
        finally:
            await browser.close()


@pytest.mark.parametrize("third_party_cookies", ["allowed", "blocked"])
async def test_a_kyc_check_inside_the_iframe_comes_back_to_the_frame(
    live: LiveStack,
    browser_page: Page,
    third_party_cookies: str,
) -> None:
    """The provider opens in the frame and returns into it: the return's cookie is a partitioned
    third-party cookie (SameSite=None; Secure; Partitioned), so it reaches the return in the frame
    of the integrator's page, also where third-party cookies are blocked."""
    if third_party_cookies == "blocked":
        async with blocking_third_party_cookies() as page:
            await _kyc_in_the_iframe(live, page)
    else:
        await _kyc_in_the_iframe(live, browser_page)


async def _kyc_in_the_iframe(live: LiveStack, browser_page: Page) -> None:
    request, code, _ = await new_request(live, securityLevel="PLATFORM_REVALIDATION")
    parent_port = free_port()
    parent_origin = f"http://localhost:{parent_port}"
    orgs.set_frame_origins(
        live.engine, request["org"].organization_id, [parent_origin], True, actor="operator:tests"
    )
    link = await live.api(request["org"]).get(
        f"/request/link/{request['id']}", params={"contact": request["contact"], "parent": parent_origin}
    )
    src = link.json()["data"]["iframeUrl"]
    returns: list[str] = []
    browser_page.on("request", lambda r: returns.append(r.url) if "/kyc/return?" in r.url else None)
    with parent_site(parent_port, PARENT_PAGE.format(src=src)):
        page = browser_page
        await page.goto(parent_origin)
        frame = page.frame_locator("#approval")
        await frame.get_by_role("textbox", name="Security code").fill(code)
        await frame.get_by_role("button", name="Continue", exact=True).click()
        await frame.get_by_role("button", name="Verify my identity").click()  # the provider, in the frame
        await expect(frame.get_by_role("heading", name="Identity check (simulated)")).to_be_visible()
        await frame.get_by_role("button", name="Finish the check").click()
        await expect(frame.get_by_role("heading", name="Your decision")).to_be_visible()
        [return_url] = returns
        assert "session" not in return_url
        await frame.get_by_role("group", name="Rent payments").get_by_label("Approve").check()
        await frame.get_by_role("button", name="Send my decision").click()
        await expect(frame.get_by_role("heading", name="Thank you")).to_be_visible()
    got = await live.api(request["org"]).get(f"/request/{request['id']}")
    assert got.json()["credentials"][0]["status"] == "ACTIVE"
    [decision] = decisions_of(live, request["credentials"][0]["id"])
    assert decision.surface == "iframe"


async def test_a_kyc_return_opened_in_another_browser_does_not_decide(
    live: LiveStack,
    browser_page: Page,
    phone_page: Page,
) -> None:
    request, code, link = await new_request(live, securityLevel="PLATFORM_REVALIDATION")
    page = browser_page
    await code_step(page, link, code)
    await page.get_by_role("button", name="Verify my identity").click()
    await expect(page.get_by_role("heading", name="Identity check (simulated)")).to_be_visible()
    return_url = await page.locator('input[name="return"]').get_attribute("value")
    assert return_url and "/kyc/return?" in return_url and "session" not in return_url
    await page.get_by_role("button", name="Finish the check").click()
    await expect(page.get_by_role("heading", name="Your decision")).to_be_visible()
    # the same return URL in another browser (another context: no cookies), and again in this one
    for other in (phone_page, page):
        response = await other.goto(return_url)
        assert response is not None and response.status == 403
        await expect(other.get_by_role("alert")).to_contain_text("Open the link from your message again")
        await expect(other.get_by_role("radio")).to_have_count(0)
    got = await live.api(request["org"]).get(f"/request/{request['id']}")
    assert got.json()["credentials"][0]["status"] == "PENDING"
