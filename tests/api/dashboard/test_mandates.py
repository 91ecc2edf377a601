"""Mandates in the dashboard: every member (support here) lists the organization's credentials,
newest first, filtered by status and request and paged; opens one to read its subjects, its signed
W3C credential and its verifications with their evaluations and receipts; downloads a document's
PDF; revokes a mandate with a reason, recorded as theirs. Bad filters are a 400 on the page,
another organization's credential is not found on any page, and the revoke form needs the
session's CSRF token."""

from __future__ import annotations

import base64
import html
import json
import re
from copy import deepcopy
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from core.actors import Actor
from core.ids import urn
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import mandates
from services.context import Context
from store import audit
from tests.conftest import new_org
from tests.support.api_client import Credentials, SignedClient
from tests.support.audit import chain, issued_mandate, new_request
from tests.support.dashboard import log_in_as, page_client
from tests.support.documents import LEASE, pdf_text
from tests.support.mandates import issued_mandate as accepted_over_the_api
from tests.support.presentations import GOOD, checked, presented, verify

pytestmark = pytest.mark.usefixtures("no_server_errors")


def _json_blocks(page: str) -> list[Any]:
    """Every pretty-printed JSON document of a page, parsed back."""
    return [json.loads(html.unescape(m)) for m in re.findall(r'<pre class="json">(.*?)</pre>', page, re.S)]


def _content(page: str) -> str:
    """A page's main content without its forms' CSRF tokens (they differ per page)."""
    main = page[page.index("<main") : page.index("</main>")]
    return re.sub(r'name="csrf" value="[^"]+"', "", main)


def _listed(page: str) -> list[str]:
    """The credential ids a list page links to, in order."""
    return re.findall(r'<a href="/dashboard/mandates/([0-9a-f]{24})">', page)


async def test_the_list_is_newest_first_filtered_and_paged(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    first = issued_mandate(engine, cipher, settings, org.organization_id)
    second = issued_mandate(engine, cipher, settings, org.organization_id)
    pending = new_request(engine, org.organization_id, ("bea@example.com",))
    await mandates.revoke(ctx, Actor.shell_operator("tests"), org.organization_id, first.mandate_id, "lost")
    others = issued_mandate(engine, cipher, settings, new_org(engine, cipher, settings).organization_id)
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        everything = await browser.get("/dashboard/mandates")
        assert everything.status_code == 200 and "3 credentials" in everything.text
        pending_id = pending.credentials[0].id
        assert _listed(everything.text) == [pending_id, second.credential_id, first.credential_id]
        assert "bea@example.com" in everything.text and "ana@example.com" in everything.text
        assert f'href="/dashboard/requests/{first.request_id}"' in everything.text
        assert others.credential_id not in everything.text and others.request_id not in everything.text

        revoked = await browser.get("/dashboard/mandates", params={"status": "REVOKED"})
        assert _listed(revoked.text) == [first.credential_id] and "1 credential matching" in revoked.text
        assert '<option value="REVOKED" selected>' in revoked.text
        active = await browser.get("/dashboard/mandates", params={"status": "ACTIVE", "requestId": ""})
        assert _listed(active.text) == [second.credential_id]
        by_request = await browser.get("/dashboard/mandates", params={"requestId": f" {pending.request.id} "})
        assert _listed(by_request.text) == [pending_id]
        both = await browser.get(
            "/dashboard/mandates", params={"status": "ACTIVE", "requestId": first.request_id}
        )
        assert _listed(both.text) == [] and "No credential matches." in both.text
        theirs = await browser.get("/dashboard/mandates", params={"requestId": others.request_id})
        assert _listed(theirs.text) == [] and "0 credentials matching" in theirs.text

        for _ in range(mandates.PAGE_SIZE):  # 23 credentials, 21 of them drafts: two pages
            new_request(engine, org.organization_id)
        one = await browser.get("/dashboard/mandates", params={"status": ""})
        assert len(_listed(one.text)) == mandates.PAGE_SIZE and "Page 1 of 2" in one.text
        assert 'href="/dashboard/mandates?page=2"' in one.text and "Previous page" not in one.text
        two = await browser.get("/dashboard/mandates", params={"page": "2"})
        assert _listed(two.text) == [pending_id, second.credential_id, first.credential_id]
        assert 'href="/dashboard/mandates"' in two.text and "Next page" not in two.text
        filtered = await browser.get("/dashboard/mandates", params={"status": "DRAFT", "page": "2"})
        assert _listed(filtered.text) == [pending_id]  # the filters are kept in the links
        assert 'href="/dashboard/mandates?status=DRAFT"' in filtered.text
        past = await browser.get("/dashboard/mandates", params={"page": "9"})
        assert past.status_code == 200 and _listed(past.text) == [] and "past the end" in past.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"status": "active"}, "status 'active' is not a credential status: one of DRAFT, PENDING, ACTIVE"),
        ({"status": "<b>ACTIVE</b>"}, "status '<b>ACTIVE</b>' is not a credential status"),
        ({"requestId": "A" * 24}, f"requestId '{'A' * 24}' is not a request id"),
        ({"requestId": "0" * 25}, "is not a request id: 24 lower-case hexadecimal characters"),
        ({"requestId": "urn:via:credential:x"}, "requestId 'urn:via:credential:x' is not a request id"),
        ({"page": "0"}, "page '0' is not a page number from 1 to 100000"),
        ({"page": "-1"}, "page '-1' is not a page number"),
        ({"page": "1e3"}, "page '1e3' is not a page number"),
        ({"page": "٣"}, "is not a page number"),  # an Arabic-Indic 3: int() takes it, we do not
        ({"page": "100001"}, "page '100001' is not a page number"),
        ({"page": "9" * 200}, "is not a page number"),
    ],
)
async def test_a_bad_filter_is_a_400_on_the_page(
    app: FastAPI, ctx: Context, org: Credentials, params: dict[str, str], message: str
) -> None:
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        refused = await browser.get("/dashboard/mandates", params=params)
    assert refused.status_code == 400 and refused.headers["content-type"].startswith("text/html")
    assert "The filter was not applied" in refused.text and message in html.unescape(refused.text)
    assert "<b>ACTIVE" not in refused.text  # every value is escaped
    assert 'name="requestId"' in refused.text  # the form is there to correct it


async def test_every_bad_value_is_named_at_once(app: FastAPI, ctx: Context, org: Credentials) -> None:
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "developer")
        refused = await browser.get("/dashboard/mandates?status=x&requestId=y&page=z")
    problems = re.findall(r"<li>([^<]+)</li>", refused.text)
    assert refused.status_code == 400 and [p.split(" ", 1)[0] for p in problems] == [
        "status",
        "requestId",
        "page",
    ]


async def test_the_detail_shows_the_mandate_its_verifications_and_their_receipts(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    record = await mandates.credential_detail(ctx, org.organization_id, issued.credential_id)
    async with page_client(app) as browser, page_client(app) as api_http:
        agent = SignedClient(api_http, org)
        allowed = checked(
            await verify(agent, (await presented(agent, issued.mandate_id))["presentation"], GOOD),
            engine,
            settings,
        )
        over = {"amount": 5000, "payee": "Bob"}
        vp = (await presented(agent, issued.mandate_id))["presentation"]
        denied = checked(await verify(agent, vp, over), engine, settings, "rule_failed")
        forged = deepcopy(vp)  # a made-up VP claiming the mandate: not a verification of it
        forged["id"] = urn("presentation")
        made_up = checked(await verify(agent, forged, GOOD), engine, settings, "vp_signature_invalid")

        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        by_id = await browser.get(f"/dashboard/mandates/{issued.credential_id}")
        by_urn = await browser.get(f"/dashboard/mandates/{issued.mandate_id}")
        by_encoded_urn = await browser.get(f"/dashboard/mandates/{quote(issued.mandate_id, safe='')}")
    assert by_id.status_code == by_urn.status_code == by_encoded_urn.status_code == 200
    page = by_id.text
    for other in (by_urn.text, by_encoded_urn.text):  # the same credential
        assert _content(other) == _content(page)
    assert '<span class="status">ACTIVE</span>' in page and "accepted and issued" in page
    assert f"<code>{issued.mandate_id}</code>" in page
    assert f'href="/dashboard/requests/{issued.request_id}"' in page
    assert "ana@example.com</strong>: accepted" in page and f"subjects:{issued.subject_id}" in page
    action = record.credential.action or {}
    assert f"<code>{action['id']}</code>" in page and f"<code>{action['version']}</code>" in page
    assert "<dt>maxAmount</dt><dd><code>1200</code></dd>" in page
    assert "Download the PDF" not in page  # a mandate has no PDF
    assert 'action="/dashboard/mandates/' + issued.credential_id + '/revoke"' in page

    receipts = [denied["receipt"], allowed["receipt"]]  # newest first
    blocks = _json_blocks(page)
    assert blocks[: len(receipts)] == receipts  # each receipt as stored, signed
    assert blocks[len(receipts)] == record.credential.w3c_credential  # then the credential
    assert blocks[len(receipts) + 1] == record.credential.document_credential  # and its document form
    assert made_up["receipt"]["id"] not in page
    assert page.count('<article class="verification"') == 2
    allow_at, deny_at = page.index(allowed["receipt"]["id"]), page.index(denied["receipt"]["id"])
    assert deny_at < allow_at
    deny_part = page[page.index('<span class="deny">deny</span>') : allow_at]
    assert "<code>rule_failed</code>" in deny_part
    assert '<td data-label="Rule">amountWithinLimit</td>' in deny_part
    assert (
        '<td data-label="Result">fail</td>' in deny_part and '<td data-label="Result">pass</td>' in deny_part
    )
    assert "executionParams.amount &lt;= userParams.maxAmount" in deny_part
    assert '<span class="allow">allow</span>' in page and f"<code>{org.did}</code>" in page


@pytest.mark.usefixtures("worker")
async def test_a_documents_pdf_downloads_for_its_organization_only(
    settings: Settings, temporal: Client, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    app = create_app(settings, temporal=temporal)
    stranger = new_org(engine, cipher, settings)
    try:
        async with page_client(app) as browser, page_client(app) as api_http, page_client(app) as theirs:
            lease = await accepted_over_the_api(SignedClient(api_http, org), temporal, credentials=[LEASE])
            record = await mandates.credential_detail(ctx, org.organization_id, lease["id"])
            cred_id = record.credential.id
            await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
            detail = await browser.get(f"/dashboard/mandates/{cred_id}")
            assert detail.status_code == 200 and LEASE["name"] in detail.text
            assert f'href="/dashboard/mandates/{cred_id}/pdf"' in detail.text
            assert '<h2 id="credential-heading">The document</h2>' in detail.text
            assert _json_blocks(detail.text)[0] == record.credential.w3c_credential

            for path in (cred_id, quote(lease["id"], safe="")):
                got = await browser.get(f"/dashboard/mandates/{path}/pdf")
                assert got.status_code == 200 and got.headers["content-type"] == "application/pdf"
                assert (
                    got.headers["content-disposition"] == f'attachment; filename="credential-{cred_id}.pdf"'
                )
                assert got.headers["cache-control"] == "no-store"
                text = pdf_text(base64.b64encode(got.content).decode())
                assert LEASE["name"] in text and "Rua da Conceição 1, Lisboa" in text and cred_id in text

            await log_in_as(theirs, ctx, stranger, MemberRole.OWNER, "owner")
            refused = await theirs.get(f"/dashboard/mandates/{cred_id}/pdf")
            assert refused.status_code == 404 and "%PDF" not in refused.text
            assert LEASE["name"] not in refused.text
            mandate = issued_mandate(engine, cipher, settings, org.organization_id)
            no_pdf = await browser.get(f"/dashboard/mandates/{mandate.credential_id}/pdf")
            assert no_pdf.status_code == 404 and "Only a document credential has a PDF" in no_pdf.text
            logged_out = await api_http.get(f"/dashboard/mandates/{cred_id}/pdf")
            assert (logged_out.status_code, logged_out.headers["location"]) == (303, "/dashboard/login")
    finally:
        app.state.ctx.engine.dispose()


async def test_a_support_member_revokes_a_mandate_with_a_reason(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    path = f"/dashboard/mandates/{issued.mandate_id}/revoke"
    async with page_client(app) as browser, page_client(app) as api_http:
        agent = SignedClient(api_http, org)
        vp = (await presented(agent, issued.mandate_id))["presentation"]
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        for form, message in (
            ({"reason": "lost"}, "Tick the box to confirm"),
            ({"confirm": "yes"}, "Give a reason for the revocation"),
            ({"confirm": "yes", "reason": "   "}, "Give a reason for the revocation"),
            ({"confirm": "yes", "reason": "x" * 501}, "The reason is 501 characters long: at most 500."),
            ({"confirm": "yes", "reason": "two\nlines"}, "one line of printable characters"),
            ({"confirm": "yes", "reason": "bell\x07"}, "one line of printable characters"),
        ):
            refused = await browser.post(path, data={"csrf": csrf, **form})
            assert refused.status_code == 400 and message in refused.text, form
            assert '<span class="status">ACTIVE</span>' in refused.text
        reason = "The customer closed the account (ticket 4711)"
        done = await browser.post(path, data={"csrf": csrf, "confirm": "yes", "reason": f" {reason} "})
        assert done.status_code == 303
        assert done.headers["location"] == f"/dashboard/mandates/{issued.credential_id}?notice=revoked"
        shown = await browser.get(done.headers["location"])
        assert "The mandate is revoked" in shown.text and '<span class="status">REVOKED</span>' in shown.text
        assert f"<dt>Reason</dt><dd>{reason}</dd>" in shown.text and "<dt>Revoked</dt>" in shown.text
        assert f'action="{path}"' not in shown.text  # no form any more
        receipt = _json_blocks(shown.text)[-1]
        assert receipt["type"] == "MANDATE_REVOKED" and receipt["reason"] == reason

        again = await browser.post(path, data={"csrf": csrf, "confirm": "yes", "reason": "twice"})
        assert again.status_code == 409 and "is REVOKED: only an ACTIVE mandate can be revoked" in again.text
        denied = checked(await verify(agent, vp, GOOD), engine, settings, "credential_revoked")
        assert denied["credentialId"] == issued.mandate_id

    revocations = [r for r in chain(engine, org.organization_id) if r.type == audit.MANDATE_REVOKED]
    assert [(r.actor, r.credential_id, r.data["reason"]) for r in revocations] == [
        (f"member:{member_id}", issued.mandate_id, reason)
    ]
    record = await mandates.credential_detail(ctx, org.organization_id, issued.credential_id)
    assert (record.credential.status, record.credential.revocation_reason) == ("REVOKED", reason)


async def test_another_organizations_credential_is_not_found_on_any_page(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    other = new_org(engine, cipher, settings)
    theirs = issued_mandate(engine, cipher, settings, other.organization_id)
    secret_values = (theirs.credential_id, theirs.mandate_id, theirs.request_id, theirs.subject_id)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        listed = await browser.get("/dashboard/mandates")
        assert listed.status_code == 200 and "0 credentials" in listed.text
        for ref in (theirs.credential_id, theirs.mandate_id, quote(theirs.mandate_id, safe="")):
            for answer in (
                await browser.get(f"/dashboard/mandates/{ref}"),
                await browser.get(f"/dashboard/mandates/{ref}/pdf"),
                await browser.post(
                    f"/dashboard/mandates/{ref}/revoke", data={"csrf": csrf, "confirm": "yes", "reason": "x"}
                ),
            ):
                assert answer.status_code == 404 and "No such credential" in answer.text, answer.url
                assert [value for value in secret_values if value in answer.text] == [], answer.url
        for bad in (
            theirs.credential_id.upper(),
            theirs.credential_id + "0",
            "urn:via:credential:x",
            "%2e%2e",
        ):
            assert (await browser.get(f"/dashboard/mandates/{bad}")).status_code == 404, bad
    detail = await mandates.credential_detail(ctx, other.organization_id, theirs.mandate_id)
    assert detail.credential.status == "ACTIVE"
    for org_id in (org.organization_id, other.organization_id):
        assert [r for r in chain(engine, org_id) if r.type == audit.MANDATE_REVOKED] == []


async def test_the_revoke_form_needs_the_sessions_token_from_our_own_page(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    path = f"/dashboard/mandates/{issued.credential_id}/revoke"
    form = {"confirm": "yes", "reason": "forged"}
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        for data, headers in (
            (form, {}),
            ({**form, "csrf": "f" * 64}, {}),
            ({**form, "csrf": csrf}, {"Sec-Fetch-Site": "cross-site"}),
        ):
            refused = await browser.post(path, data=data, headers=headers)
            assert refused.status_code == 403 and "This form has expired" in refused.text
    async with page_client(app) as stranger:  # no session at all
        assert (await stranger.post(path, data={**form, "csrf": csrf})).headers[
            "location"
        ] == "/dashboard/login"
        for get in ("/dashboard/mandates", f"/dashboard/mandates/{issued.credential_id}"):
            assert (await stranger.get(get)).headers["location"] == "/dashboard/login"
    record = await mandates.credential_detail(ctx, org.organization_id, issued.credential_id)
    assert record.credential.status == "ACTIVE"
    assert [r for r in chain(engine, org.organization_id) if r.type == audit.MANDATE_REVOKED] == []
