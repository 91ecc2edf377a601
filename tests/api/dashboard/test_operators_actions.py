"""The operators' area (issue 15, item 1), its actions: cancel, a fresh code, the subject's link, a
webhook resend and a revocation by an operator, each with the operator and the reason in the audit
record, and nothing done without a reason.

Runs on the time-skipping server (its own: a module's), so the minute between two codes is skipped.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.testing import WorkflowEnvironment

from core.actors import Actor
from core.otp import approval_url
from core.settings import Settings
from orchestration.temporal import request_handle
from services import webhooks
from services.context import Context
from store import audit
from store import webhooks as webhook_store
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import page_client
from tests.support.journey_messages import message_for
from tests.support.operators import create_request, log_in_as_operator, ts_app
from tests.support.webhook_receiver import ENCRYPTION_SECRET, SALT, SIGNATURE_SECRET, receiving
from tests.support.workflow import decide, executor, subject_uuid, ts_queue  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("no_server_errors")


@pytest_asyncio.fixture
async def app(ts_env: WorkflowEnvironment, ts_queue: str, settings: Settings) -> AsyncIterator[FastAPI]:  # noqa: F811
    async with ts_app(ts_env, ts_queue, settings) as made:
        yield made


async def test_operators_actions_each_record_the_staff_member_and_the_reason(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, ts_env: WorkflowEnvironment
) -> None:
    open_one = await create_request(app, org, contacts=["hal@example.com"])
    request_id, subject = open_one["id"], subject_uuid(open_one["subjects"][0]["id"])
    first = await message_for(request_id, subject)
    await ts_env.sleep(61)  # CONTRACT 4's minute before a fresh code, skipped
    with receiving(lambda n: 200) as receiver:
        webhooks.configure(
            ctx,
            Actor.shell_operator("setup"),
            org.organization_id,
            receiver.url,
            SIGNATURE_SECRET,
            ENCRYPTION_SECRET,
            SALT,
        )
        accepted = await create_request(app, org, contacts=["gus@example.com"])
        handle = request_handle(app.state.ctx.client(), accepted["id"])
        decided = await decide(
            handle, subject_uuid(accepted["subjects"][0]["id"]), accepted["credentials"][0]["id"]
        )
        [event] = [e for e in webhook_store.list_events(engine, org.organization_id, 10, accepted["id"])]
        for _ in range(200):
            if webhook_store.get_event(engine, event.id).state == webhook_store.DELIVERED:
                break
            await ts_env.sleep(1)
        assert webhook_store.get_event(engine, event.id).state == webhook_store.DELIVERED

        async with page_client(app) as browser:
            operator_id, csrf = await log_in_as_operator(browser, ctx, "acting")
            actor = f"staff:{operator_id}"
            base = f"/dashboard/operators/requests/{request_id}"
            # a reason is required: nothing happens without one
            bare = await browser.post(f"{base}/cancel", data={"csrf": csrf, "reason": "  "})
            assert bare.status_code == 400 and "the reason is empty" in bare.text
            resent = await browser.post(
                f"{base}/resend", data={"csrf": csrf, "subject": subject, "reason": "ticket 41: no mail"}
            )
            assert (resent.status_code, resent.headers["location"]) == (303, f"{base}?notice=resend")
            await message_for(request_id, subject, newer_than=first.id)
            shown = await browser.post(
                f"{base}/link", data={"csrf": csrf, "subject": subject, "reason": "ticket 41: by phone"}
            )
            link = re.search(r'id="subject-link">([^<]+)<', shown.text)
            assert shown.status_code == 200 and link is not None
            assert link.group(1) == approval_url(ctx.settings.public_url, ctx.journey, request_id, subject)
            canceled = await browser.post(f"{base}/cancel", data={"csrf": csrf, "reason": "ticket 41: asked"})
            assert canceled.status_code == 303
            assert 'id="request-status">CANCELED<' in (await browser.get(base)).text

            other = f"/dashboard/operators/requests/{accepted['id']}"
            again = await browser.post(
                f"{other}/webhook", data={"csrf": csrf, "event": event.id, "reason": "ticket 42: lost it"}
            )
            assert again.status_code == 303
            for _ in range(200):
                if receiver.count() >= 2:
                    break
                await ts_env.sleep(1)
            assert [d.event["id"] for d in receiver.deliveries if d.event] == [event.id, event.id]
            revoked = await browser.post(
                f"{other}/revoke",
                data={"csrf": csrf, "mandate": decided.mandate_id, "reason": "ticket 43: fraud"},
            )
            assert revoked.status_code == 303

    def by_operator(request: str) -> list[tuple[str, str | None]]:
        return [
            (r.type, r.data.get("reason"))
            for r in chain(engine, org.organization_id)
            if r.request_id == request and r.actor == actor
        ]

    assert by_operator(request_id) == [
        (audit.OTP_RESENT, "ticket 41: no mail"),
        (audit.SUBJECT_LINK_SHOWN, "ticket 41: by phone"),
        (audit.MANDATE_CANCELED, "ticket 41: asked"),
    ]
    assert by_operator(accepted["id"]) == [
        (audit.WEBHOOK_REDELIVERY, "ticket 42: lost it"),
        (audit.MANDATE_REVOKED, "ticket 43: fraud"),
    ]
