"""Sending a closed request again from the dashboard (issue 32): an owner or support member with a
reason, answered with a redirect to the new request (linked both ways on both pages); a developer
is refused; a form without the session's CSRF token or a reason changes nothing; an operator does
the same in the operators' area. Runs on the dev server, with its worker."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services.context import Context
from store import audit
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import log_in_as, page_client
from tests.support.operators import api_of, create_request, log_in_as_operator

pytestmark = pytest.mark.usefixtures("no_server_errors")
NEW_PAGE = re.compile(r"^/dashboard/requests/([0-9a-f]{24})\?notice=sent-again$")


@pytest_asyncio.fixture
async def app(settings: Settings, temporal: Client, worker: None) -> AsyncIterator[FastAPI]:
    """The app on the dev server's worker (the requests' workflows and the event's delivery run)."""
    made = create_app(settings, temporal=temporal)
    made.state.created_requests = []
    yield made
    made.state.ctx.engine.dispose()


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal)


async def _canceled(app: FastAPI, org: Credentials) -> str:
    data = await create_request(app, org, contacts=["ana@example.com"], name="Lease")
    client, api = api_of(app, org)
    async with client:
        assert (await api.delete(f"/request/{data['id']}")).status_code == 200
    return str(data["id"])


async def test_a_support_member_sends_a_canceled_request_again(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    old = await _canceled(app, org)
    page_of = f"/dashboard/requests/{old}"
    async with page_client(app) as developer:
        _, dev_csrf = await log_in_as(developer, ctx, org, MemberRole.DEVELOPER, "dev")
        assert "Send it again" not in (await developer.get(page_of)).text
        refused = await developer.post(f"{page_of}/send-again", data={"csrf": dev_csrf, "reason": "x"})
        assert refused.status_code == 403
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        page = (await browser.get(page_of)).text
        assert "Send it again" in page and 'name="reason"' in page
        stale = await browser.post(f"{page_of}/send-again", data={"csrf": "0" * 64, "reason": "typo"})
        assert stale.status_code == 403
        empty = await browser.post(f"{page_of}/send-again", data={"csrf": csrf, "reason": "  "})
        assert empty.status_code == 400 and "the reason is empty" in empty.text
        sent = await browser.post(f"{page_of}/send-again", data={"csrf": csrf, "reason": "wrong address"})
        assert sent.status_code == 303, sent.text
        found = NEW_PAGE.match(sent.headers["location"])
        assert found is not None
        new_id = found.group(1)
        app.state.created_requests.append(new_id)
        shown = (await browser.get(sent.headers["location"])).text
        assert "This is the request sent again" in shown and f'href="/dashboard/requests/{old}"' in shown
        assert "PENDING" in shown and "Send it again" not in shown
        back = (await browser.get(page_of)).text
        assert f'id="resent-as"><code>{new_id}</code>' in back and "Send it again" not in back
        twice = await browser.post(f"{page_of}/send-again", data={"csrf": csrf, "reason": "again"})
        assert twice.status_code == 409 and f"already sent again as {new_id}" in twice.text
    [record] = [r for r in chain(engine, org.organization_id) if r.type == audit.REQUEST_RESENT]
    assert (record.request_id, record.actor, record.data["reason"]) == (
        old,
        f"member:{member_id}",
        "wrong address",
    )


async def test_an_operator_sends_a_request_again_from_the_operators_area(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    old = await _canceled(app, org)
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as_operator(browser, ctx, "resender")
        page = (await browser.get(f"/dashboard/operators/requests/{old}")).text
        assert "Reason to send it again as a new request" in page
        sent = await browser.post(
            f"/dashboard/operators/requests/{old}/send-again", data={"csrf": csrf, "reason": "asked by phone"}
        )
        assert sent.status_code == 303
        new_id = sent.headers["location"].split("/")[-1].split("?")[0]
        app.state.created_requests.append(new_id)
        shown = (await browser.get(sent.headers["location"])).text
        assert f'href="/dashboard/operators/requests/{old}"' in shown
    [record] = [r for r in chain(engine, org.organization_id) if r.type == audit.REQUEST_RESENT]
    assert (record.actor, record.data["newRequestId"]) == (f"staff:{member_id}", new_id)
