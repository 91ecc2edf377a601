"""The operators' area (issue 15, item 1): operators find a request from whatever a complaint
quotes, a contact alone included, see its timeline, and act on it with a reason recorded as theirs;
an organization's member is refused all of it, and operators are refused the organizations' pages.

Runs on the time-skipping server, so the minute between two codes is skipped, not waited.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine, update
from sqlmodel import col
from temporalio.testing import WorkflowEnvironment

from core.actors import Actor
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle
from services import operators
from services.context import Context
from services.errors import Forbidden
from store.db import write_session
from store.tables import Subject
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.dashboard import log_in_as, page_client
from tests.support.journey_messages import code_in, journey_secrets, message_for
from tests.support.operators import api_of, create_request, log_in_as_operator, ts_app
from tests.support.presentations import GOOD, presented, verify
from tests.support.workflow import decide, executor, subject_uuid, ts_queue  # noqa: F401 (fixtures)
from workflows.messages import VerifyOtpInput, VerifyOtpResult

pytestmark = pytest.mark.usefixtures("no_server_errors")


def _found(page: str) -> list[str]:
    return re.findall(r'href="/dashboard/operators/requests/([0-9a-f]{24})"', page)


@pytest_asyncio.fixture
async def app(ts_env: WorkflowEnvironment, ts_queue: str, settings: Settings) -> AsyncIterator[FastAPI]:  # noqa: F811
    async with ts_app(ts_env, ts_queue, settings) as made:
        yield made


async def test_from_a_contact_alone_to_the_requests_timeline(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    other = new_org(engine, cipher, settings)
    mine = await create_request(app, org, contacts=["Fred@Example.com"], internalId="order-fred")
    theirs = await create_request(app, other, contacts=["fred@example.com"])
    unrelated = await create_request(app, org, contacts=["ana@example.com"])
    request_id, subject = mine["id"], subject_uuid(mine["subjects"][0]["id"])
    handle = request_handle(app.state.ctx.client(), request_id)
    # the subject types a wrong code, then the right one, and accepts: a mandate is issued
    secrets = journey_secrets()
    message = await message_for(request_id, subject)
    wrong = str((int(code_in(message.text)) + 1) % 1_000_000).zfill(6)
    tried = await handle.execute_update(
        "verify_otp",
        VerifyOtpInput(subject_id=subject, code_hash=secrets.code_hash(request_id, subject, wrong)),
        result_type=VerifyOtpResult,
    )
    assert tried.outcome == "wrong"
    decided = await decide(handle, subject, mine["credentials"][0]["id"], accept=True)
    assert decided.mandate_id is not None
    client, api = api_of(app, org)
    async with client:
        vp = (await presented(api, decided.mandate_id))["presentation"]
        assert (await verify(api, vp, GOOD)).status_code == 200
        assert (await verify(api, vp, GOOD)).status_code == 403  # a VP is used once

    async with page_client(app) as browser:
        await log_in_as_operator(browser, ctx, "lookup")
        # the contact as the complaint spells it finds the person's requests in both organizations
        listed = await browser.get("/dashboard/operators", params={"q": " FRED@example.COM "})
        assert listed.status_code == 200 and set(_found(listed.text)) == {request_id, theirs["id"]}
        assert unrelated["id"] not in listed.text and "2 requests found" in listed.text
        for query in (request_id, "order-fred", decided.mandate_id):
            by_key = await browser.get("/dashboard/operators", params={"q": query})
            assert _found(by_key.text) == [request_id], query
        nothing = await browser.get("/dashboard/operators", params={"q": "nobody@example.com"})
        assert nothing.status_code == 200 and _found(nothing.text) == [] and "Nothing matches" in nothing.text

        page = await browser.get(f"/dashboard/operators/requests/{request_id}")
        assert page.status_code == 200
        timeline = page.text.split('id="timeline"', 1)[1]
        # in order on each clock: the workflow's (virtual on this server) and the database's
        for steps in (
            [
                "Code 1 sent to subject 1 (fred@example.com) by email",
                "subject 1 (fred@example.com) entered a wrong code",
                "subject 1 (fred@example.com) entered the right code",
                "subject 1 (fred@example.com) accepted",
            ],
            [  # (a VP's time is kept to the second: it may sort before a creation in the same second)
                "VP issued",
                "VP used by a verification",
                "Verification: allow",
                "Verification: deny (vp_already_used)",
            ],
        ):
            positions = [timeline.find(step) for step in steps]
            assert -1 not in positions and positions == sorted(positions), dict(
                zip(steps, positions, strict=True)
            )
        assert "Mandate issued for" in timeline
        assert "Request created: 1 subject(s), 1 credential(s), CONTACT" in timeline
        assert "Audit: HUMAN_DECISION_ACCEPT" in timeline and "Audit: MANDATE_ISSUED" in timeline
        # who: by name, the recorded actor as the tooltip (issue 34)
        assert f'title="subject:{subject}">by subject f•••@example.com</span>' in timeline
        assert f'title="apiKey:{org.key_id}">by API key ' in timeline
        assert f"credential-request%3A{request_id}" in page.text  # the workflow in the Temporal UI
        assert message.text not in page.text and code_in(message.text) not in timeline


async def test_an_organizations_member_is_refused_all_of_it_and_staff_the_organizations_pages(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    data = await create_request(app, org, contacts=["ivy@example.com"])
    request_id, subject = data["id"], subject_uuid(data["subjects"][0]["id"])
    base = f"/dashboard/operators/requests/{request_id}"
    forms = [f"{base}/{action}" for action in ("cancel", "resend", "link", "webhook", "revoke")]
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        for path in ("/dashboard/operators", "/dashboard/operators?q=ivy@example.com", base):
            refused = await browser.get(path)
            assert refused.status_code == 403 and "ivy@example.com" not in refused.text, path
        for path in forms:
            form = {"csrf": csrf, "reason": "because", "subject": subject}
            assert (await browser.post(path, data=form)).status_code == 403, path
    member, services = Actor.member("0" * 24), app.state.ctx
    for call in (
        operators.find(ctx, member, "ivy@example.com"),
        operators.timeline(services, member, request_id),
        operators.cancel(services, member, request_id, "because"),
        operators.resend_code(services, member, request_id, subject, "because"),
        operators.hand_out_link(services, member, request_id, subject, "because"),
        operators.redeliver(services, member, "urn:via:event:x", "because"),
        operators.revoke(services, member, "urn:via:credential:x", "because"),
    ):
        with pytest.raises(Forbidden):
            await call
    assert (
        await request_handle(app.state.ctx.client(), request_id).describe()
    ).status is not None  # still open
    async with page_client(app) as browser:
        _, csrf = await log_in_as_operator(browser, ctx, "outsider")
        for path in ("/dashboard/requests", f"/dashboard/requests/{request_id}", "/dashboard/keys"):
            assert (await browser.get(path)).status_code == 403, path
        account = await browser.get("/dashboard/account")  # their own account works
        assert account.status_code == 200 and "Mandatum operators" in account.text


async def test_subjects_from_before_the_contact_hash_are_found_once_filled(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    # a number no other test uses: the operators' search spans every organization of the database
    data = await create_request(app, org, contacts=["+351913570158"])
    with write_session(engine) as session:  # as migration 0014 leaves an older subject
        session.execute(
            update(Subject)
            .where(col(Subject.id) == subject_uuid(data["subjects"][0]["id"]))
            .values(contact_hash=None)
        )
    found = await operators.find(ctx, Actor.shell_operator("tests"), "+351913570158")
    assert [(f.bundle.request.id, f.matched_by) for f in found] == [(data["id"], "contact")]


async def test_what_the_operators_pages_take_is_checked_where_it_enters(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    data = await create_request(app, org, contacts=["jo@example.com"])
    request_id = data["id"]
    base = f"/dashboard/operators/requests/{request_id}"
    async with page_client(app) as browser:
        _, csrf = await log_in_as_operator(browser, ctx, "checks")
        for q in ("a\x00b", "x" * 321):
            bad = await browser.get("/dashboard/operators", params={"q": q})
            assert bad.status_code == 400 and "type a request id" in bad.text, q
        for path, form in (
            (f"{base}/approve", {"reason": "why"}),  # no such action
            (f"{base}/resend", {"reason": "why", "subject": "../../etc"}),  # not a subject id
            (f"{base}/link", {"reason": "why", "subject": "A" * 36}),
            ("/dashboard/operators/requests/ZZZ/cancel", {"reason": "why"}),
        ):
            answer = await browser.post(path, data={"csrf": csrf, **form})
            assert answer.status_code == 404, path
        line_break = await browser.post(
            f"{base}/cancel", data={"csrf": csrf, "reason": "one\nMANDATE_REVOKED"}
        )
        assert line_break.status_code == 400 and "one line of printable characters" in line_break.text
        foreign = await browser.post(f"{base}/cancel", data={"csrf": "not-the-token", "reason": "why"})
        assert foreign.status_code == 403
        assert 'id="request-status">PENDING<' in (await browser.get(base)).text  # nothing changed it
