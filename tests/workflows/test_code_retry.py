"""Support's retry of a code that could not be delivered (issue 32, item 2): the request workflow's
``retry_code`` update sends a fresh code while the subject's last one was undelivered, outside the
subject's own limits (a minute apart here), once per undelivered send; it names itself in the
Temporal UI and its ``OTP_RESENT`` names the actor and reason."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio
from sqlalchemy import Engine
from temporalio import activity
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from activities.journey import JourneyActivities
from core.actors import Actor
from core.kinds import UpdateRefusal
from core.otp import JourneySecrets
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle, start_request_workflow
from services import requests, retries
from services.context import Context
from services.errors import Invalid, NotFound, Refused
from store import audit
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.journey_messages import message_for
from tests.support.workflow import activities_with, fresh_queue, insert_request, running_worker, status_of
from workflows.credential_request import CredentialRequestWorkflow
from workflows.ids import ActivityNames
from workflows.messages import SendOtpInput, SendOtpResult

SUPPORT = Actor.member("m-support-code")


class BrokenChannel(JourneyActivities):
    """The real journey activities; while ``broken`` every code send comes back undelivered."""

    broken = True

    @activity.defn(name=ActivityNames.SEND_OTP)
    def send_otp(self, inp: SendOtpInput) -> SendOtpResult:
        if self.broken:
            return SendOtpResult(
                channel="email", delivered=False, error_code="UNDELIVERABLE", error_message="mailbox down"
            )
        return super().send_otp(inp)


@dataclass
class Scene:
    ctx: Context
    acts: BrokenChannel
    request_id: str
    subject_id: str


@pytest_asyncio.fixture
async def scene(
    temporal: Client, engine: Engine, settings: Settings, cipher: SecretCipher, org: Credentials
) -> AsyncIterator[Scene]:
    queue = fresh_queue()
    acts = BrokenChannel(engine, settings, JourneySecrets(settings.master_key_bytes()))
    acts.broken = True
    async with running_worker(temporal, queue, activities_with(engine, settings, acts)):
        bundle = insert_request(engine, org.organization_id)
        assert await start_request_workflow(temporal, queue, bundle)
        ctx = Context(settings, engine, cipher, temporal=temporal)
        yield Scene(ctx, acts, bundle.request.id, bundle.subjects[0][1].id)


async def undelivered(scene: Scene, count: int) -> None:
    handle = request_handle(scene.ctx.client(), scene.request_id)
    for _ in range(200):
        [view] = (await status_of(handle)).subjects
        if view.undelivered >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the send never came back undelivered")


async def test_support_sends_a_code_again_after_an_undelivered_one(
    scene: Scene, engine: Engine, org: Credentials
) -> None:
    ctx, request_id, subject = scene.ctx, scene.request_id, scene.subject_id
    await undelivered(scene, 1)
    # the subject's own limits hold an ordinary resend (a minute apart)...
    with pytest.raises(Refused) as too_soon:
        await requests.resend_code(ctx, SUPPORT, org.organization_id, request_id, subject)
    assert too_soon.value.refusal == UpdateRefusal.TOO_SOON
    # ...not support's retry of the undelivered code; while the channel is still down it fails again
    failed = await retries.retry_code(ctx, SUPPORT, org.organization_id, request_id, subject, "mailbox back?")
    assert (failed.delivered, failed.error_code) == (False, "UNDELIVERABLE")
    await undelivered(scene, 2)

    scene.acts.broken = False  # the channel works again: one more retry, for that failed send
    sent = await retries.retry_code(ctx, SUPPORT, org.organization_id, request_id, subject, "mailbox fixed")
    assert sent.delivered and sent.channel == "email"
    message = await message_for(request_id, subject)
    assert message.to == "ana@example.com"

    # delivered: nothing is left to retry
    with pytest.raises(Refused) as nothing:
        await retries.retry_code(ctx, SUPPORT, org.organization_id, request_id, subject, "once more")
    assert nothing.value.refusal == UpdateRefusal.NOTHING_UNDELIVERED

    resent = [
        (r.actor, r.data.get("reason"))
        for r in chain(engine, org.organization_id)
        if r.request_id == request_id and r.type == audit.OTP_RESENT
    ]
    assert resent == [("member:m-support-code", "mailbox fixed")]  # the broken sends stored nothing
    # each retry names itself in the Temporal UI (its activity's summary)
    history = await request_handle(ctx.client(), request_id).fetch_history()
    summaries = [
        json.loads(e.user_metadata.summary.data)
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes") and e.user_metadata.summary.data
    ]
    retried = [s for s in summaries if s.startswith("retry of an undelivered code")]
    replayed = await Replayer(
        workflows=[CredentialRequestWorkflow], data_converter=pydantic_data_converter
    ).replay_workflow(history)
    assert replayed.replay_failure is None  # the new update replays from its own history
    assert retried == [
        f"retry of an undelivered code by member:m-support-code: code 2 to subject {subject}",
        f"retry of an undelivered code by member:m-support-code: code 3 to subject {subject}",
    ]


async def test_bad_values_and_other_organizations_are_refused(scene: Scene, org: Credentials) -> None:
    ctx, request_id, subject = scene.ctx, scene.request_id, scene.subject_id
    for request, who, reason, error in (
        (request_id, "NOT-A-UUID", "why", Invalid),
        ("nope", subject, "why", Invalid),
        (request_id, subject, "", Invalid),
        (request_id, subject, "x" * 201, Invalid),
        ("0" * 24, subject, "why", NotFound),
    ):
        with pytest.raises(error):
            await retries.retry_code(ctx, SUPPORT, org.organization_id, request, who, reason)
    stranger = new_org(ctx.engine, ctx.cipher, ctx.settings).organization_id
    with pytest.raises(NotFound):
        await retries.retry_code(ctx, SUPPORT, stranger, request_id, subject, "not mine")
