"""Identity checks on the journey (CONTRACT 8): PLATFORM_KYC (an earlier success is reused),
PLATFORM_REVALIDATION (always a fresh check), ORGANIZATION_KYC (the organization reports its own
check), and a failed check ending the subject's path with no mandate. Walked over plain HTTP form
posts, against the development provider (whose page an app in development serves)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import Engine
from sqlmodel import col, select
from temporalio.client import Client

from api.app import create_app
from api.routes.journey import KYC_COOKIE, kyc_cookie
from core.otp import KYC_RETURN_SECONDS, JourneySecrets
from core.settings import Settings
from orchestration.temporal import request_handle
from store import audit
from store import kyc as kyc_store
from store.db import read_session
from store.tables import AuditRecord, KycCheck, Subject, WebhookEvent
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.development import development_client
from tests.support.journey_messages import LINK_RE, SESSION_RE, code_in, message_for
from tests.support.workflow import refused
from workflows.ids import (
    SA_EVENT_TYPE,
    SA_ORGANIZATION,
    SA_OUTCOME,
    SA_REQUEST,
    SA_STATUS,
    webhook_workflow_id,
)
from workflows.messages import DecisionInput, DecisionResult
from workflows.webhook_messages import DELIVERY_REVISION


async def open_request(
    api: SignedClient, level: str, contact: str = "ana@example.com", **overrides: Any
) -> dict[str, Any]:
    created = await api.post("/request", policy_request(securityLevel=level, contacts=[contact], **overrides))
    assert created.status_code == 201, created.text
    data: dict[str, Any] = created.json()["data"]
    subject = data["subjects"][0]["id"].rsplit(":", 1)[1]
    entry = await message_for(data["id"], subject)
    [path] = LINK_RE.findall(entry.text)
    return {
        **data,
        "subject": subject,
        "path": path,
        "code": code_in(entry.text),
        "credential": data["credentials"][0]["id"],
    }


async def enter_code(http: httpx.AsyncClient, req: dict[str, Any]) -> tuple[httpx.Response, str]:
    page = await http.post(f"{req['path']}/otp", data={"code": req["code"]})
    assert page.status_code == 200, page.text
    [session] = SESSION_RE.findall(page.text)
    return page, session


def is_kyc_step(page: httpx.Response, req: dict[str, Any]) -> bool:
    return f'action="{req["path"]}/kyc"' in page.text and "decision-" not in page.text


def is_review_step(page: httpx.Response, req: dict[str, Any]) -> bool:
    return f'name="decision-{req["credential"]}"' in page.text


@pytest_asyncio.fixture
async def provider(settings: Settings, temporal: Client) -> AsyncIterator[httpx.AsyncClient]:
    """The development provider's pages, as ``make run`` serves them (development only)."""
    async with development_client(settings, temporal) as client:
        yield client


async def platform_check(
    http: httpx.AsyncClient,
    provider: httpx.AsyncClient,
    req: dict[str, Any],
    session: str,
    document: str = "pass",
    selfie: str = "pass",
) -> httpx.Response:
    """Start the check from the page, pass or fail it on the development provider's page, and
    follow the subject back; the page they land on."""
    started = await http.post(f"{req['path']}/kyc", data={"session": session})
    assert started.status_code == 303, started.text
    provider_page = await provider.get(started.headers["location"])
    assert provider_page.status_code == 200 and "Identity document" in provider_page.text
    check_path = started.headers["location"].split("?")[0].removeprefix("https://mandatum.test")
    [return_url] = re.findall(r'name="return" value="([^"]+)"', provider_page.text)
    finished = await provider.post(
        check_path, data={"document": document, "selfie": selfie, "return": return_url.replace("&amp;", "&")}
    )
    assert finished.status_code == 303, finished.text
    return await http.get(finished.headers["location"])


async def accept(http: httpx.AsyncClient, req: dict[str, Any], session: str) -> httpx.Response:
    return await http.post(
        f"{req['path']}/decide", data={"session": session, f"decision-{req['credential']}": "accept"}
    )


async def credential_of(api: SignedClient, req: dict[str, Any]) -> dict[str, Any]:
    got = await api.get(f"/request/{req['id']}")
    return dict(got.json()["credentials"][0])


def events_of(engine: Engine, request_id: str) -> list[WebhookEvent]:
    with read_session(engine) as session:
        return list(
            session.exec(
                select(WebhookEvent)
                .where(WebhookEvent.request_id == request_id)
                .order_by(col(WebhookEvent.created_at))
            )
        )


def audit_types(engine: Engine, request_id: str) -> list[str]:
    with read_session(engine) as session:
        return [
            r.type
            for r in session.exec(
                select(AuditRecord).where(AuditRecord.request_id == request_id).order_by(col(AuditRecord.seq))
            )
        ]


async def test_platform_kyc_comes_before_the_decision_and_is_reused(
    api: SignedClient,
    http: httpx.AsyncClient,
    provider: httpx.AsyncClient,
    temporal: Client,
    engine: Engine,
) -> None:
    req = await open_request(api, "PLATFORM_KYC")
    page, session = await enter_code(http, req)
    assert is_kyc_step(page, req)
    # the decision cannot be made before the check: not by forging the form, not by the update
    forged = await accept(http, req, session)
    assert is_kyc_step(forged, req)
    handle = request_handle(temporal, req["id"])
    early = await refused(
        handle.execute_update(
            "decide",
            DecisionInput(
                subject_id=req["subject"],
                credential_id=req["credential"],
                accept=True,
                channel="email",
                surface="hosted",
            ),
            result_type=DecisionResult,
        )
    )
    assert early.type == "identity_required"
    assert (await credential_of(api, req))["status"] == "PENDING"

    back = await platform_check(http, provider, req, session)
    assert is_review_step(back, req)
    [session] = SESSION_RE.findall(back.text)
    done = await accept(http, req, session)
    assert done.status_code == 200 and "You approved: Rent payments." in done.text, done.text
    assert (await credential_of(api, req))["status"] == "ACTIVE"

    events = events_of(engine, req["id"])
    assert [e.event_type for e in events] == ["identity", "credential"]
    identity, credential = events
    assert identity.payload["decision"]["success"] is True
    assert set(identity.payload["decision"]) == {"success", "message", "date"}
    # the credential event is delivered only after the identity event
    handle = temporal.get_workflow_handle(webhook_workflow_id(credential.id))
    child = await handle.fetch_history()
    [started] = child.events[0].workflow_execution_started_event_attributes.input.payloads
    assert json.loads(started.data) == {
        "event_id": credential.id,
        "after": identity.id,
        "revision": DELIVERY_REVISION,
        "attempts_before": 0,
        "first_attempt": None,  # made by the delivery workflow itself, after the identity event
        "first_attempt_at": None,
    }
    for _ in range(200):  # its first task may not have run yet: wait for it to look at the identity event
        if "webhook_event_state" in child.to_json():
            break
        await asyncio.sleep(0.05)
        child = await handle.fetch_history()
    assert "webhook_event_state" in child.to_json()
    assert audit.IDENTITY_VERIFIED in audit_types(engine, req["id"])
    with read_session(engine) as session_:
        subject = session_.get(Subject, req["subject"])
    assert subject is not None and (subject.kyc, subject.identity_status) == ("VERIFIED", "VERIFIED")

    # a later PLATFORM_KYC request of the same subject reuses the success...
    again = await open_request(api, "PLATFORM_KYC")
    page, _ = await enter_code(http, again)
    assert is_review_step(page, again)
    [reused] = [e for e in events_of(engine, again["id"]) if e.event_type == "identity"]
    assert reused.payload["decision"]["success"] is True and "reused" in reused.payload["decision"]["message"]
    # ...and PLATFORM_REVALIDATION does not
    fresh = await open_request(api, "PLATFORM_REVALIDATION")
    page, _ = await enter_code(http, fresh)
    assert is_kyc_step(page, fresh)


async def test_a_failed_check_ends_the_subjects_path_with_no_mandate(
    api: SignedClient,
    http: httpx.AsyncClient,
    provider: httpx.AsyncClient,
    engine: Engine,
    temporal: Client,
) -> None:
    req = await open_request(api, "PLATFORM_REVALIDATION", contact="failing@example.com")
    _, session = await enter_code(http, req)
    back = await platform_check(http, provider, req, session, selfie="fail")
    assert back.status_code == 403 and "Identity not verified" in back.text
    assert "decision-" not in back.text
    cred = await credential_of(api, req)
    assert cred["status"] == "REJECTED" and cred["id"] == req["credential"]  # no mandate URN
    assert [d["accepted"] for d in cred["decisions"]] == [False]
    events = events_of(engine, req["id"])
    assert [e.event_type for e in events] == ["identity", "credential"]
    assert events[0].payload["decision"]["success"] is False
    assert events[0].payload["decision"]["message"] == "The selfie check failed"
    assert events[1].payload["decision"]["action"] == "reject"
    types = audit_types(engine, req["id"])
    assert audit.IDENTITY_FAILED in types and audit.DECISION_REJECT in types
    with read_session(engine) as session_:
        subject = session_.get(Subject, req["subject"])
    assert subject is not None and subject.kyc == "FAILED"
    # operators find it in Temporal as identity failed, and its deliveries by request and type
    closed = (await request_handle(temporal, req["id"]).describe()).typed_search_attributes
    assert (closed.get(SA_STATUS), closed.get(SA_OUTCOME)) == ("COMPLETED", "IDENTITY_FAILED")
    for event in events:
        delivery = (
            await temporal.get_workflow_handle(webhook_workflow_id(event.id)).describe()
        ).typed_search_attributes
        assert (delivery.get(SA_ORGANIZATION), delivery.get(SA_REQUEST), delivery.get(SA_EVENT_TYPE)) == (
            event.organization_id,
            req["id"],
            event.event_type,
        )
    # the link now shows the outcome; a new code changes nothing
    again = await http.post(f"{req['path']}/otp", data={"code": req["code"]})
    assert "decision-" not in again.text


async def test_organization_kyc_waits_for_the_organizations_own_check(
    api: SignedClient,
    http: httpx.AsyncClient,
    engine: Engine,
) -> None:
    req = await open_request(api, "ORGANIZATION_KYC", contact="org-checked@example.com")
    page, session = await enter_code(http, req)
    assert f'action="{req["path"]}/continue"' in page.text and "decision-" not in page.text
    still = await http.post(f"{req['path']}/continue", data={"session": session})
    assert "decision-" not in still.text
    # a platform check does not stand in for the organization's own
    platform = await http.post(f"{req['path']}/kyc", data={"session": session})
    assert platform.status_code == 503 and "decision-" not in platform.text

    assert_error_shape(await api.post("/subject/identity", {"success": True}), 400)
    assert_error_shape(
        await api.post("/subject/identity", {"contact": "nobody@example.com", "success": True}), 404
    )
    reported = await api.post(
        "/subject/identity",
        {"contact": "Org-Checked@example.com", "success": True, "message": "Passport seen at the branch"},
    )
    assert reported.status_code == 200, reported.text
    assert reported.json() == {"success": True, "identityStatus": "VERIFIED", "requests": [req["id"]]}

    ready = await http.post(f"{req['path']}/continue", data={"session": session})
    assert is_review_step(ready, req)
    assert (await accept(http, req, session)).status_code == 200
    assert (await credential_of(api, req))["status"] == "ACTIVE"
    [identity] = [e for e in events_of(engine, req["id"]) if e.event_type == "identity"]
    assert identity.payload["decision"]["message"] == "Passport seen at the branch"

    # the next ORGANIZATION_KYC request of the subject needs no new report
    later = await open_request(api, "ORGANIZATION_KYC", contact="org-checked@example.com")
    page, _ = await enter_code(http, later)
    assert is_review_step(page, later)


# --- the return from the provider (issue 12, item 6) ----------------------------------------------


@asynccontextmanager
async def another_browser(settings: Settings, temporal: Client) -> AsyncIterator[httpx.AsyncClient]:
    """A client that shares nothing with ``http``: no cookies."""
    transport = httpx.ASGITransport(app=create_app(settings, temporal=temporal), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        yield client


def cookie_value(set_cookie: str) -> str:
    name, _, rest = set_cookie.partition("=")
    assert name == KYC_COOKIE
    return rest.split(";", 1)[0]


async def test_the_return_from_the_provider_carries_no_session_and_opens_once_in_the_browser_that_left(
    api: SignedClient,
    http: httpx.AsyncClient,
    provider: httpx.AsyncClient,
    settings: Settings,
    temporal: Client,
    engine: Engine,
) -> None:
    req = await open_request(api, "PLATFORM_REVALIDATION", contact="returning@example.com")
    _, session = await enter_code(http, req)
    started = await http.post(f"{req['path']}/kyc", data={"session": session})
    assert started.status_code == 303, started.text
    provider_url = started.headers["location"]
    # nothing of the page session goes to the provider: not in its URL, not in the return URL
    assert session.split(".", 1)[1] not in unquote(provider_url)
    [return_url] = parse_qs(urlsplit(provider_url).query)["return"]
    returned = urlsplit(return_url)
    assert returned.path == f"{req['path']}/kyc/return"
    assert set(parse_qs(returned.query)) == {"check", "lang"}  # the check and the language, no session
    [check_id] = parse_qs(returned.query)["check"]
    assert urlsplit(provider_url).path == f"/dev/kyc/{check_id}"
    # the browser that left holds the secret the return needs: HttpOnly, this page's path only
    set_cookie = started.headers["set-cookie"]
    attributes = [a.strip() for a in set_cookie.split(";")]
    assert {"HttpOnly", "SameSite=Lax", "Secure", f"Path={req['path']}/kyc", "Max-Age=1800"} <= set(
        attributes
    )
    secret = cookie_value(set_cookie)
    assert len(secret) == 43 and secret not in provider_url
    with read_session(engine) as db:
        check = db.get(KycCheck, check_id)
        assert check is not None and check.browser_hash and secret not in check.browser_hash

    # the provider passes the subject and sends them back to the return URL
    finished = await provider.post(
        f"/dev/kyc/{check_id}", data={"document": "pass", "selfie": "pass", "return": return_url}
    )
    assert finished.status_code == 303 and finished.headers["location"] == return_url
    # a provider cannot be made to send the subject to another check's return, or elsewhere
    other = return_url.replace(check_id, str(uuid.uuid4()))
    assert (await provider.post(f"/dev/kyc/{check_id}", data={"return": other})).status_code == 400

    async with another_browser(settings, temporal) as stranger:
        # the return URL alone (the provider, a log, a shoulder): the code step and a clear word
        for cookie in (None, f"{KYC_COOKIE}={'A' * 43}", f"{KYC_COOKIE}={secret[:-1]}"):
            headers = {"Cookie": cookie} if cookie else {}
            replayed = await stranger.get(return_url, headers=headers)
            assert replayed.status_code == 403, replayed.text
            assert "Open the link from your message again" in replayed.text
            assert "decision-" not in replayed.text and not SESSION_RE.findall(replayed.text)
            assert f'action="{req["path"]}/otp"' in replayed.text
        # the old way back, a session in the URL, is gone
        assert (await stranger.get(f"{req['path']}/continue", params={"session": session})).status_code == 405
    assert (await credential_of(api, req))["status"] == "PENDING"

    # the browser that left: the decision, with a new session; the cookie is cleared
    back = await http.get(return_url)
    assert is_review_step(back, req), back.text
    [new_session] = SESSION_RE.findall(back.text)
    assert new_session not in return_url
    cleared = back.headers["set-cookie"]
    assert "Max-Age=0" in cleared and f"Path={req['path']}/kyc" in cleared
    # once: the same browser, its secret sent again, is refused the second time
    again = await http.get(return_url, headers={"Cookie": f"{KYC_COOKIE}={secret}"})
    assert again.status_code == 403 and "decision-" not in again.text
    done = await accept(http, req, new_session)
    assert done.status_code == 200 and "You approved: Rent payments." in done.text, done.text
    with read_session(engine) as db:
        check = db.get(KycCheck, check_id)
        assert check is not None and check.returned_at is not None and check.status == "VERIFIED"


async def test_a_return_is_taken_only_for_its_check_subject_and_browser_and_in_time(
    api: SignedClient,
    http: httpx.AsyncClient,
    settings: Settings,
    engine: Engine,
) -> None:
    req = await open_request(api, "PLATFORM_REVALIDATION", contact="taken@example.com")
    secrets = JourneySecrets(settings.master_key_bytes())
    secret = secrets.kyc_browser_secret()
    now = datetime.now(UTC)
    check_id = kyc_store.new_check_id()
    kyc_store.start_check(
        engine,
        req["id"],
        req["subject"],
        "development",
        now,
        check_id,
        secrets.kyc_browser_hash(check_id, secret),
    )
    right = secrets.kyc_browser_hash(check_id, secret)
    before = now - timedelta(seconds=KYC_RETURN_SECONDS)

    def take(
        check: str = check_id,
        request_id: str = req["id"],
        subject_id: str = req["subject"],
        browser: str = right,
        started_after: datetime = before,
    ) -> bool:
        return kyc_store.take_return(engine, check, request_id, subject_id, browser, now, started_after)

    other_secret = secrets.kyc_browser_secret()
    assert not take(browser=secrets.kyc_browser_hash(check_id, other_secret))  # another browser
    other_key = JourneySecrets(bytes(range(32)))
    assert not take(browser=other_key.kyc_browser_hash(check_id, secret))  # the same secret, another key
    assert not take(subject_id=str(uuid.uuid4()))  # another subject's page
    assert not take(request_id="0" * 24)  # another request's page
    assert not take(check=kyc_store.new_check_id())  # no such check
    assert not take(started_after=now)  # started too long ago
    assert take()  # none of those used it up
    assert not take()  # once

    # two returns at the same moment (a double click, a replay racing the subject): one is taken
    check_id = kyc_store.new_check_id()
    kyc_store.start_check(
        engine,
        req["id"],
        req["subject"],
        "development",
        now,
        check_id,
        secrets.kyc_browser_hash(check_id, secret),
    )
    barrier = threading.Barrier(4)

    def racing(_: int) -> bool:
        barrier.wait()
        return take(check=check_id, browser=secrets.kyc_browser_hash(check_id, secret))

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(racing, range(4))) == [False, False, False, True]


def test_the_kyc_cookie_inside_an_iframe_is_partitioned_and_needs_https() -> None:
    secret = JourneySecrets.kyc_browser_secret()
    iframe = kyc_cookie("abc_-1", secret, "iframe", False, 1800).split("; ")
    assert {"SameSite=None", "Secure", "Partitioned", "HttpOnly", "Path=/r/abc_-1/kyc"} <= set(iframe)
    hosted = kyc_cookie("abc_-1", secret, "hosted", False, 1800).split("; ")
    assert "SameSite=Lax" in hosted and "Secure" not in hosted and "Partitioned" not in hosted
    assert "Secure" in kyc_cookie("abc_-1", secret, "hosted", True, 1800).split("; ")
    # nothing that is not a link token or a browser secret gets into the header
    for token in ("a;Path=/", "a\r\nSet-Cookie: x=1", "a/../b", "", "a" * 65):
        with pytest.raises(ValueError):
            kyc_cookie(token, secret, "hosted", True, 1800)
    for value in ("x; Domain=evil.example", secret + "A", "A" * 42 + "="):
        with pytest.raises(ValueError):
            kyc_cookie("abc", value, "hosted", True, 1800)


async def test_an_identity_result_is_a_boolean_not_a_number(api: SignedClient) -> None:
    """``success`` is true or false: pydantic would read 0 as false and record a failed check of a
    real subject (the OpenAPI fuzzing's first find); such a body is a 400 and changes nothing."""
    created = await api.post("/request", policy_request(contacts=["Zero-Check@example.com"]))
    assert created.status_code == 201, created.text
    for success in (0, 1, "false", None):
        body = {"contact": "zero-check@example.com", "success": success}
        refused = assert_error_shape(await api.post("/subject/identity", body), 400)
        assert any("success" in line for line in refused["message"]), refused
    got = await api.get(f"/request/{created.json()['data']['id']}")
    assert got.json()["subjects"][0]["identityStatus"] == "UNVERIFIED"
