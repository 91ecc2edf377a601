"""The webhook endpoints in the dashboard (issue 34): owners and developers add endpoints (their URL
checked as everywhere), each one's secrets shown once on its page, send it the ``test`` event and
follow its delivery; each change is the member's audit record; support members are refused the
pages and their forms. The forms of the one-webhook page reach the oldest endpoint."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from core.actors import Actor
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import webhooks
from services.context import Context
from store import webhooks as store
from tests.support.api_client import Credentials
from tests.support.audit import changes
from tests.support.dashboard import log_in_as, page_client
from tests.support.webhook_receiver import receiving

SECRET_NAMES = ("signature-secret", "encryption-secret", "salt")
ENDPOINT_PATH = re.compile(r"/dashboard/webhooks/([0-9a-f]{24})\?notice=added")


@pytest_asyncio.fixture
async def app(settings: Settings, temporal: Client, worker: None) -> AsyncIterator[FastAPI]:
    made = create_app(settings, temporal=temporal)
    yield made
    made.state.ctx.engine.dispose()


def _secrets(page: str) -> dict[str, str]:
    return dict(re.findall(r'id="secret-([a-z-]+)">([^<]+)<', page))


async def test_an_endpoint_its_secrets_once_and_its_test_event(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "developer")
        empty = await browser.get("/dashboard/webhooks")
        assert empty.status_code == 200 and 'id="no-endpoint"' in empty.text
        assert "Recent events" not in empty.text  # nothing but the form adding one
        typed = {"csrf": csrf, "url": "ftp://example.com/h", "description": "Billing, production"}
        bad = await browser.post("/dashboard/webhooks/add", data=typed)
        assert bad.status_code == 400 and store.config_row(engine, org.organization_id) is None
        assert 'value="ftp://example.com/h"' in bad.text and 'value="Billing, production"' in bad.text

        with receiving(lambda n: 200) as receiver:
            added = await browser.post("/dashboard/webhooks/add", data={**typed, "url": receiver.url})
            found = ENDPOINT_PATH.fullmatch(added.headers["location"])
            assert added.status_code == 303 and found, added.headers.get("location")
            page_of = f"/dashboard/webhooks/{found[1]}"
            shown = await browser.get(added.headers["location"])  # post, redirect, get (issue 34)
            assert (
                shown.status_code == 200
                and "shown once" in shown.text
                and "Billing, production" in shown.text
            )
            first = _secrets(shown.text)
            assert set(first) == set(SECRET_NAMES)
            kept = store.get_config(engine, cipher, org.organization_id, found[1])
            assert kept is not None and kept.signature_secret == first["signature-secret"]
            assert "shown once" not in (await browser.get(page_of)).text  # a reload shows nothing
            assert len(webhooks.endpoints(ctx, org.organization_id)) == 1  # and adds nothing

            sent = await browser.post(f"{page_of}/test", data={"csrf": csrf})
            assert (sent.status_code, sent.headers["location"]) == (303, f"{page_of}?notice=test-sent")
            (event,) = store.list_events(engine, org.organization_id)
            assert event.endpoint_id == found[1]
            for _ in range(300):
                if store.get_event(engine, event.id).state == store.DELIVERED:
                    break
                await asyncio.sleep(0.05)
            log = (await browser.get(page_of)).text
            assert event.id in log and "delivered" in log and "HTTP 200" in log
            listed = (await browser.get("/dashboard/webhooks")).text
            assert event.id in listed and f'href="{page_of}"' in listed
            assert receiver.count() == 1

            renewed = await browser.post(
                page_of, data={"csrf": csrf, "url": receiver.url, "new_secrets": "yes"}
            )
            assert renewed.headers["location"] == f"{page_of}?notice=saved"
            second = _secrets((await browser.get(renewed.headers["location"])).text)
            assert set(second) == set(SECRET_NAMES) and all(second[n] != first[n] for n in SECRET_NAMES)

    records = [(r.type, r.actor, r.data.get("secretsChanged")) for r in changes(engine, org.organization_id)]
    everything = ["signatureSecret", "encryptionSecret", "salt"]
    assert records == [("WEBHOOK_CONFIGURED", f"member:{member_id}", everything)] * 2


async def test_a_support_member_is_refused_the_endpoints(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    made = webhooks.add_endpoint(
        ctx, Actor.shell_operator("setup"), org.organization_id, "https://a.example/h"
    )
    page_of = f"/dashboard/webhooks/{made.endpoint_id}"
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        for path in ("/dashboard/webhooks", page_of):
            assert (await browser.get(path)).status_code == 403, path
        form = {"csrf": csrf, "url": "http://127.0.0.1:9/h", "confirm": "yes"}
        for path in ("/dashboard/webhooks/add", page_of, f"{page_of}/test", f"{page_of}/remove"):
            assert (await browser.post(path, data=form)).status_code == 403, path
    (row,) = webhooks.endpoints(ctx, org.organization_id)
    assert row.url == "https://a.example/h" and store.list_events(engine, org.organization_id) == []


async def test_what_an_endpoint_receives_is_chosen_on_its_page(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    """Issue 34: on or off and the event types, saved by a redirect; every type ticked is all; a
    refusal keeps the boxes as they were sent."""
    made = webhooks.add_endpoint(
        ctx, Actor.shell_operator("setup"), org.organization_id, "https://a.example/in"
    )
    page_of = f"/dashboard/webhooks/{made.endpoint_id}"
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        page = (await browser.get(page_of)).text
        assert "What it receives" in page and page.count('name="events"') == 5
        chosen = {"csrf": csrf, "events": ["credential", "mandate.revoked"]}
        saved = await browser.post(f"{page_of}/delivery", data=chosen)
        assert (saved.status_code, saved.headers["location"]) == (303, f"{page_of}?notice=delivery")
        kept = store.get_config(engine, cipher, org.organization_id)
        assert kept is not None and (kept.enabled, kept.event_types) == (
            False,
            ("credential", "mandate.revoked"),
        )
        listed = (await browser.get("/dashboard/webhooks")).text
        assert '<td data-label="State">off</td>' in listed and "<code>mandate.revoked</code>" in listed
        every = ["credential", "identity", "otp.failed", "mandate.revoked", "request.resent"]
        await browser.post(f"{page_of}/delivery", data={"csrf": csrf, "enabled": "yes", "events": every})
        kept = store.get_config(engine, cipher, org.organization_id)
        assert kept is not None and (kept.enabled, kept.event_types) == (True, None)
        assert "every type" in (await browser.get("/dashboard/webhooks")).text
        bad = await browser.post(f"{page_of}/delivery", data={"csrf": csrf, "events": ["identity", "nope"]})
        assert bad.status_code == 400 and "an event type is one of" in bad.text
        assert 'value="identity" checked' in bad.text and 'value="credential" checked' not in bad.text
        stale = await browser.post(f"{page_of}/delivery", data={"csrf": "0" * 64, "enabled": "yes"})
        assert stale.status_code == 403


async def test_the_one_webhook_pages_forms_reach_the_oldest_endpoint(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    """A tab open on the page from before the endpoints: its forms are posted again (308) to the
    same form of the oldest endpoint, or, without one, its URL adds one."""
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "legacy")
        form = {"csrf": csrf, "url": "https://a.example/h"}
        first = await browser.post("/dashboard/webhooks", data=form)
        assert (first.status_code, first.headers["location"]) == (308, "/dashboard/webhooks/add")
        refused = await browser.post("/dashboard/webhooks/rotate", data={"csrf": csrf})
        assert refused.status_code == 409 and "add one first" in refused.text
        oldest = webhooks.add_endpoint(
            ctx, Actor.shell_operator("setup"), org.organization_id, "https://a.example/1"
        )
        webhooks.add_endpoint(ctx, Actor.shell_operator("setup"), org.organization_id, "https://a.example/2")
        for tail in ("", "/delivery", "/rotate", "/test"):
            moved = await browser.post(f"/dashboard/webhooks{tail}", data=form)
            where = f"/dashboard/webhooks/{oldest.endpoint_id}{tail}"
            assert (moved.status_code, moved.headers["location"]) == (308, where), tail
        stale = await browser.post("/dashboard/webhooks/test", data={"csrf": "0" * 64})
        assert stale.status_code == 403
    assert store.list_events(engine, org.organization_id) == []
