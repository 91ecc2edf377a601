"""Webhook events in the dashboard: every member sees each event's attempts (time, HTTP status,
error, duration, the URL without its query), a support member retries a failed event now and
resends a delivered one (the same event id again), each recorded as theirs; the list filters by
request; another organization's event is not found; when Temporal does not take a redelivery the
event keeps the state it had."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine, update
from sqlmodel import col
from temporalio.client import Client

from api.app import create_app
from core.actors import Actor
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import webhooks
from services.context import Context
from services.errors import Conflict
from store import audit
from store import webhooks as store
from store.db import write_session
from store.tables import WebhookEvent
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import log_in_as, page_client
from tests.support.webhook_receiver import receiving

pytestmark = pytest.mark.usefixtures("no_server_errors")


@pytest_asyncio.fixture
async def app(settings: Settings, temporal: Client, worker: None) -> AsyncIterator[FastAPI]:
    made = create_app(settings, temporal=temporal)
    yield made
    made.state.ctx.engine.dispose()


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal)


async def _settled(engine: Engine, event_id: str, attempts: int) -> store.WebhookEvent:
    """The event once ``attempts`` attempts are recorded and its delivery has ended."""
    for _ in range(400):
        event = store.get_event(engine, event_id)
        if event.attempts >= attempts and event.state != store.PENDING:
            return event
        await asyncio.sleep(0.05)
    raise AssertionError(f"event {event_id} did not settle: {store.get_event(engine, event_id)}")


def _attempt_rows(page: str) -> list[list[str]]:
    """The attempts table: number, status, error, took, URL of each row."""
    rows = re.findall(r'<td data-label="#">(\d+)</td>(.*?)</tr>', page, re.S)
    cells = re.compile(r'data-label="(?:HTTP status|Error|Took)">([^<]*)<')
    code = re.compile(r"<code>([^<]*)</code>")
    return [[number, *cells.findall(rest), *code.findall(rest)] for number, rest in rows]


async def test_a_support_member_retries_a_failed_event_and_resends_a_delivered_one(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    with receiving(lambda n: 410 if n == 1 else 200) as receiver:  # gone once, then fine
        developer = Actor.shell_operator("setup")
        webhooks.configure(ctx, developer, org.organization_id, receiver.url + "?token=receivers-secret")
        event = webhooks.create_test_event(ctx, developer, org.organization_id)
        await webhooks.start_delivery(ctx, developer, event)
        assert (await _settled(engine, event.id, 1)).state == store.FAILED
        page_of = f"/dashboard/events/{event.id}"
        async with page_client(app) as browser:
            member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "events")
            listed = (await browser.get("/dashboard/events")).text
            assert f'href="{page_of}"' in listed and "failed" in listed
            failed = await browser.get(page_of)
            assert failed.status_code == 200 and "Retry now" in failed.text and "Resend" not in failed.text
            ((number, status, _error, took, url),) = _attempt_rows(failed.text)
            assert (number, status, url) == ("1", "410", receiver.url)  # no query: no token shown
            assert re.fullmatch(r"\d+ ms", took) and "receivers-secret" not in failed.text

            resent_too_early = await browser.post(f"{page_of}/resend", data={"csrf": csrf})
            assert (
                resent_too_early.status_code == 409
                and "only a delivered one is resent" in resent_too_early.text
            )
            retried = await browser.post(f"{page_of}/retry", data={"csrf": csrf})
            assert (retried.status_code, retried.headers["location"]) == (303, f"{page_of}?notice=retry")
            assert (await _settled(engine, event.id, 2)).state == store.DELIVERED
            delivered = (await browser.get(page_of)).text
            assert [row[:2] for row in _attempt_rows(delivered)] == [["1", "410"], ["2", "200"]]
            again = await browser.post(f"{page_of}/retry", data={"csrf": csrf})
            assert again.status_code == 409 and "only a failed one is retried" in again.text

            resent = await browser.post(f"{page_of}/resend", data={"csrf": csrf})
            assert (resent.status_code, resent.headers["location"]) == (303, f"{page_of}?notice=resend")
            assert store.get_event(engine, event.id).state == store.DELIVERED  # never back to pending
            settled = await _settled(engine, event.id, 3)
            assert (settled.state, settled.resending) == (store.DELIVERED, False)
            assert [d.webhook_id for d in receiver.deliveries] == [event.id] * 3  # the same event again

    actor = f"member:{member_id}"
    records = [(r.type, r.actor, r.data.get("kind")) for r in chain(engine, org.organization_id)]
    assert [r for r in records if r[0] == audit.WEBHOOK_REDELIVERY] == [
        (audit.WEBHOOK_REDELIVERY, actor, "retry"),
        (audit.WEBHOOK_REDELIVERY, actor, "resend"),
    ]


async def test_the_event_page_shows_the_payload_and_each_answer(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    """Issue 34: the payload as the receiver reads it; each attempt's answer: its headers and
    the first 2 KiB of its body (a receiver answering more costs nothing), escaped; the next
    attempt's time while one is due."""
    answer = ("<script>alert(1)</script> nope " + "x" * 10_000).encode()
    with receiving(lambda n: 410, body=answer) as receiver:  # gone: one attempt, then failed
        developer = Actor.shell_operator("setup")
        webhooks.configure(ctx, developer, org.organization_id, receiver.url)
        event = webhooks.create_test_event(ctx, developer, org.organization_id)
        await webhooks.start_delivery(ctx, developer, event)
        assert (await _settled(engine, event.id, 1)).state == store.FAILED
    [first] = store.attempts_of(engine, event.id)
    assert first.status_code == 410 and first.response_body is not None
    assert len(first.response_body.encode()) == 2048 and first.response_body.startswith("<script>")
    assert {name.lower(): value for name, value in first.response_headers or []}["x-receiver"] == "tests"
    due = datetime(2030, 1, 2, 3, 4, tzinfo=UTC)  # as a failed attempt with a retry to come leaves it
    with write_session(engine) as session:
        session.execute(
            update(WebhookEvent)
            .where(col(WebhookEvent.id) == event.id)
            .values(state="pending", next_attempt_at=due)
        )
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "reader")
        page = (await browser.get(f"/dashboard/events/{event.id}")).text
    shown = html.unescape(page)
    assert '<dd id="next-attempt">2030-01-02 03:04 UTC</dd>' in page
    assert '"eventType": "test"' in shown and f'"id": "{event.id}"' in shown  # the payload
    assert "<script>alert(1)</script>" not in page  # the receiver's words, escaped
    assert "x-receiver: tests" in shown.lower() and "<script>alert(1)</script> nope xxx" in shown


async def test_the_list_filters_by_request_and_refuses_a_malformed_id(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    event = webhooks.create_test_event(ctx, Actor.shell_operator("setup"), org.organization_id)  # no request
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "filter")
        assert event.id in (await browser.get("/dashboard/events")).text
        other = await browser.get("/dashboard/events", params={"requestId": "0" * 24})
        assert other.status_code == 200 and event.id not in other.text and "No event yet" in other.text
        for bad in ("x" * 24, "0" * 23, "0" * 25, "A" * 24):
            refused = await browser.get("/dashboard/events", params={"requestId": bad})
            assert refused.status_code == 400 and "24 lower-case hexadecimal" in refused.text, bad


async def test_another_organizations_event_is_not_found(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    event = webhooks.create_test_event(ctx, Actor.shell_operator("setup"), org.organization_id)
    store.mark_failed(engine, event.id, "for the test")
    stranger = new_org(engine, cipher, settings)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, stranger, MemberRole.OWNER, "stranger")
        assert event.id not in (await browser.get("/dashboard/events")).text
        assert (await browser.get(f"/dashboard/events/{event.id}")).status_code == 404
        for kind in ("retry", "resend"):
            refused = await browser.post(f"/dashboard/events/{event.id}/{kind}", data={"csrf": csrf})
            assert refused.status_code == 404 and "for the test" not in refused.text
        for path in ("/dashboard/events/urn:via:event:nope", f"/dashboard/events/{event.id.upper()}"):
            assert (await browser.get(path)).status_code == 404
        assert (
            await browser.post(f"/dashboard/events/{event.id}/retry", data={"csrf": ""})
        ).status_code == 403
    assert store.get_event(engine, event.id).state == store.FAILED  # nothing the stranger sent changed it
    with pytest.raises(Conflict):  # the service is scoped the same way
        await webhooks.redeliver(ctx, Actor.shell_operator("x"), org.organization_id, event.id, "resend")


async def test_a_redelivery_temporal_does_not_take_leaves_the_event_as_it_was(
    ctx: Context, org: Credentials, engine: Engine, settings: Settings, cipher: SecretCipher
) -> None:
    event = webhooks.create_test_event(ctx, Actor.shell_operator("setup"), org.organization_id)
    store.mark_failed(engine, event.id, "for the test")
    offline = Context(settings, engine, cipher)  # no Temporal client: the start fails
    with pytest.raises(RuntimeError, match="Temporal client not connected"):
        await webhooks.redeliver(offline, Actor.shell_operator("x"), org.organization_id, event.id, "retry")
    assert store.get_event(engine, event.id).state == store.FAILED  # not left pending for ever


async def test_a_support_member_replays_the_failed_events_of_a_day(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    """Issue 34: the events page replays every failed event of a range of days, then says how many."""
    with receiving(lambda n: 200) as receiver:
        developer = Actor.shell_operator("setup")
        webhooks.configure(ctx, developer, org.organization_id, receiver.url)
        event = webhooks.create_test_event(ctx, developer, org.organization_id)
        store.mark_failed(engine, event.id, "gave up")
        day = event.created_at.date().isoformat()
        async with page_client(app) as browser:
            _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "replayer")
            page = (await browser.get("/dashboard/events")).text
            assert "Replay the failed events" in page
            bad = await browser.post(
                "/dashboard/events/replay", data={"csrf": csrf, "dateFrom": day, "dateTo": "2000-01-01"}
            )
            assert bad.status_code == 400 and "dateTo must not be before dateFrom" in bad.text
            stale = await browser.post(
                "/dashboard/events/replay", data={"csrf": "0" * 64, "dateFrom": day, "dateTo": day}
            )
            assert stale.status_code == 403
            done = await browser.post(
                "/dashboard/events/replay", data={"csrf": csrf, "dateFrom": day, "dateTo": day}
            )
            assert (done.status_code, done.headers["location"]) == (303, "/dashboard/events?replayed=1")
            shown = (await browser.get(done.headers["location"])).text
            assert "1 failed event of those days is being delivered again." in shown
        assert (await _settled(engine, event.id, 1)).state == store.DELIVERED


async def test_the_list_filters_by_endpoint_and_each_event_names_its_endpoint(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    """Issue 34: an Endpoint column and filter; an event's page names its endpoint (its URL without
    the query, linked for those who may open it), "removed" once it is gone, "none" when the
    organization had none."""
    someone = Actor.shell_operator("setup")
    org_id = org.organization_id
    orphan = webhooks.create_test_event(ctx, someone, org_id)  # before any endpoint: none
    first = webhooks.add_endpoint(ctx, someone, org_id, "https://a.example/in?token=receivers-secret")
    second = webhooks.add_endpoint(ctx, someone, org_id, "https://b.example/in", "Backup")
    to_first = webhooks.create_test_event(ctx, someone, org_id, first.endpoint_id)
    to_second = webhooks.create_test_event(ctx, someone, org_id, second.endpoint_id)
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "filter")
        every = (await browser.get("/dashboard/events")).text
        assert all(e.id in every for e in (orphan, to_first, to_second)) and "receivers-secret" not in every
        assert f'<option value="{second.endpoint_id}">https://b.example/in (Backup)</option>' in every
        only = await browser.get("/dashboard/events", params={"endpointId": second.endpoint_id})
        assert only.status_code == 200 and to_second.id in only.text
        assert to_first.id not in only.text and orphan.id not in only.text
        assert f'<option value="{second.endpoint_id}" selected>' in only.text
        for bad in ("x" * 24, "0" * 23, "A" * 24):
            refused = await browser.get("/dashboard/events", params={"endpointId": bad})
            assert refused.status_code == 400 and "endpoint id is 24 lower-case" in refused.text, bad

        page = (await browser.get(f"/dashboard/events/{to_first.id}")).text
        link = f'<a href="/dashboard/webhooks/{first.endpoint_id}"><code>https://a.example/in</code></a>'
        assert f'<dd id="event-endpoint">{link}</dd>' in page and "receivers-secret" not in page
        none = (await browser.get(f"/dashboard/events/{orphan.id}")).text
        assert '<dd id="event-endpoint"><span class="muted">none</span></dd>' in none
        webhooks.remove_endpoint(ctx, someone, org_id, first.endpoint_id)
        gone = (await browser.get(f"/dashboard/events/{to_first.id}")).text
        assert '<dd id="event-endpoint"><span class="muted">removed</span></dd>' in gone
        kept = await browser.get("/dashboard/events", params={"endpointId": first.endpoint_id})
        assert to_first.id in kept.text and "a removed endpoint" in kept.text  # its events stay
    async with page_client(app) as browser:  # support reads the events, not the endpoints' pages
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "reader")
        page = (await browser.get(f"/dashboard/events/{to_second.id}")).text
        assert '<dd id="event-endpoint"><code>https://b.example/in</code></dd>' in page


async def test_a_replay_takes_the_failed_events_of_one_endpoint(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    """Issue 34, item 5: every failed event of an endpoint over a range of days, the others' left."""
    with receiving(lambda n: 200) as receiver:
        someone = Actor.shell_operator("setup")
        org_id = org.organization_id
        first = webhooks.add_endpoint(ctx, someone, org_id, receiver.url + "?to=first")
        second = webhooks.add_endpoint(ctx, someone, org_id, receiver.url + "?to=second")
        mine = webhooks.create_test_event(ctx, someone, org_id, second.endpoint_id)
        other = webhooks.create_test_event(ctx, someone, org_id, first.endpoint_id)
        for event in (mine, other):
            store.mark_failed(engine, event.id, "gave up")
        day = mine.created_at.date().isoformat()
        async with page_client(app) as browser:
            _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "replayer")
            form = {"csrf": csrf, "dateFrom": day, "dateTo": day, "endpointId": second.endpoint_id}
            bad = await browser.post("/dashboard/events/replay", data={**form, "dateTo": "2000-01-01"})
            assert bad.status_code == 400 and f'<option value="{second.endpoint_id}" selected>' in bad.text
            assert f'value="{day}"' in bad.text  # the form as it was sent
            done = await browser.post("/dashboard/events/replay", data=form)
            where = f"/dashboard/events?replayed=1&endpointId={second.endpoint_id}"
            assert (done.status_code, done.headers["location"]) == (303, where)
            shown = (await browser.get(where)).text
            assert "1 failed event of those days is being delivered again." in shown
            assert mine.id in shown and other.id not in shown
        assert (await _settled(engine, mine.id, 1)).state == store.DELIVERED
        assert store.get_event(engine, other.id).state == store.FAILED
        assert [d.webhook_id for d in receiver.deliveries] == [mine.id]
