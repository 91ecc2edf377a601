"""A request's page in the dashboard ends a subject's trusted browser sessions (issue 36,
``iframe.cookie``): "Forget trusted browsers" revokes every open session of the subject, recorded
as the member's; another organization's member finds neither the request nor the subject."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.testing import WorkflowEnvironment

from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services.context import Context
from store import audit
from store import trusted as trusted_store
from store.db import utcnow
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import log_in_as, page_client
from tests.support.operators import create_request, ts_app
from tests.support.workflow import executor, ts_queue  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("no_server_errors")


@pytest_asyncio.fixture
async def app(ts_env: WorkflowEnvironment, ts_queue: str, settings: Settings) -> AsyncIterator[FastAPI]:  # noqa: F811
    async with ts_app(ts_env, ts_queue, settings) as made:
        yield made


async def test_a_member_forgets_a_subjects_trusted_browsers(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    data = await create_request(
        app, org, contacts=["ana@example.com"], iframe={"cookie": {"allow": True, "duration": 7200}}
    )
    request_id, subject = data["id"], data["subjects"][0]["id"].rsplit(":", 1)[1]
    opened = [
        trusted_store.open_session(engine, request_id, subject, token_hash * 43, "hosted", utcnow())
        for token_hash in ("a", "b")
    ]
    assert all(o is not None for o in opened)
    path = f"/dashboard/requests/{request_id}/subjects/{subject}/forget-browsers"

    # another organization's member: not found, nothing revoked
    async with page_client(app) as stranger:
        _, csrf = await log_in_as(stranger, ctx, new_org(engine, cipher, settings), MemberRole.OWNER, "other")
        assert (await stranger.post(path, data={"csrf": csrf})).status_code == 404
    assert all(s.revoked_at is None for s in trusted_store.sessions_of(engine, org.organization_id, subject))

    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        page = await browser.get(f"/dashboard/requests/{request_id}")
        assert "Forget trusted browsers" in page.text
        assert (await browser.post(path, data={})).status_code == 403  # no CSRF token
        unknown = (
            f"/dashboard/requests/{request_id}/subjects/00000000-0000-4000-8000-000000000000/forget-browsers"
        )
        assert (await browser.post(unknown, data={"csrf": csrf})).status_code == 404
        done = await browser.post(path, data={"csrf": csrf})
        assert (done.status_code, done.headers["location"]) == (
            303,
            f"/dashboard/requests/{request_id}?notice=browsers-forgotten",
        )
        after = await browser.get(done.headers["location"])
        assert "trusted browsers are forgotten" in after.text
    rows = trusted_store.sessions_of(engine, org.organization_id, subject)
    assert [r.revoked_by for r in rows] == [f"member:{member_id}"] * 2
    revoked = [r for r in chain(engine, org.organization_id) if r.type == audit.TRUSTED_SESSION_REVOKED]
    assert {r.data["sessionId"] for r in revoked} == {o.session_id for o in opened if o is not None}
    assert all(r.actor == f"member:{member_id}" for r in revoked)
