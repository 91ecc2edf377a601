"""The iframe's messages encrypted to the integrator's key, in Debian's Chromium (issue 36): the
parent page, on another site, holds the private key in WebCrypto and opens each message with
``docs/frame-decrypt.js`` (the receiver the docs give, loaded as it is); what it opens is the
``credential`` webhook event exactly, the posted message carries nothing of it readable, and
another P-256 key opens nothing."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from playwright.async_api import Page, expect
from sqlmodel import col, select

from store import orgs
from store.db import read_session
from store.tables import WebhookEvent
from tests.support.api_client import policy_request
from tests.support.frame_keys import new_key_pair
from tests.support.journey_messages import code_in
from tests.support.live_stack import LiveStack
from tests.support.parent_site import parent_site
from tests.support.ports import free_port
from tests.support.smtp_server import text_of

RECEIVER = (Path(__file__).parents[2] / "docs" / "frame-decrypt.js").read_text()

PARENT_PAGE = """<!doctype html><html lang="en"><head><title>Integrator app</title></head><body>
<h1>Integrator app</h1>
<iframe id="approval" title="Approval" src="SRC" width="420" height="700"></iframe>
<script>RECEIVER</script>
<script>
  window.received = []; window.opened = []; window.failures = []; window.othersOpened = [];
  var ecdh = {name: "ECDH", namedCurve: "P-256"};
  var key = crypto.subtle.importKey("jwk", PRIVATE_JWK, ecdh, false, ["deriveBits"]);
  var other = crypto.subtle.importKey("jwk", OTHER_JWK, ecdh, false, ["deriveBits"]);
  var frame = document.getElementById("approval");
  window.addEventListener("message", function (event) {
    if (event.source !== frame.contentWindow) return;
    window.received.push({origin: event.origin, data: event.data});
    if (!event.data || event.data.type !== "mandatum.encrypted") return;
    key.then(function (k) { return mandatumOpen(event.data.jwe, k); }).then(
      function (e) { window.opened.push(e); }, function (err) { window.failures.push(String(err)); });
    other.then(function (k) { return mandatumOpen(event.data.jwe, k); }).then(
      function (e) { window.othersOpened.push(e); }, function (err) { window.failures.push(String(err)); });
  });
</script></body></html>"""


def credential_events(live: LiveStack, request_id: str) -> list[WebhookEvent]:
    with read_session(live.engine) as session:
        found = session.exec(
            select(WebhookEvent).where(
                col(WebhookEvent.request_id) == request_id, col(WebhookEvent.event_type) == "credential"
            )
        )
        return list(found)


async def wait_for(page: Page, expression: str, count: int) -> list[Any]:
    found: list[Any] = []
    for _ in range(200):
        found = await page.evaluate(expression)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    return found


async def test_the_parent_page_opens_the_event_with_its_private_key(
    live: LiveStack, browser_page: Page
) -> None:
    pair, other = new_key_pair(), new_key_pair()
    creds, contact = live.new_org(), f"subject-{uuid.uuid4().hex[:10]}@example.com"
    created = await live.api(creds).post(
        "/request", policy_request(contacts=[contact], iframe={"pubKey": pair.spki})
    )
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    code = code_in(text_of(await live.smtp.wait_for(contact, timeout=20)))
    parent_port = free_port()
    parent_origin = f"http://localhost:{parent_port}"
    orgs.set_frame_origins(live.engine, creds.organization_id, [parent_origin], True, actor="operator:tests")
    link = await live.api(creds).get(
        f"/request/link/{request_id}", params={"contact": contact, "parent": parent_origin}
    )
    html = (
        PARENT_PAGE.replace("SRC", link.json()["data"]["iframeUrl"])
        .replace("RECEIVER", RECEIVER)
        .replace("PRIVATE_JWK", json.dumps(pair.private_jwk()))
        .replace("OTHER_JWK", json.dumps(other.private_jwk()))
    )
    with parent_site(parent_port, html):
        page = browser_page
        await page.goto(parent_origin)
        frame = page.frame_locator("#approval")
        await frame.get_by_role("textbox", name="Security code").fill(code)
        await frame.get_by_role("button", name="Continue", exact=True).click()
        await frame.get_by_role("group", name="Rent payments").get_by_label("Approve").check()
        await frame.get_by_role("button", name="Send my decision").click()
        await expect(frame.get_by_role("heading", name="Thank you")).to_be_visible()
        opened = await wait_for(page, "window.opened", 1)
        failures = await wait_for(page, "window.failures", 1)
        received = await page.evaluate("window.received")
        others = await page.evaluate("window.othersOpened")
    [message] = received
    assert message["origin"] == live.url  # from the approval page, to this parent only
    assert set(message["data"]) == {"type", "jwe"} and message["data"]["type"] == "mandatum.encrypted"
    [event] = credential_events(live, request_id)
    assert opened == [event.payload]  # the webhook's event whole, opened by WebCrypto in the page
    assert pair.open(message["data"]["jwe"]) == event.payload  # and by a JOSE library
    assert event.payload["decision"]["action"] == "accept"
    posted = json.dumps(message)  # nothing of it readable on the way
    for readable in (request_id, contact, event.payload["credential"]["id"], "accept"):
        assert readable not in posted
    # the same message under another P-256 key: WebCrypto's AES-GCM refuses it
    assert others == [] and len(failures) == 1 and "OperationError" in failures[0], failures
