"""Support's retries on a request's page (issue 32): owners and support issue a FAILED credential
again with a required reason; developers are refused; every form needs the session's CSRF token;
another organization's credential is not found."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, update
from temporalio.client import Client

from api.app import create_app
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import start_request_workflow
from services.context import Context
from store import audit
from store import kyc as kyc_store
from store.db import utcnow, write_session
from store.tables import OtpChallenge
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import log_in_as, page_client
from tests.support.journey_messages import message_for
from tests.support.operators import log_in_as_operator
from tests.support.retries import failed_credential, repair
from tests.support.workflow import db_request, insert_request

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


async def test_a_subjects_errored_identity_check_is_started_again_from_the_page(
    app: FastAPI,
    ctx: Context,
    temporal: Client,
    engine: Engine,
    settings: Settings,
    cipher: SecretCipher,
    org: Credentials,
) -> None:
    bundle = insert_request(engine, org.organization_id, security_level="PLATFORM_KYC")
    assert await start_request_workflow(temporal, settings.task_queue, bundle)
    request_id, subject = bundle.request.id, bundle.subjects[0][1].id
    stuck = kyc_store.start_check(engine, request_id, subject, "development", utcnow())
    path = f"/dashboard/requests/{request_id}/retries/identity"
    form = {"subject": subject, "reason": "provider outage"}
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "kyc-dev")
        assert "Start the check again" not in (await browser.get(f"/dashboard/requests/{request_id}")).text
        assert (await browser.post(path, data={**form, "csrf": csrf})).status_code == 403
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "kyc-support")
        page = (await browser.get(f"/dashboard/requests/{request_id}")).text
        assert f'action="{path}"' in page and "Start the check again" in page
        assert "Send the code again" not in page  # the code was delivered
        for token in ("", "0" * 64):
            assert (await browser.post(path, data={**form, "csrf": token})).status_code == 403
        for bad_path, bad_form in (
            (f"/dashboard/requests/{request_id}/retries/approve", form),
            (path, {**form, "subject": "NOT-A-UUID"}),
            ("/dashboard/requests/ZZZ/retries/identity", form),
        ):
            assert (await browser.post(bad_path, data={**bad_form, "csrf": csrf})).status_code == 404
        done = await browser.post(path, data={**form, "csrf": csrf})
        assert done.status_code == 200 and "The errored identity check is closed" in done.text
        assert "Start the check again" not in done.text
        again = await browser.post(path, data={**form, "csrf": csrf})
        assert again.status_code == 409 and "nothing errored" in again.text
    stranger = new_org(engine, cipher, settings)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, stranger, MemberRole.OWNER, "kyc-stranger")
        assert (await browser.post(path, data={**form, "csrf": csrf})).status_code == 404
    restarted = [
        r
        for r in chain(engine, org.organization_id)
        if r.type == audit.IDENTITY_CHECK_RESTARTED and r.request_id == request_id
    ]
    assert [(r.actor, r.data["checks"]) for r in restarted] == [(f"member:{member_id}", [stuck.id])]


async def test_the_code_form_shows_under_an_undelivered_code_and_the_workflow_decides(
    app: FastAPI, ctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    bundle = insert_request(engine, org.organization_id)
    assert await start_request_workflow(temporal, settings.task_queue, bundle)
    request_id, subject = bundle.request.id, bundle.subjects[0][1].id
    await message_for(request_id, subject)
    with write_session(engine) as session:  # the page reads the stored delivery error
        session.execute(
            update(OtpChallenge)
            .where(OtpChallenge.request_id == request_id)  # type: ignore[arg-type]
            .values(delivery_error="UNDELIVERABLE")
        )
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "code-owner")
        page = (await browser.get(f"/dashboard/requests/{request_id}")).text
        assert f'action="/dashboard/requests/{request_id}/retries/code"' in page
        # the workflow knows the last code was delivered: refused, with why
        refused = await browser.post(
            f"/dashboard/requests/{request_id}/retries/code",
            data={"csrf": csrf, "subject": subject, "reason": "x"},
        )
        assert refused.status_code == 409 and "nothing to retry" in refused.text


async def test_an_operator_starts_an_errored_check_again(
    app: FastAPI, ctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    bundle = insert_request(engine, org.organization_id, security_level="PLATFORM_KYC")
    assert await start_request_workflow(temporal, settings.task_queue, bundle)
    request_id, subject = bundle.request.id, bundle.subjects[0][1].id
    kyc_store.start_check(engine, request_id, subject, "development", utcnow())
    base = f"/dashboard/operators/requests/{request_id}"
    async with page_client(app) as browser:
        operator_id, csrf = await log_in_as_operator(browser, ctx, "kyc-operator")
        assert f'action="{base}/retry-identity"' in (await browser.get(base)).text
        form = {"csrf": csrf, "subject": subject, "reason": "ticket 7"}
        assert (await browser.post(f"{base}/retry-bogus", data=form)).status_code == 404
        assert (await browser.post(f"{base}/retry-identity", data={**form, "csrf": ""})).status_code == 403
        done = await browser.post(f"{base}/retry-identity", data=form)
        assert done.status_code == 200 and "The errored identity check is closed" in done.text
        code = await browser.post(f"{base}/retry-code", data=form)
        assert code.status_code == 409  # its code was never undelivered
    [record] = [
        r
        for r in chain(engine, org.organization_id)
        if r.type == audit.IDENTITY_CHECK_RESTARTED and r.request_id == request_id
    ]
    assert (record.actor, record.data["reason"]) == (f"staff:{operator_id}", "ticket 7")
