"""Temporal unreachable (issue 12, item 16): the API and the worker start without it; what needs no
Temporal keeps working; what needs it answers 503 with ``Retry-After`` (the subject's form posts
get the "try again" page, never JSON); both recover, without a restart, once a server is there."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from functools import partial
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import Engine
from temporalio.testing import WorkflowEnvironment

import worker
from api.app import create_app
from core import i18n
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import connect_with_backoff
from store import request_queries as queries
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.audit import issued_mandate
from tests.support.journey_messages import journey_secrets
from tests.support.ports import free_port
from tests.support.workflow import start_dev_server

BUSY = i18n.text(i18n.DEFAULT_LANGUAGE, "unavailable")


async def _until(what: str, check: Callable[[], Awaitable[bool]], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.1)


def _page_unavailable(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text[:500]
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["retry-after"] == "5"
    assert BUSY in answer.text


async def test_api_and_worker_run_without_temporal_and_recover(
    settings: Settings,
    engine: Engine,
    cipher: SecretCipher,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO, logger="mandatum")
    # the worker's waits between connection attempts, short (1 s doubling to 30 s in production):
    # it still fails, logs "trying again in", and connects once the server is up
    monkeypatch.setattr(worker, "connect_with_backoff", partial(connect_with_backoff, backoff=(0.2, 0.5)))
    port = free_port()  # nothing listens here yet
    down = settings.model_copy(
        update={
            "temporal_address": f"127.0.0.1:{port}",
            "task_queue": f"mandatum-down-{uuid.uuid4().hex[:8]}",
            "reconcile_interval": timedelta(seconds=0.2),
            "reconcile_grace": timedelta(0),
        }
    )
    stop = asyncio.Event()
    worker_run = asyncio.create_task(worker.main(down, stop))  # starts, and keeps trying
    app = create_app(down)  # no client given: the lifespan makes it, as under uvicorn
    env: WorkflowEnvironment | None = None
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as http:
                api = SignedClient(http, new_org(engine, cipher, down))
                org_id = api.creds.organization_id

                # what needs no Temporal works: creation (the reconciler starts it later), reads,
                # presentations and verify, the subject's page
                created = await api.post("/request", policy_request())
                assert created.status_code == 201, created.text
                rid = created.json()["data"]["id"]
                assert (await api.get(f"/request/{rid}")).status_code == 200
                assert (await api.get("/request")).status_code == 200
                issued = issued_mandate(engine, cipher, down, org_id)
                vp = await api.post(f"/credential/{quote(issued.mandate_id, safe='')}/presentation", {})
                assert vp.status_code == 200, vp.text
                verified = await api.post(
                    "/credential/verify",
                    {
                        "presentation": vp.json()["data"]["presentation"],
                        "executionParams": {"amount": 100, "payee": "Bob"},
                    },
                )
                assert verified.status_code == 200, verified.text
                bundle = queries.get_request(engine, org_id, rid)
                assert bundle is not None
                subject_id, credential_id = bundle.subjects[0][1].id, bundle.credentials[0].id
                token = journey_secrets().link_token(rid, subject_id)
                session = app.state.ctx.journey.session_for(token)
                page = await http.get(f"/r/{token}")
                assert page.status_code == 200 and "text/html" in page.headers["content-type"]

                # what needs Temporal: 503 with Retry-After, JSON for the API, the page for forms
                for answer in (
                    await api.delete(f"/request/{rid}"),
                    await api.request(
                        "PATCH", f"/request/resend/{rid}", params={"contact": "ana@example.com"}
                    ),
                ):
                    assert_error_shape(answer, 503)
                    assert answer.headers["retry-after"] == "5"
                _page_unavailable(await http.post(f"/r/{token}/otp", data={"code": "123456"}))
                _page_unavailable(await http.post(f"/r/{token}/resend", data={}))
                _page_unavailable(await http.post(f"/r/{token}/continue", data={"session": session}))
                _page_unavailable(
                    await http.post(
                        f"/r/{token}/decide", data={"session": session, f"decision-{credential_id}": "accept"}
                    )
                )
                assert any(
                    r.name == "mandatum.temporal" and "trying again in" in r.getMessage()
                    for r in caplog.records
                ), "the worker says it is waiting for Temporal"
                assert not worker_run.done()
                # an outage is expected: one warning per creation, no error with a stack trace
                assert not [
                    r
                    for r in caplog.records
                    if r.name.startswith("mandatum.api") and r.levelno >= logging.ERROR
                ], "an outage is logged as an error"
                assert any("Temporal is unreachable" in r.getMessage() for r in caplog.records)

                # Temporal comes up where the settings point: the worker connects, its reconciler
                # starts the stored request's workflow, and the same API process cancels it
                env = await start_dev_server(port)

                async def started() -> bool:
                    found = await asyncio.to_thread(queries.get_request, engine, org_id, rid)
                    return found is not None and found.request.workflow_started_at is not None

                await _until("the reconciler started the request's workflow", started)
                assert any(r.getMessage().startswith("connected to Temporal") for r in caplog.records)
                canceled = await api.delete(f"/request/{rid}")
                assert canceled.status_code == 200, canceled.text
                assert (await api.get(f"/request/{rid}")).json()["status"] == "CANCELED"
                again = await http.post(f"/r/{token}/otp", data={"code": "123456"})
                assert again.status_code == 410  # the workflow answers now: the request has ended

                # and when the server goes away again, a call that needs it is a 503, not a 500
                other = (await api.post("/request", policy_request())).json()["data"]["id"]
                await env.shutdown()
                env = None
                gone = await api.delete(f"/request/{other}")
                assert_error_shape(gone, 503)
                assert gone.headers["retry-after"] == "5"
    finally:
        stop.set()
        await asyncio.wait_for(worker_run, 60)
        if env is not None:
            await env.shutdown()
