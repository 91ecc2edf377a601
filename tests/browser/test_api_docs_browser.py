"""``/docs`` in Debian's Chromium: Swagger UI renders the OpenAPI 3.1 document (operations and
webhooks) from the service's own origin. The 4.x Swagger UI served before showed only "Unable to
render this definition" for any 3.1 document, which no test looking at the HTML alone noticed."""

from __future__ import annotations

from urllib.parse import urlsplit

from playwright.async_api import Page, expect

from tests.support.dashboard_browser import SCREENSHOTS
from tests.support.live_stack import LiveStack
from wire.webhook_models import EVENTS


async def test_the_api_docs_show_every_operation_and_webhook(live: LiveStack, browser_page: Page) -> None:
    page = browser_page
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    await page.goto(f"{live.url}/docs")
    await expect(page.get_by_role("heading", name="Webhooks")).to_be_visible()
    await expect(page.get_by_text("Unable to render this definition")).to_have_count(0)

    document = (await live.http.get("/openapi.json")).json()
    operations = [op["operationId"] for methods in document["paths"].values() for op in methods.values()]
    for operation_id in operations:
        await expect(page.locator(f"[id$='-{operation_id}']")).to_have_count(1)
    webhooks = page.locator(".webhooks .opblock-summary-path")
    await expect(webhooks).to_have_text(list(EVENTS))

    # a webhook opened by keyboard: its headers and its recorded body
    summary = page.locator("#operations-webhooks-webhook_credential .opblock-summary-control")
    await summary.focus()
    await page.keyboard.press("Enter")
    opened = page.locator("#operations-webhooks-webhook_credential")
    await expect(opened.locator(".parameter__name")).to_contain_text(
        ["X-Timestamp", "X-Signature", "Webhook-Id"]
    )
    await expect(opened.get_by_text("CredentialEvent", exact=False).first).to_be_visible()
    await expect(opened.locator(".body-param__example, .microlight").first).to_contain_text('"iv"')
    await page.get_by_role("heading", name="Webhooks").evaluate("h => h.scrollIntoView()")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SCREENSHOTS / "api-docs-webhooks.png"))  # the viewport: the webhooks

    origins = {urlsplit(url).netloc for url in requested if not url.startswith("data:")}
    assert origins == {urlsplit(live.url).netloc}, sorted(set(requested))
