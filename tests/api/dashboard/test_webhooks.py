"""The webhook in the dashboard: owners and developers set the URL (checked as everywhere), see
new secrets once, send the ``test`` event and follow its delivery in the log; each change is the
member's audit record; support members are refused the page and its forms."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services.context import Context
from store import webhooks as store
from tests.support.api_client import Credentials
from tests.support.audit import changes
from tests.support.dashboard import log_in_as, page_client
from tests.support.webhook_receiver import receiving

SECRET_NAMES = ("signature-secret", "encryption-secret", "salt")


@pytest_asyncio.fixture
async def app(settings: Settings, temporal: Client, worker: None) -> AsyncIterator[FastAPI]:
    made = create_app(settings, temporal=temporal)
    yield made
    made.state.ctx.engine.dispose()


def _secrets(page: str) -> dict[str, str]:
    return dict(re.findall(r'id="secret-([a-z-]+)">([^<]+)<', page))


async def test_the_url_the_secrets_and_the_test_event(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "developer")
        empty = await browser.get("/dashboard/webhooks")
        assert empty.status_code == 200 and "No event yet" in empty.text
        early = await browser.post("/dashboard/webhooks/test", data={"csrf": csrf})
        assert early.status_code == 409 and "Set the webhook" in early.text
        bad = await browser.post("/dashboard/webhooks", data={"csrf": csrf, "url": "ftp://example.com/h"})
        assert bad.status_code == 400 and store.config_row(engine, org.organization_id) is None

        with receiving(lambda n: 200) as receiver:
            posted = await browser.post("/dashboard/webhooks", data={"csrf": csrf, "url": receiver.url})
            where = "/dashboard/webhooks?notice=saved"
            assert (posted.status_code, posted.headers["location"]) == (303, where)
            saved = await browser.get(posted.headers["location"])  # post, redirect, get (issue 34)
            assert saved.status_code == 200 and "shown once" in saved.text
            first = _secrets(saved.text)
            assert set(first) == set(SECRET_NAMES)
            kept = store.get_config(engine, cipher, org.organization_id)
            assert kept is not None and kept.signature_secret == first["signature-secret"]
            assert "shown once" not in (await browser.get("/dashboard/webhooks")).text

            sent = await browser.post("/dashboard/webhooks/test", data={"csrf": csrf})
            assert (sent.status_code, sent.headers["location"]) == (
                303,
                "/dashboard/webhooks?notice=test-sent",
            )
            (event,) = store.list_events(engine, org.organization_id)
            for _ in range(300):
                if store.get_event(engine, event.id).state == store.DELIVERED:
                    break
                await asyncio.sleep(0.05)
            log = (await browser.get("/dashboard/webhooks")).text
            assert event.id in log and "delivered" in log and "HTTP 200" in log
            assert receiver.count() == 1

            renewed = await browser.post(
                "/dashboard/webhooks", data={"csrf": csrf, "url": receiver.url, "new_secrets": "yes"}
            )
            second = _secrets((await browser.get(renewed.headers["location"])).text)
            assert set(second) == set(SECRET_NAMES) and all(second[n] != first[n] for n in SECRET_NAMES)

    records = [(r.type, r.actor, r.data.get("secretsChanged")) for r in changes(engine, org.organization_id)]
    everything = ["signatureSecret", "encryptionSecret", "salt"]
    assert records == [("WEBHOOK_CONFIGURED", f"member:{member_id}", everything)] * 2


async def test_a_support_member_is_refused_the_webhook(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        assert (await browser.get("/dashboard/webhooks")).status_code == 403
        form = {"csrf": csrf, "url": "http://127.0.0.1:9/h"}
        assert (await browser.post("/dashboard/webhooks", data=form)).status_code == 403
        assert (await browser.post("/dashboard/webhooks/test", data={"csrf": csrf})).status_code == 403
    assert (
        store.config_row(engine, org.organization_id) is None
        and store.list_events(engine, org.organization_id) == []
    )


async def test_what_the_webhook_receives_is_chosen_on_its_page(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    """Issue 34: on or off and the event types, saved by a redirect; every type ticked is all."""
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        await browser.post("/dashboard/webhooks", data={"csrf": csrf, "url": "https://hooks.example.com/in"})
        page = (await browser.get("/dashboard/webhooks")).text
        assert "What it receives" in page and page.count('name="events"') == 5
        chosen = {"csrf": csrf, "events": ["credential", "mandate.revoked"]}
        saved = await browser.post("/dashboard/webhooks/delivery", data=chosen)
        assert (saved.status_code, saved.headers["location"]) == (303, "/dashboard/webhooks?notice=delivery")
        kept = store.get_config(engine, cipher, org.organization_id)
        assert kept is not None and (kept.enabled, kept.event_types) == (
            False,
            ("credential", "mandate.revoked"),
        )
        every = ["credential", "identity", "otp.failed", "mandate.revoked", "request.resent"]
        await browser.post(
            "/dashboard/webhooks/delivery", data={"csrf": csrf, "enabled": "yes", "events": every}
        )
        kept = store.get_config(engine, cipher, org.organization_id)
        assert kept is not None and (kept.enabled, kept.event_types) == (True, None)
        bad = await browser.post("/dashboard/webhooks/delivery", data={"csrf": csrf, "events": ["nope"]})
        assert bad.status_code == 400 and "an event type is one of" in bad.text
        stale = await browser.post("/dashboard/webhooks/delivery", data={"csrf": "0" * 64, "enabled": "yes"})
        assert stale.status_code == 403
