"""Identity checks on the journey (CONTRACT 8): PLATFORM_KYC (an earlier success is reused),
PLATFORM_REVALIDATION (always a fresh check), ORGANIZATION_KYC (the organization reports its own
check), and a failed check ending the subject's path with no mandate. Walked over plain HTTP form
posts, against the development provider."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from sqlalchemy import Engine
from sqlmodel import col, select
from temporalio.client import Client

from core.temporal import request_handle
from store import audit
from store.db import read_session
from store.tables import AuditRecord, Subject, WebhookEvent
from tests.helpers import SignedClient, assert_error_shape, policy_request
from tests.journey_helpers import LINK_RE, SESSION_RE, code_in, message_for
from tests.test_workflow import refused
from workflows.ids import webhook_workflow_id
from workflows.messages import DecisionInput, DecisionResult


async def open_request(api: SignedClient, level: str, contact: str = "ana@example.com",
                       **overrides: Any) -> dict[str, Any]:
    created = await api.post("/request", policy_request(securityLevel=level, contacts=[contact], **overrides))
    assert created.status_code == 201, created.text
    data: dict[str, Any] = created.json()["data"]
    subject = data["subjects"][0]["id"].rsplit(":", 1)[1]
    entry = await message_for(data["id"], subject)
    [path] = LINK_RE.findall(entry.text)
    return {**data, "subject": subject, "path": path, "code": code_in(entry.text),
            "credential": data["credentials"][0]["id"]}


async def enter_code(http: httpx.AsyncClient, req: dict[str, Any]) -> tuple[httpx.Response, str]:
    page = await http.post(f"{req['path']}/otp", data={"code": req["code"]})
    assert page.status_code == 200, page.text
    [session] = SESSION_RE.findall(page.text)
    return page, session


def is_kyc_step(page: httpx.Response, req: dict[str, Any]) -> bool:
    return f'action="{req["path"]}/kyc"' in page.text and "decision-" not in page.text


def is_review_step(page: httpx.Response, req: dict[str, Any]) -> bool:
    return f'name="decision-{req["credential"]}"' in page.text


async def platform_check(http: httpx.AsyncClient, req: dict[str, Any], session: str,
                         document: str = "pass", selfie: str = "pass") -> httpx.Response:
    """Start the check from the page, pass or fail it on the development provider's page, and
    follow the subject back; the page they land on."""
    started = await http.post(f"{req['path']}/kyc", data={"session": session})
    assert started.status_code == 303, started.text
    provider_page = await http.get(started.headers["location"])
    assert provider_page.status_code == 200 and "Identity document" in provider_page.text
    check_path = started.headers["location"].split("?")[0].removeprefix("https://mandatum.test")
    [return_url] = re.findall(r'name="return" value="([^"]+)"', provider_page.text)
    finished = await http.post(check_path, data={"document": document, "selfie": selfie,
                                                 "return": return_url.replace("&amp;", "&")})
    assert finished.status_code == 303, finished.text
    return await http.get(finished.headers["location"])


async def accept(http: httpx.AsyncClient, req: dict[str, Any], session: str) -> httpx.Response:
    return await http.post(f"{req['path']}/decide", data={"session": session,
                                                           f"decision-{req['credential']}": "accept"})


async def credential_of(api: SignedClient, req: dict[str, Any]) -> dict[str, Any]:
    got = await api.get(f"/request/{req['id']}")
    return dict(got.json()["data"]["credentials"][0])


def events_of(engine: Engine, request_id: str) -> list[WebhookEvent]:
    with read_session(engine) as session:
        return list(session.exec(select(WebhookEvent).where(WebhookEvent.request_id == request_id)
                                 .order_by(col(WebhookEvent.created_at))))


def audit_types(engine: Engine, request_id: str) -> list[str]:
    with read_session(engine) as session:
        return [r.type for r in session.exec(select(AuditRecord).where(AuditRecord.request_id == request_id)
                                             .order_by(col(AuditRecord.seq)))]


async def test_platform_kyc_comes_before_the_decision_and_is_reused(
    api: SignedClient, http: httpx.AsyncClient, temporal: Client, engine: Engine,
) -> None:
    req = await open_request(api, "PLATFORM_KYC")
    page, session = await enter_code(http, req)
    assert is_kyc_step(page, req)
    # the decision cannot be made before the check: not by forging the form, not by the update
    forged = await accept(http, req, session)
    assert is_kyc_step(forged, req)
    handle = request_handle(temporal, req["id"])
    early = await refused(handle.execute_update("decide", DecisionInput(
        subject_id=req["subject"], credential_id=req["credential"], accept=True, channel="email",
        surface="hosted"), result_type=DecisionResult))
    assert early.type == "identity_required"
    assert (await credential_of(api, req))["status"] == "PENDING"

    back = await platform_check(http, req, session)
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
    child = await temporal.get_workflow_handle(webhook_workflow_id(credential.id)).fetch_history()
    [started] = child.events[0].workflow_execution_started_event_attributes.input.payloads
    assert json.loads(started.data) == {"event_id": credential.id, "after": identity.id}
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
    api: SignedClient, http: httpx.AsyncClient, engine: Engine,
) -> None:
    req = await open_request(api, "PLATFORM_REVALIDATION", contact="failing@example.com")
    _, session = await enter_code(http, req)
    back = await platform_check(http, req, session, selfie="fail")
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
    # the link now shows the outcome; a new code changes nothing
    again = await http.post(f"{req['path']}/otp", data={"code": req["code"]})
    assert "decision-" not in again.text


async def test_organization_kyc_waits_for_the_organizations_own_check(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine,
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
    assert_error_shape(await api.post("/subject/identity", {"contact": "nobody@example.com",
                                                            "success": True}), 404)
    reported = await api.post("/subject/identity", {"contact": "Org-Checked@example.com", "success": True,
                                                    "message": "Passport seen at the branch"})
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
