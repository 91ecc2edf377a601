"""Requests in the dashboard: the list with every filter of ``GET /request`` (bad values answered
with the page and why), a request's page with its subjects' progress, and the support actions
(cancel, a fresh code, the subject's link), each recorded as the member's; another organization's
request is not found on any page or form; forms need the session's CSRF token.

Runs on the time-skipping server, so the minute between two codes is skipped, not waited.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.testing import WorkflowEnvironment

from core.kinds import MemberRole
from core.otp import approval_url
from core.secretbox import SecretCipher
from core.settings import Settings
from services.context import Context
from store import audit
from tests.conftest import new_org
from tests.support.api_client import Credentials, SignedClient
from tests.support.audit import chain
from tests.support.dashboard import log_in_as, page_client
from tests.support.journey_messages import message_for
from tests.support.operators import create_request, ts_app
from tests.support.workflow import executor, ts_queue  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("no_server_errors")


@pytest_asyncio.fixture
async def app(ts_env: WorkflowEnvironment, ts_queue: str, settings: Settings) -> AsyncIterator[FastAPI]:  # noqa: F811
    async with ts_app(ts_env, ts_queue, settings) as made:
        yield made


def _listed(page: str) -> list[str]:
    """The request ids a list page shows, in order."""
    return re.findall(r'href="/dashboard/requests/([0-9a-f]{24})"', page)


async def test_the_list_takes_every_filter_of_get_request(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    ana = await create_request(
        app, org, contacts=["ana@example.com"], internalId="order-ana", name="Lease for Ana"
    )
    bob = await create_request(
        app, org, contacts=["bob@example.com"], internalId="order-bob", securityLevel="ORGANIZATION_KYC"
    )
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "lister")
        everything = await browser.get("/dashboard/requests")
        assert everything.status_code == 200 and _listed(everything.text)[:2] == [bob["id"], ana["id"]]
        assert "2 requests" in everything.text
        for query, expected in (
            ({"internalId": "order-ana"}, [ana["id"]]),
            ({"contact": "BOB@example.com"}, [bob["id"]]),
            ({"securityLevel": "ORGANIZATION_KYC"}, [bob["id"]]),
            ({"securityLevel": ["CONTACT", "ORGANIZATION_KYC"]}, [bob["id"], ana["id"]]),
            ({"search": "lease FOR"}, [ana["id"]]),
            ({"did": ana["subjects"][0]["id"]}, [ana["id"]]),
            ({"did": "did:web:elsewhere.example:subjects:" + "0" * 8}, []),
            ({"dateFrom": "2000-01-01", "dateTo": "2000-01-02"}, []),
            ({"internalId": "order-ana", "securityLevel": "ORGANIZATION_KYC"}, []),
        ):
            shown = await browser.get("/dashboard/requests", params=query)
            assert shown.status_code == 200 and _listed(shown.text) == expected, query
            if not expected:
                assert "No request matches" in shown.text
        kept = await browser.get("/dashboard/requests", params={"internalId": "order-bob"})
        assert 'value="order-bob"' in kept.text  # the form shows the filter it applied
        assert '<td data-label="Subjects">bob@example.com</td>' in kept.text  # who was asked


async def test_the_list_filters_by_status_and_exports_csv_safely(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    """Issue 34: a status filter; the CSV of what the filters select, where a value a
    spreadsheet would run as a formula is quoted."""
    formula = await create_request(app, org, contacts=["cy@example.com"], name='=HYPERLINK("http://x")')
    other = await create_request(app, org, contacts=["dee@example.com", "eve@example.com"], internalId="+1")
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "exporter")
        pending = await browser.get("/dashboard/requests", params={"status": "PENDING"})
        assert _listed(pending.text)[:2] == [other["id"], formula["id"]]
        assert _listed((await browser.get("/dashboard/requests", params={"status": "CANCELED"})).text) == []
        assert 'href="/dashboard/requests.csv?status=PENDING"' in pending.text
        refused = await browser.get("/dashboard/requests", params={"status": "GONE"})
        assert refused.status_code == 400 and "status is one of PENDING" in refused.text
        exported = await browser.get("/dashboard/requests.csv", params={"status": "PENDING"})
        assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
        assert exported.headers["content-disposition"] == 'attachment; filename="requests.csv"'
        rows = list(csv.reader(io.StringIO(exported.content.decode("utf-8-sig"))))
        assert rows[0] == ["id", "created", "name", "status", "securityLevel", "contacts", "internalId"]
        by_id = {row[0]: row for row in rows[1:]}
        assert by_id[formula["id"]][2] == '\'=HYPERLINK("http://x")'  # never a formula
        assert by_id[other["id"]][5:] == ["dee@example.com eve@example.com", "'+1"]
        assert all(row[3] == "PENDING" for row in rows[1:])
        bad = await browser.get("/dashboard/requests.csv", params={"status": "GONE"})
        assert bad.status_code == 400
    async with page_client(app) as stranger:
        assert (await stranger.get("/dashboard/requests.csv")).status_code in (303, 401)


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ({"page": "0"}, "page is a whole number from 1 to 100000"),
        ({"page": "1e3"}, "page is a whole number from 1 to 100000"),
        ({"page": "٣"}, "page is a whole number from 1 to 100000"),
        ({"securityLevel": "EVERYTHING"}, "securityLevel is one of CONTACT, ORGANIZATION_KYC"),
        ({"dateTo": "2026-01-01"}, "dateTo requires dateFrom"),
        ({"dateFrom": "20260101"}, "dateFrom must be an ISO 8601 date or date-time"),
        ({"dateFrom": "2026-02-01", "dateTo": "2026-01-01"}, "dateTo must not be before dateFrom"),
        ({"search": "x" * 101}, "search is at most 100 characters"),
        ({"internalId": "a\x00b"}, "internalId must not contain NUL characters"),
        ({"contact": "not a contact"}, "contact: "),
    ],
)
async def test_a_bad_filter_is_answered_with_the_page_and_why(
    app: FastAPI, ctx: Context, org: Credentials, query: dict[str, str], why: str
) -> None:
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "filters")
        refused = await browser.get("/dashboard/requests", params=query)
        assert refused.status_code == 400 and why in refused.text, refused.text[-2000:]
        assert 'role="alert"' in refused.text and "<h1>Requests</h1>" in refused.text


async def test_a_support_member_resends_a_code_shows_the_link_and_cancels_each_recorded_as_theirs(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, ts_env: WorkflowEnvironment
) -> None:
    data = await create_request(app, org, contacts=["ana@example.com"])
    request_id, subject = data["id"], data["subjects"][0]["id"].rsplit(":", 1)[1]
    first = await message_for(request_id, subject)
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        actor = f"member:{member_id}"
        page = await browser.get(f"/dashboard/requests/{request_id}")
        assert page.status_code == 200 and "ana@example.com" in page.text
        assert "1 sent by email" in page.text and "Code confirmed</dt><dd>not yet" in page.text
        workflow = (
            f"/namespaces/{ctx.settings.temporal_namespace}/workflows/credential-request%3A{request_id}"
        )
        assert (
            f'href="{ctx.settings.temporal_ui_workflows().split("/namespaces/")[0]}{workflow}"' in page.text
        )

        base = f"/dashboard/requests/{request_id}/subjects/{subject}"
        too_soon = await browser.post(f"{base}/resend", data={"csrf": csrf})
        assert too_soon.status_code == 429 and 1 <= int(too_soon.headers["Retry-After"]) <= 60
        await ts_env.sleep(61)
        resent = await browser.post(f"{base}/resend", data={"csrf": csrf})
        assert (resent.status_code, resent.headers["location"]) == (
            303,
            f"/dashboard/requests/{request_id}?notice=code-sent",
        )
        await message_for(request_id, subject, newer_than=first.id)
        assert "2 sent by email" in (await browser.get(f"/dashboard/requests/{request_id}")).text

        shown = await browser.post(f"{base}/link", data={"csrf": csrf})
        link = re.search(r'id="subject-link">([^<]+)<', shown.text)
        assert shown.status_code == 200 and link is not None
        assert link.group(1) == approval_url(ctx.settings.public_url, ctx.journey, request_id, subject)
        assert link.group(1) not in (await browser.get(f"/dashboard/requests/{request_id}")).text

        unconfirmed = await browser.post(f"/dashboard/requests/{request_id}/cancel", data={"csrf": csrf})
        assert unconfirmed.status_code == 400 and "Tick the box" in unconfirmed.text
        canceled = await browser.post(
            f"/dashboard/requests/{request_id}/cancel", data={"csrf": csrf, "confirm": "yes"}
        )
        assert canceled.status_code == 303
        after = (await browser.get(canceled.headers["location"])).text
        assert "The request is canceled" in after and 'id="request-status">CANCELED<' in after
        assert f'by <span title="{actor}">support-{org.organization_id}@example.com<' in after
        assert "Send a new code" not in after  # no action on a closed request
        again = await browser.post(f"{base}/link", data={"csrf": csrf})
        assert again.status_code == 409 and "its links open nothing" in again.text

    records = [(r.type, r.actor) for r in chain(engine, org.organization_id) if r.request_id == request_id]
    assert [r for r in records if r[1] == actor] == [
        (audit.OTP_RESENT, actor),
        (audit.SUBJECT_LINK_SHOWN, actor),
        (audit.MANDATE_CANCELED, actor),
    ]


async def test_another_organizations_request_is_not_found_on_every_page_and_form(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    theirs = await create_request(app, org, contacts=["ana@example.com"], internalId="their-order")
    request_id, subject = theirs["id"], theirs["subjects"][0]["id"].rsplit(":", 1)[1]
    stranger = new_org(engine, cipher, settings)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, stranger, MemberRole.OWNER, "stranger")
        listed = await browser.get("/dashboard/requests")
        assert request_id not in listed.text and "No request matches" in listed.text
        assert request_id not in (await browser.get("/dashboard/requests?internalId=their-order")).text
        for method, path in (
            ("GET", f"/dashboard/requests/{request_id}"),
            ("POST", f"/dashboard/requests/{request_id}/cancel"),
            ("POST", f"/dashboard/requests/{request_id}/subjects/{subject}/resend"),
            ("POST", f"/dashboard/requests/{request_id}/subjects/{subject}/link"),
        ):
            answer = await browser.request(method, path, data={"csrf": csrf, "confirm": "yes"})
            assert answer.status_code == 404 and "ana@example.com" not in answer.text, path
        for path in (  # malformed ids are not found before anything is looked up
            "/dashboard/requests/ZZZ",
            "/dashboard/requests/" + "A" * 24,
        ):
            assert (await browser.get(path)).status_code == 404
        odd = f"/dashboard/requests/{request_id}/subjects/{subject.upper()}/link"
        assert (await browser.post(odd, data={"csrf": csrf})).status_code == 404
        unknown_change = f"/dashboard/requests/{request_id}/subjects/{subject}/approve"
        assert (await browser.post(unknown_change, data={"csrf": csrf})).status_code == 404
    assert await _status(app, org, request_id) == "PENDING"  # nothing the stranger sent changed it


async def _status(app: FastAPI, org: Credentials, request_id: str) -> str:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        got = await SignedClient(client, org).get(f"/request/{request_id}")
    status: str = got.json()["status"]
    return status


async def test_every_form_needs_the_sessions_csrf_token(app: FastAPI, ctx: Context, org: Credentials) -> None:
    data = await create_request(app, org, contacts=["ana@example.com"])
    request_id, subject = data["id"], data["subjects"][0]["id"].rsplit(":", 1)[1]
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.OWNER, "csrf")
        for path in (
            f"/dashboard/requests/{request_id}/cancel",
            f"/dashboard/requests/{request_id}/subjects/{subject}/resend",
            f"/dashboard/requests/{request_id}/subjects/{subject}/link",
        ):
            for token in ("", "0" * 64):
                refused = await browser.post(path, data={"csrf": token, "confirm": "yes"})
                assert refused.status_code == 403 and "This form has expired" in refused.text, path
    assert await _status(app, org, request_id) == "PENDING"


async def test_a_subjects_options_on_the_request_page(app: FastAPI, ctx: Context, org: Credentials) -> None:
    """Issue 36: the signer quality (escaped) and where the codes go, never the secondary contact."""
    made = await create_request(
        app,
        org,
        contacts=[
            {
                "contact": "ana@example.com",
                "secondaryContact": "+351912345678",
                "signerQuality": "CEO <Acme>",
            },
            "bob@example.com",
        ],
    )
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        page = (await browser.get(f"/dashboard/requests/{made['id']}")).text
    assert "<dt>Signs as</dt><dd>CEO &lt;Acme&gt;</dd>" in page
    assert page.count("Codes go to") == 1 and "secondary contact (phone)" in page
    assert "912345678" not in page
