"""The audit trail in the dashboard: every member reads the organization's records with the filters
of ``GET /activity`` (bad values answered on the page with why), checks the chain and is told when
a record was changed behind the service's back; another organization's records never show."""

from __future__ import annotations

import csv
import html
import io
import json
import re

from fastapi import FastAPI
from sqlalchemy import Engine, update
from sqlmodel import col

from core.actors import Actor
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import orgs as organizations
from services.context import Context
from store.request_records import record_link_shown
from store.tables import AuditRecord
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain, tamper
from tests.support.dashboard import log_in_as, page_client
from tests.support.workflow import insert_request


def _rows(page: str) -> list[tuple[str, str, str]]:
    """(seq, type, actor) of each record the page lists."""
    row = (
        r'data-label="#">(\d+)</td>.*?data-label="What">([A-Z_]+)</td>\s*<td data-label="Who"><code>([^<]*)<'
    )
    return re.findall(row, page, re.S)


async def test_a_member_filters_the_trail_and_checks_the_chain(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    alice, bob = Actor.shell_operator("alice"), Actor.shell_operator("bob")
    first = organizations.create_key(ctx, alice, org.organization_id)
    organizations.revoke_key(ctx, bob, first.key_id, org.organization_id)
    organizations.set_presentation_minutes(ctx, alice, org.organization_id, 7)
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "auditor")
        everything = (await browser.get("/dashboard/activity")).text
        assert _rows(everything) == [  # the newest first: the member's own invitation
            ("4", "MEMBER_INVITED", "operator:tests"),
            ("3", "ORGANIZATION_SETTINGS_CHANGED", "operator:alice"),
            ("2", "API_KEY_REVOKED", "operator:bob"),
            ("1", "API_KEY_CREATED", "operator:alice"),
        ]
        only_revoked = (await browser.get("/dashboard/activity", params={"type": "API_KEY_REVOKED"})).text
        assert _rows(only_revoked) == [("2", "API_KEY_REVOKED", "operator:bob")]
        every_type = await browser.get("/dashboard/activity", params={"type": ""})  # the form's default
        assert len(_rows(every_type.text)) == 4
        none = await browser.get("/dashboard/activity", params={"requestId": "0" * 24})
        assert _rows(none.text) == [] and "No record matches" in none.text
        old = await browser.get(
            "/dashboard/activity", params={"dateFrom": "2000-01-01", "dateTo": "2000-01-01"}
        )
        assert _rows(old.text) == []
        for query, why in (
            ({"type": "NOT_A_TYPE"}, "type is one of the record types listed"),
            ({"requestId": "xyz"}, "requestId is 24 lower-case hexadecimal characters"),
            ({"dateTo": "2026-01-01"}, "dateTo requires dateFrom"),
            ({"dateFrom": "yesterday"}, "dateFrom must be an ISO 8601 date"),
            ({"page": "0"}, "page is a whole number from 1 to 100000"),
        ):
            refused = await browser.get("/dashboard/activity", params=query)
            assert refused.status_code == 400 and why in refused.text, query

        # the details column: what the record says; the CSV: the filtered records whole, safely
        revoked_row = re.search(r'<td data-label="Details" class="details">(.*?)</td>', only_revoked, re.S)
        assert revoked_row and f"keyId</span> {first.key_id}" in revoked_row.group(1)
        # a change shows its value before and after, in place of the raw 'previous' (issue 34)
        assert "revokedAt</span> none → 20" in html.unescape(revoked_row.group(1))
        setting = (
            await browser.get("/dashboard/activity", params={"type": "ORGANIZATION_SETTINGS_CHANGED"})
        ).text
        (details,) = re.findall(r'<td data-label="Details" class="details">(.*?)</td>', setting, re.S)
        assert (
            html.unescape(details)
            == '<span class="detail"><span class="muted">presentationMinutes</span> 5 → 7</span>'
        )
        exported = await browser.get("/dashboard/activity.csv", params={"type": "API_KEY_REVOKED"})
        assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
        lines = list(csv.reader(io.StringIO(exported.content.decode("utf-8-sig"))))
        assert lines[0] == ["seq", "at", "type", "actor", "requestId", "credentialId", "data"]
        assert [(row[0], row[2], row[3]) for row in lines[1:]] == [("2", "API_KEY_REVOKED", "operator:bob")]
        assert json.loads(lines[1][6])["keyId"] == first.key_id
        assert (await browser.get("/dashboard/activity.csv", params={"type": "NOPE"})).status_code == 400

        checked = await browser.post("/dashboard/activity/check", data={"csrf": csrf})
        assert checked.status_code == 200
        assert "The chain checks: all 4 records are in order, linked, unchanged and signed." in checked.text
        records = chain(engine, org.organization_id)
        forged = update(AuditRecord).where(col(AuditRecord.id) == records[1].id)
        tamper(engine, forged.values(actor=f"member:{member_id}"))
        broken = await browser.post("/dashboard/activity/check", data={"csrf": csrf})
        assert "The chain does not check:" in broken.text and records[1].id in broken.text
        assert (await browser.post("/dashboard/activity/check", data={"csrf": "0" * 64})).status_code == 403


async def test_another_organizations_records_never_show(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    organizations.create_key(ctx, Actor.shell_operator("alice"), org.organization_id)
    stranger = new_org(engine, cipher, settings)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, stranger, MemberRole.OWNER, "stranger")
        page = (await browser.get("/dashboard/activity")).text
        assert _rows(page) == [("1", "MEMBER_INVITED", "operator:tests")] and "operator:alice" not in page
        checked = (await browser.post("/dashboard/activity/check", data={"csrf": csrf})).text
        assert "its one record is in order" in checked


async def test_actors_are_named_keys_by_name_members_by_e_mail_subjects_masked(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    """Issue 34: the Who column names an API key by its name, a member by e-mail, an operator as
    staff and a subject by a masked contact; the recorded actor stays in the tooltip."""
    named = organizations.create_key(ctx, Actor.shell_operator("alice"), org.organization_id, name="Billing")
    bundle = insert_request(ctx.engine, org.organization_id, contacts=("zoe@example.com",))
    subject = bundle.subjects[0][1]
    organizations.revoke_key(ctx, Actor.api_key(named.key_id), org.key_id, org.organization_id)
    record_link_shown(
        ctx.engine, org.organization_id, bundle.request.id, subject.id, f"subject:{subject.id}", None
    )
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.OWNER, "namer")
        page = (await browser.get("/dashboard/activity")).text
    assert f'<span title="apiKey:{named.key_id}">API key “Billing”</span>' in page
    assert f'<span title="subject:{subject.id}">subject z•••@example.com</span>' in page
    assert "zoe@example.com" not in page
