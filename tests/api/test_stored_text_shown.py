"""What was stored before the text rule, or what nobody could refuse, is shown escaped, never raw
(issue 30, item 5): a revocation reason holding a line break, a fake log line and U+202E reaches
the organization's mandate page, the operators' timeline and the document's PDF as visible
``\\u202e`` markers (``api.pages.shown``, ``api.pdf``; the PDF, where a line feed would start a
line, shows it as ``\\u000a``, a page keeps it, where it is a space); executionParams an agent
sends at verify are recorded as sent and shown the same way. A PDF kept before the change is
rendered anew (its digest names the rendering)."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from dataclasses import asdict
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, update
from sqlmodel import col
from temporalio.client import Client

from api import pdf
from api.app import create_app
from api.routes.mandates import entity_of, sheet_of
from core.actors import Actor
from core.kinds import MemberRole
from core.settings import Settings
from services import mandates
from services.context import Context
from store import pdfs
from store.db import write_session
from store.tables import Credential
from tests.support.api_client import Credentials, SignedClient, policy_request
from tests.support.dashboard import log_in_as, page_client
from tests.support.documents import LEASE, pdf_text
from tests.support.mandates import issued_mandate
from tests.support.operators import log_in_as_operator
from tests.support.presentations import presented, verify

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]

REASON = "lost\n12:00 REVOKED by root \u202egnp.exe"
ESCAPED = "lost\\u000a12:00 REVOKED by root \\u202egnp.exe"  # the PDF: a line feed would break the line
ON_PAGE = "lost\n12:00 REVOKED by root \\u202egnp.exe"  # in HTML a line feed is a space
RAW = ("\u202e", "\u2066", "\x1b")


def stored_before_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The revocation as the service took it before the rule: the check is switched off."""
    monkeypatch.setattr(mandates, "text_problem", lambda *_, **__: None, raising=False)


def no_raw(page: str) -> None:
    assert not [c for c in RAW if c in page], [c for c in RAW if c in page]


def json_blocks(page: str) -> list[Any]:
    return [json.loads(html.unescape(m)) for m in re.findall(r'<pre class="json">(.*?)</pre>', page, re.S)]


def digest_before_the_change(sheet: pdf.CredentialSheet) -> str:
    """``api.pdf.sheet_digest`` as it was before renderings were numbered."""
    shown = json.dumps(asdict(sheet), sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(shown.encode()).hexdigest()


async def test_a_stored_reason_is_escaped_on_every_page_and_in_the_pdf(
    settings: Settings,
    temporal: Client,
    ctx: Context,
    org: Credentials,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = create_app(settings, temporal=temporal)
    try:
        async with page_client(app) as api_http, page_client(app) as member, page_client(app) as operator:
            api = SignedClient(api_http, org)
            lease = await issued_mandate(api, temporal, credentials=[LEASE])
            with monkeypatch.context() as patched:
                stored_before_the_rule(patched)
                await mandates.revoke(
                    ctx, Actor.shell_operator("tests"), org.organization_id, lease["id"], REASON
                )
            record = await mandates.credential_detail(ctx, org.organization_id, lease["id"])
            assert record.credential.revocation_reason == REASON  # stored as it came
            sheet = sheet_of(settings, record, entity_of(record))
            kept = b"%PDF-1.3 rendered before the rule, with the raw reason"
            pdfs.keep_pdf(engine, record.credential.id, digest_before_the_change(sheet), kept)

            got = await api.get(f"/credential/{record.credential.id}", params={"includePdf": "true"})
            assert got.status_code == 200, got.text
            assert base64.b64decode(got.json()["pdf"]) != kept
            text = pdf_text(got.json()["pdf"])
            assert f"reason: {ESCAPED}" in text.replace("\n", " ")
            no_raw(text)

            await log_in_as(member, ctx, org, MemberRole.SUPPORT, "support")
            page = (await member.get(f"/dashboard/mandates/{record.credential.id}")).text
            assert ON_PAGE in page
            no_raw(page)
            receipt = record.credential.revocation_receipt
            assert receipt is not None and receipt in json_blocks(page)  # the signed receipt, unchanged

            await log_in_as_operator(operator, ctx, "ops")
            timeline = await operator.get(f"/dashboard/operators/requests/{lease['requestId']}")
            assert timeline.status_code == 200 and ON_PAGE in timeline.text
            no_raw(timeline.text)
    finally:
        app.state.ctx.engine.dispose()


async def test_execution_params_sent_at_verify_are_recorded_as_sent_and_shown_escaped(
    settings: Settings, temporal: Client, ctx: Context, org: Credentials
) -> None:
    app = create_app(settings, temporal=temporal)
    try:
        async with page_client(app) as api_http, page_client(app) as member:
            api = SignedClient(api_http, org)
            mandate = await issued_mandate(api, temporal)
            payee = "Bob\u202e\u2066 12:00 ALLOWED"
            vp = (await presented(api, mandate["id"]))["presentation"]
            allowed = await verify(api, vp, {"amount": 10, "payee": payee})
            assert allowed.status_code == 200, allowed.text
            vp = (await presented(api, mandate["id"]))["presentation"]
            denied = await verify(api, vp, {"amount": "10\u202e", "payee": payee})
            assert denied.status_code == 403, denied.text
            activity = (await api.get("/activity", params={"type": ["VERIFY_ACCEPT", "VERIFY_DENY"]})).json()
            sent = [r["data"]["executionParams"]["payee"] for r in activity["data"]]
            assert sent == [payee, payee]  # recorded as the agent sent them

            await log_in_as(member, ctx, org, MemberRole.SUPPORT, "support")
            record = await mandates.credential_detail(ctx, org.organization_id, mandate["id"])
            page = (await member.get(f"/dashboard/mandates/{record.credential.id}")).text
            assert page.count('<article class="verification"') == 2
            no_raw(page)
            for path in (f"/dashboard/requests/{mandate['requestId']}", "/dashboard/activity"):
                no_raw((await member.get(path)).text)
    finally:
        app.state.ctx.engine.dispose()


async def test_what_the_subject_reads_is_escaped_when_it_was_stored_before_the_rule(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine
) -> None:
    created = await api.post("/request", policy_request(contacts=["dora@example.com"]))
    assert created.status_code == 201, created.text
    request = created.json()["data"]
    credential_id = request["credentials"][0]["id"]
    action = {
        **request["credentials"][0]["action"],
        "userParams": {"maxAmount": 1200, "payees": ["Ann\u202eEve"]},
    }
    with write_session(engine) as session:  # as a request stored before the rule would hold them
        session.execute(
            update(Credential)
            .where(col(Credential.id) == credential_id)
            .values(name="Rent \u2066payments\u2069", description="Monthly\u202e rent", action=action)
        )
    link = await api.get(f"/request/link/{request['id']}", params={"contact": "dora@example.com"})
    page = await http.get("/r/" + link.json()["data"]["url"].rsplit("/", 1)[1])
    assert page.status_code == 200, page.text
    for escaped in ("Rent \\u2066payments\\u2069", "Monthly\\u202e rent", "Ann\\u202eEve"):
        assert escaped in page.text, escaped
    no_raw(page.text)
