"""Approvals and workflows in the dashboard: owners and developers create an approval from a spec
(a DOCUMENT with its PDF), add a version, archive it, make and archive a workflow; bad specs and
another organization's ids are refused with nothing stored; support members are refused."""

from __future__ import annotations

import json

from fastapi import FastAPI
from sqlalchemy import Engine

from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import approvals
from services.context import Context
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.approvals import DOCUMENT, FORM, JSON, make, pdf
from tests.support.dashboard import log_in_as, page_client

YAML_FORM = """\
name: Onboarding form
type: FORM
fields:
  - {name: start, label: Start, type: date}
"""


async def listed(ctx: Context, org_id: str) -> list[tuple[str, int, bool]]:
    found, _ = await approvals.find(ctx, org_id, approvals.Filter(page_size=100))
    return [(v.approval.name, v.approval.version, v.approval.active) for v in found]


async def test_create_version_archive_and_workflows(app: FastAPI, ctx: Context, org: Credentials) -> None:
    org_id = org.organization_id
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "developer")
        empty = await browser.get("/dashboard/approvals")
        assert empty.status_code == 200 and "No approval yet" in empty.text
        made = await browser.post("/dashboard/approvals", data={"csrf": csrf, "spec": json.dumps(JSON)})
        assert made.status_code == 303 and made.headers["location"] == "/dashboard/approvals?notice=created"
        yaml_made = await browser.post("/dashboard/approvals", data={"csrf": csrf, "spec": YAML_FORM})
        assert yaml_made.status_code == 303, yaml_made.text
        doc = await browser.post(
            "/dashboard/approvals",
            data={"csrf": csrf, "spec": json.dumps(DOCUMENT)},
            files={"pdf": ("lease.pdf", pdf(), "application/pdf")},
        )
        assert doc.status_code == 303, doc.text
        found, _ = await approvals.find(ctx, org_id, approvals.Filter())
        terms, form, lease = (v.approval.id for v in found)
        assert approvals.get(ctx, org_id, form).current.content["fields"][0]["type"] == "date"

        version = await browser.post(
            "/dashboard/approvals/version",
            data={"csrf": csrf, "approval_id": terms, "spec": json.dumps({**JSON, "json": {"v": 2}})},
        )
        assert version.status_code == 303, version.text
        flow = await browser.post(
            "/dashboard/workflows", data={"csrf": csrf, "name": "Lease", "approval_ids": f"{lease}, {terms}"}
        )
        assert flow.status_code == 303, flow.text
        archived = await browser.post(f"/dashboard/approvals/{form}/archive", data={"csrf": csrf})
        assert archived.status_code == 303
        page = await browser.get("/dashboard/approvals?notice=archived")
        assert "archived" in page.text and "Lease contract, Terms" in page.text
        flows, _ = await approvals.find_workflows(ctx, org_id, approvals.Filter())
        gone = await browser.post(f"/dashboard/workflows/{flows[0].workflow.id}/archive", data={"csrf": csrf})
        assert gone.status_code == 303
    assert await listed(ctx, org_id) == [
        ("Terms", 2, True),
        ("Onboarding form", 1, False),
        ("Lease contract", 1, True),
    ]
    assert (await approvals.find_workflows(ctx, org_id, approvals.Filter(active=False)))[1] == 1


async def test_refusals_store_nothing(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    org_id = org.organization_id
    theirs = make(ctx, new_org(engine, cipher, settings).organization_id, JSON)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        for data, files, status, text in [
            ({"spec": "name: [unclosed"}, None, 400, "neither JSON nor YAML"),
            ({"spec": json.dumps({**FORM, "fields": []})}, None, 400, "fields"),
            ({"spec": json.dumps(DOCUMENT)}, None, 400, "needs its PDF"),
            (
                {"spec": json.dumps(DOCUMENT)},
                {"pdf": ("x.pdf", b"GIF89a", "application/pdf")},
                400,
                "not a PDF",
            ),
        ]:
            got = await browser.post("/dashboard/approvals", data={"csrf": csrf, **data}, files=files)
            assert got.status_code == status and text in got.text, (text, got.text[:300])
        other = await browser.post(
            "/dashboard/approvals/version",
            data={"csrf": csrf, "approval_id": theirs, "spec": json.dumps(JSON)},
        )
        assert other.status_code == 404
        assert (
            await browser.post(f"/dashboard/approvals/{theirs}/archive", data={"csrf": csrf})
        ).status_code == 404
        flow = await browser.post(
            "/dashboard/workflows", data={"csrf": csrf, "name": "x", "approval_ids": theirs}
        )
        assert flow.status_code == 404
        stale = await browser.post("/dashboard/approvals", data={"csrf": "nope", "spec": json.dumps(JSON)})
        assert stale.status_code == 403
    assert await listed(ctx, org_id) == []
    assert (await approvals.find_workflows(ctx, org_id, approvals.Filter()))[1] == 0


async def test_support_members_are_refused(app: FastAPI, ctx: Context, org: Credentials) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        assert (await browser.get("/dashboard/approvals")).status_code == 403
        posted = await browser.post("/dashboard/approvals", data={"csrf": csrf, "spec": json.dumps(JSON)})
        assert posted.status_code == 403
    assert await listed(ctx, org.organization_id) == []
