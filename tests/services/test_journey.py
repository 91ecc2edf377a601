"""services.journey: the subject's code and decision, and the organization's identity report, each
recorded under its actor (the subject, the organization); refusals typed."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from core.actors import ORGANIZATION, Actor
from core.kinds import OtpOutcome, UpdateRefusal
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle
from services import journey, requests
from services.context import Context
from services.errors import Invalid, NotFound, Refused
from store import audit
from store import otp as otp_store
from store.db import utcnow
from tests.support.api_client import Credentials, policy_request
from tests.support.audit import chain, new_request
from tests.support.journey_messages import code_in, message_for
from wire.models import CreateRequestIn

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal)


async def _request(ctx: Context, org: Credentials, **overrides: object) -> tuple[str, str]:
    body = CreateRequestIn.model_validate(policy_request(**overrides))
    created = await requests.create(
        ctx, Actor.api_key(org.key_id), org.organization_id, body, rate_per_minute=100
    )
    assert created.bundle is not None
    return created.bundle.request.id, created.bundle.subjects[0][1].id


async def _records(engine: Engine, org_id: str, kind: str, count: int = 1) -> list[str | None]:
    for _ in range(200):  # the workflow's activity writes it: at most 10 s
        found = [r.actor for r in chain(engine, org_id) if r.type == kind]
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {kind} record")


async def test_the_subjects_code_and_decision_are_theirs(
    ctx: Context, engine: Engine, org: Credentials
) -> None:
    request_id, subject_id = await _request(ctx, org)
    subject = Actor.subject(subject_id)
    entry = await message_for(request_id, subject_id)
    wrong = "000000" if code_in(entry.text) != "000000" else "111111"
    checked = await journey.confirm_code(ctx, subject, request_id, subject_id, wrong)
    assert checked.outcome == OtpOutcome.WRONG
    with pytest.raises(Refused) as refused:  # no decision before the code
        await journey.decide(ctx, subject, request_id, subject_id, "x" * 24, True, "email", "hosted")
    assert refused.value.refusal == UpdateRefusal.UNKNOWN_CREDENTIAL
    checked = await journey.confirm_code(ctx, subject, request_id, subject_id, code_in(entry.text))
    assert checked.outcome == OtpOutcome.PASSED
    bundle = await requests.get(ctx, org.organization_id, request_id)
    credential_id = bundle.credentials[0].id
    decided = await journey.decide(
        ctx, subject, request_id, subject_id, credential_id, False, "email", "hosted"
    )
    assert decided.request_status == "COMPLETED"
    assert await _records(engine, org.organization_id, audit.DECISION_REJECT) == [f"subject:{subject_id}"]
    # the workflow ends once the decision's delivery has started (the update answered before)
    await request_handle(ctx.client(), request_id).result()
    # a second submit of the same decision, reaching it only now, answers as the first
    repeated = await journey.decide(
        ctx, subject, request_id, subject_id, credential_id, False, "email", "hosted"
    )
    assert repeated == decided
    with pytest.raises(Refused) as again:  # another choice: the request has ended
        await journey.decide(ctx, subject, request_id, subject_id, credential_id, True, "email", "hosted")
    assert again.value.refusal == UpdateRefusal.NOT_ACTIVE


async def test_the_organizations_identity_report_is_recorded_as_the_organizations(
    ctx: Context, engine: Engine, org: Credentials
) -> None:
    request_id, _ = await _request(
        ctx, org, contacts=["kyc-ana@example.com"], securityLevel="ORGANIZATION_KYC"
    )
    applied = await journey.report_organization_check(
        ctx,
        ORGANIZATION,
        org.organization_id,
        contact="kyc-ana@example.com",
        did=None,
        success=True,
        message=None,
    )
    assert applied == [request_id]
    assert await _records(engine, org.organization_id, audit.IDENTITY_VERIFIED) == ["organization"]
    with pytest.raises(NotFound):
        await journey.report_organization_check(
            ctx,
            ORGANIZATION,
            org.organization_id,
            contact="nobody@example.com",
            did=None,
            success=True,
            message=None,
        )
    with pytest.raises(Invalid, match="exactly one of contact or id"):
        await journey.report_organization_check(
            ctx, ORGANIZATION, org.organization_id, contact=None, did=None, success=True, message=None
        )


def test_a_resend_is_recorded_once_by_its_actor_however_often_its_send_is_retried(
    engine: Engine, org: Credentials
) -> None:
    """``store.otp.store_code`` writes ``OTP_RESENT`` with the code it stores (never the code): a
    retried ``send_otp`` finds its send number stored and writes nothing again; the codes sent at
    the request's start are no resend."""
    bundle = new_request(engine, org.organization_id)
    request_id, subject_id = bundle.request.id, bundle.subjects[0][1].id
    otp_store.store_code(engine, request_id, subject_id, 1, "h1", "email", utcnow())
    for _ in range(2):  # the same send, retried
        otp_store.store_code(
            engine, request_id, subject_id, 2, "h2", "email", utcnow(), resent_by="member:mia"
        )
    otp_store.store_code(engine, request_id, subject_id, 3, "h3", "email", utcnow(), resent_by="subject:x")
    resent = [r for r in chain(engine, org.organization_id) if r.type == audit.OTP_RESENT]
    assert [(r.actor, r.request_id, r.data) for r in resent] == [
        ("member:mia", request_id, {"subject": subject_id, "channel": "email", "sendNumber": 2}),
        ("subject:x", request_id, {"subject": subject_id, "channel": "email", "sendNumber": 3}),
    ]
    assert "h2" not in str([r.data for r in resent])
