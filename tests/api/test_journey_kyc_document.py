"""An identity check's document matched with what the organization expects (issue 36): a request's
``docId`` for the subject and the identity it imported (``POST /user``). A document that does not
match fails the check like any failed check (no mandate, an ``identity`` event saying so, never
the expected value); one that matches, written differently (case, spaces, dashes), passes."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest_asyncio
from sqlalchemy import Engine
from sqlmodel import col, select
from temporalio.client import Client

from core.settings import Settings
from store.db import read_session
from store.tables import WebhookEvent
from tests.support.api_client import SignedClient, policy_request
from tests.support.development import development_client
from tests.support.journey_messages import LINK_RE, SESSION_RE, code_in, message_for

IDENTITY = {
    "fullName": "Ana Maria Silva",
    "birth": "1990-04-01",
    "docId": "PT-778899",
    "countryAlpha3": "PRT",
}


async def open_request(api: SignedClient, level: str, contact: str | dict[str, Any]) -> dict[str, Any]:
    """A request of one subject at ``level``, with its link and code (as test_journey_kyc's)."""
    created = await api.post("/request", policy_request(securityLevel=level, contacts=[contact]))
    assert created.status_code == 201, created.text
    data: dict[str, Any] = created.json()["data"]
    subject = data["subjects"][0]["id"].rsplit(":", 1)[1]
    entry = await message_for(data["id"], subject)
    [path] = LINK_RE.findall(entry.text)
    credential = data["credentials"][0]["id"]
    return {**data, "subject": subject, "path": path, "code": code_in(entry.text), "credential": credential}


async def enter_code(http: httpx.AsyncClient, req: dict[str, Any]) -> tuple[httpx.Response, str]:
    page = await http.post(f"{req['path']}/otp", data={"code": req["code"]})
    assert page.status_code == 200, page.text
    [session] = SESSION_RE.findall(page.text)
    return page, session


def is_review_step(page: httpx.Response, req: dict[str, Any]) -> bool:
    return f'name="decision-{req["credential"]}"' in page.text


async def credential_of(api: SignedClient, req: dict[str, Any]) -> dict[str, Any]:
    return dict((await api.get(f"/request/{req['id']}")).json()["credentials"][0])


def events_of(engine: Engine, request_id: str) -> list[WebhookEvent]:
    with read_session(engine) as session:
        return list(
            session.exec(
                select(WebhookEvent)
                .where(WebhookEvent.request_id == request_id)
                .order_by(col(WebhookEvent.created_at))
            )
        )


@pytest_asyncio.fixture
async def provider(settings: Settings, temporal: Client) -> AsyncIterator[httpx.AsyncClient]:
    async with development_client(settings, temporal) as client:
        yield client


async def checked(
    http: httpx.AsyncClient, provider: httpx.AsyncClient, req: dict[str, Any], session: str, **document: str
) -> httpx.Response:
    """The check passed on the provider's page, its document saying ``document``; the page the
    subject comes back to."""
    started = await http.post(f"{req['path']}/kyc", data={"session": session})
    assert started.status_code == 303, started.text
    page = await provider.get(started.headers["location"])
    assert 'name="documentNumber"' in page.text
    [return_url] = re.findall(r'name="return" value="([^"]+)"', page.text)
    check_path = started.headers["location"].split("?")[0].removeprefix("https://mandatum.test")
    form = {"document": "pass", "selfie": "pass", "return": return_url.replace("&amp;", "&"), **document}
    finished = await provider.post(check_path, data=form)
    assert finished.status_code == 303, finished.text
    return await http.get(finished.headers["location"])


def mailbox() -> str:
    return f"kyc-{uuid.uuid4().hex[:10]}@example.com"


async def test_another_document_than_the_requests_doc_id_fails_the_check(
    api: SignedClient, http: httpx.AsyncClient, provider: httpx.AsyncClient, engine: Engine
) -> None:
    req = await open_request(api, "PLATFORM_REVALIDATION", {"contact": mailbox(), "docId": "AB 123 456"})
    _, session = await enter_code(http, req)
    back = await checked(http, provider, req, session, documentNumber="AB 999 999")
    assert back.status_code == 403 and "Identity not verified" in back.text
    cred = await credential_of(api, req)
    assert cred["status"] == "REJECTED" and [d["accepted"] for d in cred["decisions"]] == [False]
    identity = events_of(engine, req["id"])[0]
    assert identity.event_type == "identity" and identity.payload["decision"]["success"] is False
    message = identity.payload["decision"]["message"]
    assert message.startswith("The identity document does not match") and "docId" in message
    assert "123" not in message and "999" not in message


async def test_no_document_number_when_one_is_expected_fails_too(
    api: SignedClient, http: httpx.AsyncClient, provider: httpx.AsyncClient, engine: Engine
) -> None:
    req = await open_request(api, "PLATFORM_REVALIDATION", {"contact": mailbox(), "docId": "AB123456"})
    _, session = await enter_code(http, req)
    back = await checked(http, provider, req, session)
    assert back.status_code == 403
    assert events_of(engine, req["id"])[0].payload["decision"]["success"] is False


async def test_the_same_document_written_differently_passes(
    api: SignedClient, http: httpx.AsyncClient, provider: httpx.AsyncClient, engine: Engine
) -> None:
    req = await open_request(api, "PLATFORM_REVALIDATION", {"contact": mailbox(), "docId": "ab 123-456"})
    _, session = await enter_code(http, req)
    back = await checked(http, provider, req, session, documentNumber="AB123456")
    assert is_review_step(back, req), back.text
    [session] = SESSION_RE.findall(back.text)
    events = events_of(engine, req["id"])
    assert events[0].payload["decision"] == {**events[0].payload["decision"], "success": True}


async def test_an_imported_identity_is_matched_by_document_name_birth_and_country(
    api: SignedClient, http: httpx.AsyncClient, provider: httpx.AsyncClient, engine: Engine
) -> None:
    good, bad = mailbox(), mailbox()
    made = await api.post(
        "/user", [{"contact": good, "identity": IDENTITY}, {"contact": bad, "identity": IDENTITY}]
    )
    assert [i["status"] for i in made.json()] == [201, 201]
    same = {
        "documentNumber": "pt778899",
        "fullName": "ANA  MARIA SÍLVA",
        "birth": "1990-04-01",
        "countryAlpha3": "prt",
    }

    req = await open_request(api, "PLATFORM_REVALIDATION", contact=good)
    _, session = await enter_code(http, req)
    assert is_review_step(await checked(http, provider, req, session, **same), req)

    req = await open_request(api, "PLATFORM_REVALIDATION", contact=bad)
    _, session = await enter_code(http, req)
    back = await checked(http, provider, req, session, **{**same, "birth": "1991-04-01", "fullName": "Rui"})
    assert back.status_code == 403
    message = events_of(engine, req["id"])[0].payload["decision"]["message"]
    assert "identity.fullName" in message and "identity.birth" in message and "identity.docId" not in message
    assert "1990" not in message and "Silva" not in message


async def test_a_request_naming_the_document_does_not_reuse_an_earlier_check(
    api: SignedClient, http: httpx.AsyncClient, provider: httpx.AsyncClient, engine: Engine
) -> None:
    contact = mailbox()
    first = await open_request(api, "PLATFORM_KYC", contact)
    _, session = await enter_code(http, first)
    assert is_review_step(await checked(http, provider, first, session), first)
    # an earlier success is reused by PLATFORM_KYC, unless the request names the document
    plain = await open_request(api, "PLATFORM_KYC", contact)
    page, _ = await enter_code(http, plain)
    assert is_review_step(page, plain)
    named = await open_request(api, "PLATFORM_KYC", {"contact": contact, "docId": "CD-42"})
    page, session = await enter_code(http, named)
    assert not is_review_step(page, named) and f'action="{named["path"]}/kyc"' in page.text
    assert (await checked(http, provider, named, session, documentNumber="cd 42")).status_code == 200
