"""The trusted browser session (issue 36, ``iframe.cookie``; docs/adr/0019-trusted-browser-session.md):
opened after a confirmed code on a request that allows it, it lets the same browser skip the code
on a later request of the same organization to the same contact that allows it too, and nothing
else; revocable by the subject and the integrator; the code asked again at its end; never the
identity check the level requires. Walked over plain HTTP form posts with the real Temporal."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, update
from sqlmodel import col, select
from temporalio.client import Client

from api.routes.journey_trusted import TRUSTED_COOKIE, trusted_cookie
from core.kinds import Surface
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle
from store import audit, orgs
from store.db import read_session, utcnow, write_session
from store.tables import AuditRecord, CredentialRequest, Decision, TrustedSession
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, error_messages, policy_request
from tests.support.journey_messages import LINK_RE, SESSION_RE, code_in, journey_secrets, message_for
from tests.support.workflow import refused
from workflows.messages import DecisionInput, DecisionResult

COOKIE = TRUSTED_COOKIE[Surface.HOSTED]


def cookie_option(allow: Any = True, duration: Any = 7200) -> dict[str, Any]:
    return {"iframe": {"cookie": {"allow": allow, "duration": duration}}}


async def open_request(
    api: SignedClient, contact: str, level: str = "CONTACT", allow: bool = True, **overrides: Any
) -> dict[str, Any]:
    body = policy_request(securityLevel=level, contacts=[contact], **overrides)
    if allow:
        body.update(cookie_option())
    created = await api.post("/request", body)
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


@asynccontextmanager
async def browser(http: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """A browser of its own (its own cookie jar) on the test app."""
    async with httpx.AsyncClient(transport=http._transport, base_url=str(http.base_url)) as client:
        yield client


def is_code_step(page: httpx.Response, req: dict[str, Any]) -> bool:
    return f'action="{req["path"]}/otp"' in page.text and "decision-" not in page.text


def is_review_step(page: httpx.Response, req: dict[str, Any]) -> bool:
    return f'name="decision-{req["credential"]}"' in page.text


async def enter_code(client: httpx.AsyncClient, req: dict[str, Any]) -> httpx.Response:
    page = await client.post(f"{req['path']}/otp", data={"code": req["code"]})
    assert page.status_code == 200, page.text
    return page


def page_session(page: httpx.Response) -> str:
    """The page session its forms carry (the decision's and "forget this browser"'s: the same)."""
    found = set(SESSION_RE.findall(page.text))
    assert len(found) == 1, found
    return found.pop()


def sessions(engine: Engine, subject_id: str) -> list[TrustedSession]:
    with read_session(engine) as session:
        return list(
            session.exec(
                select(TrustedSession)
                .where(TrustedSession.subject_id == subject_id)
                .order_by(col(TrustedSession.created_at))
            )
        )


def records(engine: Engine, org_id: str, kind: str) -> list[AuditRecord]:
    with read_session(engine) as session:
        return list(
            session.exec(
                select(AuditRecord)
                .where(AuditRecord.organization_id == org_id, AuditRecord.type == kind)
                .order_by(col(AuditRecord.seq))
            )
        )


async def trusted_browser(
    http: httpx.AsyncClient, api: SignedClient, contact: str
) -> tuple[dict[str, Any], str]:
    """A request allowing the session whose code was entered in ``http``'s browser: the request and
    the cookie's token."""
    req = await open_request(api, contact)
    page = await enter_code(http, req)
    assert is_review_step(page, req)
    token = http.cookies.get(COOKIE)
    assert token is not None
    return req, token


async def test_the_code_opens_a_session_and_a_later_request_skips_the_code(
    http: httpx.AsyncClient, api: SignedClient, engine: Engine, temporal: Client
) -> None:
    async with browser(http) as ana:
        first = await open_request(api, "ana.trusted@example.com")
        page = await enter_code(ana, first)
        assert is_review_step(page, first)
        assert "This browser is remembered for 2 h" in page.text and "Forget this browser" in page.text
        [set_cookie] = page.headers.get_list("set-cookie")
        token = ana.cookies[COOKIE]
        assert set_cookie == f"{COOKIE}={token}; Max-Age=7200; Path=/r/; HttpOnly; SameSite=Lax; Secure"

        # stored: a keyed hash of the token, never the token, for 7200 s, with its record
        [row] = sessions(engine, first["subject"])
        assert row.token_hash == journey_secrets().trusted_session_hash(token) != token
        assert (row.expires_at - row.created_at) == timedelta(seconds=7200)
        assert (row.organization_id, row.request_id, row.surface) == (
            api.creds.organization_id,
            first["id"],
            "hosted",
        )
        assert row.revoked_at is None and row.last_used_at is None
        [opened] = records(engine, api.creds.organization_id, audit.TRUSTED_SESSION_OPENED)
        assert opened.data["sessionId"] == row.id and opened.data["seconds"] == 7200
        with read_session(engine) as db:
            rows = [*db.exec(select(AuditRecord)), *db.exec(select(TrustedSession))]
            everything = [json.dumps(r.model_dump(mode="json")) for r in rows]
        assert not any(token in text for text in everything)

        # a later request of the organization to the same contact: straight to the decision
        second = await open_request(api, "ana.trusted@example.com")
        page = await ana.get(second["path"])
        assert page.status_code == 200 and is_review_step(page, second), page.text
        assert "no code was needed this time" in page.text
        assert not page.headers.get_list("set-cookie")  # the session is not renewed by its use
        session = page_session(page)
        done = await ana.post(
            f"{second['path']}/decide",
            data={"session": session, f"decision-{second['credential']}": "accept"},
        )
        assert done.status_code == 200 and "You approved: Rent payments." in done.text, done.text

    # the decision's record and row say a trusted session stood in for the code, and which one
    with read_session(engine) as s:
        [decision] = s.exec(select(Decision).where(Decision.credential_id == second["credential"]))
    assert decision.channel == "trusted"
    [accepted] = [
        r
        for r in records(engine, api.creds.organization_id, audit.DECISION_ACCEPT)
        if r.request_id == second["id"]
    ]
    assert accepted.data["channel"] == "trusted" and accepted.data["trustedSessionId"] == row.id
    assert (await api.get(f"/request/{second['id']}")).json()["credentials"][0]["status"] == "ACTIVE"
    [used] = sessions(engine, first["subject"])
    assert used.last_used_at is not None
    # the workflow's history holds the token's keyed hash, never the token
    history = (await request_handle(temporal, second["id"]).fetch_history()).to_json()
    assert token not in history and "verify_session" in history


async def test_the_code_is_asked_when_no_valid_session_stands_in(
    http: httpx.AsyncClient,
    api: SignedClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    temporal: Client,
) -> None:
    async with browser(http) as ana:
        first, _ = await trusted_browser(ana, api, "bea.trusted@example.com")
        # reloading the request whose code opened the session: no code asked, the code's channel kept
        again = await ana.get(first["path"])
        assert is_review_step(again, first)
        choice = {f"decision-{first['credential']}": "accept"}
        decided = await ana.post(f"{first['path']}/decide", data={"session": page_session(again), **choice})
        assert decided.status_code == 200, decided.text
        with read_session(engine) as db:
            [decision] = db.exec(select(Decision).where(Decision.credential_id == first["credential"]))
        assert decision.channel == "email"

        # another browser (no cookie)
        later = await open_request(api, "bea.trusted@example.com")
        async with browser(http) as stranger:
            assert is_code_step(await stranger.get(later["path"]), later)
            # a forged cookie: well formed, unknown
            stranger.cookies.set(COOKIE, "A" * 43, domain="mandatum.test", path="/r/")
            assert is_code_step(await stranger.get(later["path"]), later)
        # a cookie that opens nothing never reaches the request's workflow
        history = (await request_handle(temporal, later["id"]).fetch_history()).to_json()
        assert "verify_session" not in history
        # another contact of the same organization
        other_contact = await open_request(api, "carl.trusted@example.com")
        assert is_code_step(await ana.get(other_contact["path"]), other_contact)
        # the same contact in another organization
        other_api = SignedClient(http, new_org(engine, cipher, settings))
        other_org = await open_request(other_api, "bea.trusted@example.com")
        assert is_code_step(await ana.get(other_org["path"]), other_org)
        # a request of the same organization to the same contact that does not allow it
        without = await open_request(api, "bea.trusted@example.com", allow=False)
        assert is_code_step(await ana.get(without["path"]), without)
        # ...and its code opens no session (the cookie stays as it was)
        before = ana.cookies[COOKIE]
        page = await enter_code(ana, without)
        assert not page.headers.get_list("set-cookie") and ana.cookies[COOKIE] == before
        assert "remembered" not in page.text
        # the one that allows it still skips the code
        assert is_review_step(await ana.get(later["path"]), later)


async def test_an_expired_session_asks_the_code_again(
    http: httpx.AsyncClient, api: SignedClient, engine: Engine
) -> None:
    async with browser(http) as ana:
        first, _ = await trusted_browser(ana, api, "dan.trusted@example.com")
        with write_session(engine) as session:
            session.execute(
                update(TrustedSession)
                .where(col(TrustedSession.subject_id) == first["subject"])
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
        later = await open_request(api, "dan.trusted@example.com")
        page = await ana.get(later["path"])
        assert is_code_step(page, later)
        # the code opens a new session in place of the old one
        page = await enter_code(ana, later)
        assert "This browser is remembered for 2 h" in page.text
        old, new = sessions(engine, first["subject"])
        assert new.revoked_at is None and old.revoked_by == f"subject:{first['subject']}"


async def test_the_subject_forgets_the_browser(
    http: httpx.AsyncClient, api: SignedClient, engine: Engine
) -> None:
    async with browser(http) as ana:
        first, token = await trusted_browser(ana, api, "eve.trusted@example.com")
        later = await open_request(api, "eve.trusted@example.com")
        page = await ana.get(later["path"])
        assert is_review_step(page, later)
        session = page_session(page)
        forgotten = await ana.post(f"{later['path']}/forget", data={"session": session})
        assert forgotten.status_code == 200
        assert "This browser is forgotten" in forgotten.text and is_review_step(forgotten, later)
        [cleared] = forgotten.headers.get_list("set-cookie")
        assert cleared.startswith(f"{COOKIE}=; Max-Age=0; Path=/r/")
        assert ana.cookies.get(COOKIE) is None
        [row] = sessions(engine, first["subject"])
        assert row.revoked_at is not None and row.revoked_by == f"subject:{first['subject']}"
        [revoked] = records(engine, api.creds.organization_id, audit.TRUSTED_SESSION_REVOKED)
        assert revoked.data["sessionId"] == row.id
        # even with the token brought back, the code is asked
        ana.cookies.set(COOKIE, token, domain="mandatum.test", path="/r/")
        third = await open_request(api, "eve.trusted@example.com")
        assert is_code_step(await ana.get(third["path"]), third)


async def test_the_integrator_revokes_a_subjects_sessions(
    http: httpx.AsyncClient,
    api: SignedClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    async with browser(http) as ana, browser(http) as phone:
        first, _ = await trusted_browser(ana, api, "fay.trusted@example.com")
        second = await open_request(api, "fay.trusted@example.com")
        await enter_code(phone, second)  # a second browser of the same subject
        ids = [s.id for s in sessions(engine, first["subject"])]
        # another organization cannot touch them: its subject is not found
        other = SignedClient(http, new_org(engine, cipher, settings))
        assert_error_shape(
            await other.delete("/subject/sessions", params={"contact": "fay.trusted@example.com"}), 404
        )
        assert_error_shape(
            await api.delete("/subject/sessions", params={"contact": "nobody@example.com"}), 404
        )
        assert_error_shape(await api.delete("/subject/sessions"), 400)
        assert_error_shape(
            await api.delete(
                "/subject/sessions", params={"contact": "fay.trusted@example.com", "id": "did:x:y"}
            ),
            400,
        )
        assert_error_shape(await api.delete("/subject/sessions", params={"contact": "not a contact"}), 400)
        assert all(s.revoked_at is None for s in sessions(engine, first["subject"]))

        gone = await api.delete("/subject/sessions", params={"contact": "FAY.trusted@example.com"})
        assert gone.status_code == 200, gone.text
        assert gone.json() == {"success": True, "revoked": ids}
        revoked = sessions(engine, first["subject"])
        assert all(s.revoked_by == f"apiKey:{api.creds.key_id}" for s in revoked)
        third = await open_request(api, "fay.trusted@example.com")
        assert is_code_step(await ana.get(third["path"]), third)
        assert is_code_step(await phone.get(third["path"]), third)
        # by DID too; nothing left to revoke
        again = await api.delete("/subject/sessions", params={"id": first["subjects"][0]["id"]})
        assert again.status_code == 200 and again.json()["revoked"] == []


async def test_a_session_skips_only_the_code_never_the_identity_check(
    http: httpx.AsyncClient, api: SignedClient, temporal: Client
) -> None:
    async with browser(http) as ana:
        await trusted_browser(ana, api, "gil.trusted@example.com")
        kyc = await open_request(api, "gil.trusted@example.com", level="PLATFORM_REVALIDATION")
        page = await ana.get(kyc["path"])
        assert f'action="{kyc["path"]}/kyc"' in page.text and "decision-" not in page.text
        assert "no code was needed this time" in page.text
        early = await refused(
            request_handle(temporal, kyc["id"]).execute_update(
                "decide",
                DecisionInput(
                    subject_id=kyc["subject"], credential_id=kyc["credential"], accept=True, surface="hosted"
                ),
                result_type=DecisionResult,
            )
        )
        assert early.type == "identity_required"


@pytest.mark.parametrize(
    ("cookie", "message"),
    [
        ({"allow": True, "duration": 3599}, "iframe.cookie.duration"),
        ({"allow": True, "duration": 86401}, "iframe.cookie.duration"),
        ({"allow": True, "duration": 7200.5}, "iframe.cookie.duration"),
        ({"allow": True, "duration": "7200"}, "iframe.cookie.duration"),
        ({"allow": True, "duration": True}, "iframe.cookie.duration"),
        ({"allow": "true", "duration": 7200}, "iframe.cookie.allow"),
        ({"allow": 1}, "iframe.cookie.allow"),
        ({"allow": True, "lifetime": 7200}, "iframe.cookie.lifetime"),
        ({"allow": False, "duration": 0}, "iframe.cookie.duration"),
    ],
)
async def test_a_bad_cookie_option_is_refused_and_nothing_stored(
    api: SignedClient, engine: Engine, cookie: dict[str, Any], message: str
) -> None:
    resp = await api.post("/request", policy_request(iframe={"cookie": cookie}))
    messages = error_messages(resp, 400)
    assert any(message in m for m in messages), messages
    with read_session(engine) as session:
        assert not list(
            session.exec(
                select(CredentialRequest).where(
                    CredentialRequest.organization_id == api.creds.organization_id
                )
            )
        )


@pytest.mark.parametrize(
    ("cookie", "stored"),
    [
        (None, None),
        ({}, None),
        ({"allow": False, "duration": 7200}, None),
        ({"allow": None}, None),
        ({"allow": True}, 3600),
        ({"allow": True, "duration": None}, 3600),
        ({"allow": True, "duration": 3600}, 3600),
        ({"allow": True, "duration": 86400}, 86400),
        ({"allow": True, "duration": 7200.0}, 7200),
    ],
)
async def test_the_allowed_lifetime_is_stored_with_the_request(
    api: SignedClient, engine: Engine, cookie: dict[str, Any] | None, stored: int | None
) -> None:
    resp = await api.post("/request", policy_request(iframe={"cookie": cookie}))
    assert resp.status_code == 201, resp.text
    with read_session(engine) as session:
        row = session.get(CredentialRequest, resp.json()["data"]["id"])
    assert row is not None and row.trusted_session_seconds == stored


async def test_inside_the_iframe_the_session_is_its_own_partitioned_cookie(
    http: httpx.AsyncClient, api: SignedClient, engine: Engine
) -> None:
    parent = "https://app.example.com"
    orgs.set_frame_origins(engine, api.creds.organization_id, [parent], False, actor="operator:tests")
    framing = {"surface": "iframe", "parent": parent}
    async with browser(http) as ana:
        first = await open_request(api, "hal.trusted@example.com")
        page = await ana.post(f"{first['path']}/otp", data={"code": first["code"], **framing})
        assert is_review_step(page, first), page.text
        [set_cookie] = page.headers.get_list("set-cookie")
        token = ana.cookies[TRUSTED_COOKIE[Surface.IFRAME]]
        assert set_cookie == (
            f"mandatum_trusted_frame={token}; Max-Age=7200; Path=/r/; HttpOnly; "
            "SameSite=None; Secure; Partitioned"
        )
        [row] = sessions(engine, first["subject"])
        assert row.surface == "iframe"
        later = await open_request(api, "hal.trusted@example.com")
        assert is_review_step(await ana.get(later["path"], params=framing), later)
        # the frame's cookie is not the hosted page's: the hosted page asks the code
        assert is_code_step(await ana.get(later["path"]), later)


def test_the_cookie_inside_an_iframe_is_partitioned() -> None:
    token = journey_secrets().trusted_session_token()
    assert trusted_cookie("iframe", token, False, 3600) == (
        f"mandatum_trusted_frame={token}; Max-Age=3600; Path=/r/; HttpOnly; "
        "SameSite=None; Secure; Partitioned"
    )
    assert trusted_cookie("hosted", token, False, 3600).endswith("SameSite=Lax")
    with pytest.raises(ValueError):
        trusted_cookie("hosted", "x; Domain=evil.example", True, 3600)
