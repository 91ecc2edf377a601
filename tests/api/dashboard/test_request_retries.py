"""Support's retries on a request's page (issue 32): owners and support issue a FAILED credential
again with a required reason; developers are refused; every form needs the session's CSRF token;
another organization's credential is not found."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services.context import Context
from store import audit
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import log_in_as, page_client
from tests.support.operators import log_in_as_operator
from tests.support.retries import failed_credential, repair
from tests.support.workflow import db_request

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")


@pytest.fixture
def app(settings: Settings, temporal: Client) -> FastAPI:
    return create_app(settings, temporal=temporal)


def retried(engine: Engine, org_id: str, cred: str) -> list[tuple[str | None, str]]:
    return [
        (r.actor, r.data["reason"])
        for r in chain(engine, org_id)
        if r.type == audit.MANDATE_ISSUANCE_RETRIED and r.credential_id == cred
    ]


@pytest.mark.parametrize("role", [MemberRole.OWNER, MemberRole.SUPPORT])
async def test_owner_and_support_issue_a_failed_credential_again(
    app: FastAPI,
    ctx: Context,
    temporal: Client,
    engine: Engine,
    settings: Settings,
    org: Credentials,
    role: str,
) -> None:
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org.organization_id)
    path = f"/dashboard/requests/{request_id}/credentials/{cred}/retry-issuance"
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole(role), f"retry-{role}")
        page = (await browser.get(f"/dashboard/requests/{request_id}")).text
        assert f'action="{path}"' in page and "Issue again" in page

        no_reason = await browser.post(path, data={"csrf": csrf, "reason": "  "})
        assert no_reason.status_code == 400 and "the reason is empty" in no_reason.text
        still_bad = await browser.post(path, data={"csrf": csrf, "reason": "try as is"})
        assert still_bad.status_code == 409 and "FAILED again" in still_bad.text

        repair(engine, cred)
        done = await browser.post(path, data={"csrf": csrf, "reason": "amount fixed"})
        [stored] = db_request(engine, org.organization_id, request_id).credentials
        assert done.status_code == 200 and stored.status == "ACTIVE"
        assert f"The credential is issued: its mandate is {stored.mandate_id}" in done.text
        assert "Issue again" not in done.text  # no FAILED credential left: no retry block
    assert retried(engine, org.organization_id, cred) == [
        (f"member:{member_id}", "try as is"),
        (f"member:{member_id}", "amount fixed"),
    ]


async def test_a_developer_is_refused_and_sees_no_form(
    app: FastAPI, ctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org.organization_id)
    repair(engine, cred)
    path = f"/dashboard/requests/{request_id}/credentials/{cred}/retry-issuance"
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "retry-dev")
        assert "Issue again" not in (await browser.get(f"/dashboard/requests/{request_id}")).text
        refused = await browser.post(path, data={"csrf": csrf, "reason": "why"})
        assert refused.status_code == 403
    assert db_request(engine, org.organization_id, request_id).credentials[0].status == "FAILED"
    assert retried(engine, org.organization_id, cred) == []


async def test_csrf_other_organizations_and_bad_ids_are_refused(
    app: FastAPI,
    ctx: Context,
    temporal: Client,
    engine: Engine,
    settings: Settings,
    cipher: SecretCipher,
    org: Credentials,
) -> None:
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org.organization_id)
    repair(engine, cred)
    other_request, _ = await failed_credential(temporal, settings.task_queue, engine, org.organization_id)
    path = f"/dashboard/requests/{request_id}/credentials/{cred}/retry-issuance"
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "retry-csrf")
        for token in ("", "0" * 64):
            stale = await browser.post(path, data={"csrf": token, "reason": "why"})
            assert stale.status_code == 403 and "This form has expired" in stale.text
        for bad in (
            f"/dashboard/requests/{request_id}/credentials/NOPE/retry-issuance",
            f"/dashboard/requests/ZZZ/credentials/{cred}/retry-issuance",
            f"/dashboard/requests/{other_request}/credentials/{cred}/retry-issuance",  # not that request's
        ):
            assert (await browser.post(bad, data={"csrf": csrf, "reason": "why"})).status_code == 404, bad
        long = await browser.post(path, data={"csrf": csrf, "reason": "x" * 201})
        assert long.status_code == 400 and "at most 200" in long.text
    stranger = new_org(engine, cipher, settings)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, stranger, MemberRole.OWNER, "retry-stranger")
        theirs = await browser.post(path, data={"csrf": csrf, "reason": "not mine"})
        assert theirs.status_code == 404
    assert db_request(engine, org.organization_id, request_id).credentials[0].status == "FAILED"
    assert retried(engine, org.organization_id, cred) == []


async def test_an_operator_issues_a_failed_credential_again_from_the_operators_area(
    app: FastAPI, ctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org.organization_id)
    other_request, _ = await failed_credential(temporal, settings.task_queue, engine, org.organization_id)
    base = f"/dashboard/operators/requests/{request_id}"
    async with page_client(app) as browser:
        operator_id, csrf = await log_in_as_operator(browser, ctx, "retrying")
        page = (await browser.get(base)).text
        assert f'action="{base}/retry-issuance"' in page and f'<option value="{cred}">' in page
        for token in ("", "0" * 64):
            stale = await browser.post(f"{base}/retry-issuance", data={"csrf": token, "credential": cred})
            assert stale.status_code == 403
        wrong = f"/dashboard/operators/requests/{other_request}/retry-issuance"
        form = {"csrf": csrf, "credential": cred, "reason": "ticket 42"}
        assert (await browser.post(wrong, data=form)).status_code == 404  # not that request's
        assert (
            await browser.post(f"{base}/retry-issuance", data={**form, "credential": "x"})
        ).status_code == 404
        no_reason = await browser.post(f"{base}/retry-issuance", data={**form, "reason": ""})
        assert no_reason.status_code == 400 and "the reason is empty" in no_reason.text
        repair(engine, cred)
        done = await browser.post(f"{base}/retry-issuance", data=form)
        assert done.status_code == 200 and "The credential is issued" in done.text
        assert "Issue again" not in done.text
    async with page_client(app) as browser:  # an organization's member is no operator
        _, member_csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "retry-not-operator")
        refused = await browser.post(f"{base}/retry-issuance", data={**form, "csrf": member_csrf})
        assert refused.status_code in (403, 404)
    assert db_request(engine, org.organization_id, request_id).credentials[0].status == "ACTIVE"
    assert retried(engine, org.organization_id, cred) == [(f"staff:{operator_id}", "ticket 42")]
