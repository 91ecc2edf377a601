"""Support from a shell: ``mandatum request show|find|cancel|resend|link``, ``webhook attempts|resend``
and ``mandate revoke``, each calling the dashboard's service functions as the operator running the
command, with the ``--reason`` it requires recorded in the audit record the action writes; refusals
are one line and exit 1, and with Temporal unreachable nothing is done.

One organization and one request (with its workflow) per module and database. Runs on the
time-skipping server, so the minute between two codes (CONTRACT 4) is skipped, not waited.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy import Engine
from temporalio.testing import WorkflowEnvironment

from core.actors import Actor
from core.otp import approval_url
from core.secretbox import SecretCipher
from core.settings import Settings
from services import requests
from services.context import Context
from store import audit
from store import request_queries as queries
from store import webhooks as webhook_store
from store.db import utcnow
from store.tables import AuditRecord, WebhookEvent
from tests.conftest import MASTER_KEY, new_org
from tests.support.api_client import policy_request
from tests.support.audit import chain, issued_mandate
from tests.support.cli import clean_env, run_cli
from tests.support.journey_messages import journey_secrets, message_for
from tests.support.workflow import executor, insert_request, ts_queue  # noqa: F401 (fixtures)
from wire.models import CreateRequestIn

pytestmark = pytest.mark.usefixtures("no_server_errors")
OPERATOR = "operator:support-ana"  # LOGNAME of the commands run here
REASON = "Ana called: her code never arrived"
# what `request show` says of a subject's code: counts and times, never the code or its hash
CODE_FIELDS = ("channel", "sends", "lastSentAt", "wrongTries", "lockedAt", "confirmedAt", "deliveryError")


@dataclass
class Shell:
    env: dict[str, str]

    async def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """``mandatum ARGS`` off the event loop, which the worker needs meanwhile."""
        return await asyncio.to_thread(run_cli, list(args), {**self.env, **env})

    async def json(self, *args: str) -> Any:
        done = await self.run(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    async def refused(self, *args: str, **env: str) -> str:
        """The one line a refused command prints (exit 1, nothing on stdout)."""
        done = await self.run(*args, **env)
        assert (done.returncode, done.stdout) == (1, ""), (done.returncode, done.stdout, done.stderr)
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
        return done.stderr.strip()


@dataclass(frozen=True)
class Live:
    org_id: str
    request_id: str
    subject_id: str


@pytest.fixture(scope="module")
def shell(ts_env: WorkflowEnvironment, ts_queue: str, settings: Settings) -> Shell:  # noqa: F811
    return Shell(
        clean_env(
            MANDATUM_DATABASE_URL=settings.sqlalchemy_url,
            MANDATUM_MASTER_KEY=MASTER_KEY,
            MANDATUM_VAR_DIR=str(settings.var_dir),
            MANDATUM_PUBLIC_URL=settings.public_url,
            MANDATUM_ENVIRONMENT="test",
            MANDATUM_TASK_QUEUE=ts_queue,
            MANDATUM_TEMPORAL_ADDRESS=ts_env.client.service_client.config.target_host,
            LOGNAME="support-ana",
        )
    )


@pytest_asyncio.fixture(scope="module")
async def live(
    ts_env: WorkflowEnvironment,
    ts_queue: str,  # noqa: F811
    settings: Settings,
    engine: Engine,
    cipher: SecretCipher,
) -> Live:
    """A request with its workflow (on the time-skipping server), its first code sent."""
    org = new_org(engine, cipher, settings)
    ctx = Context(settings.model_copy(update={"task_queue": ts_queue}), engine, cipher, ts_env.client)
    body = CreateRequestIn.model_validate(policy_request(internalId="order-cli-7"))
    created = await requests.create(
        ctx, Actor.api_key(org.key_id), org.organization_id, body, rate_per_minute=100
    )
    assert created.bundle is not None
    made = Live(org.organization_id, created.bundle.request.id, created.bundle.subjects[0][1].id)
    await message_for(made.request_id, made.subject_id)
    return made


def _by_operator(engine: Engine, org_id: str) -> list[AuditRecord]:
    return [r for r in chain(engine, org_id) if r.actor == OPERATOR]


def _status(engine: Engine, org_id: str, request_id: str) -> str:
    bundle = queries.get_request(engine, org_id, request_id)
    assert bundle is not None
    return bundle.request.status


async def test_show_and_find_a_request_by_each_key(
    shell: Shell, live: Live, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    shown = await shell.json("request", "show", live.request_id)
    assert (shown["id"], shown["organizationId"], shown["status"]) == (
        live.request_id,
        live.org_id,
        "PENDING",
    )
    [subject] = shown["subjects"]
    assert (subject["id"], subject["contact"], subject["code"]["sends"]) == (
        live.subject_id,
        "ana@example.com",
        1,
    )
    assert set(subject["code"]) == set(CODE_FIELDS)
    assert [c["name"] for c in shown["credentials"]] == ["Rent payments"]
    assert [r["type"] for r in shown["auditRecords"]] == [audit.REQUEST_CREATED]
    text = (await shell.run("request", "show", live.request_id)).stdout
    assert "ana@example.com" in text and "1 sent by email" in text and "REQUEST_CREATED" in text
    token = journey_secrets().link_token(live.request_id, live.subject_id)
    assert token not in text and token not in json.dumps(shown)  # no link, so no code either

    mandate = issued_mandate(engine, cipher, settings, live.org_id)
    event = _event(engine, live.org_id, mandate.request_id)
    decided = await shell.json("request", "show", mandate.request_id)
    [cred] = decided["credentials"]
    assert (cred["status"], cred["mandateId"]) == ("ACTIVE", mandate.mandate_id)
    assert [(d["contact"], d["accepted"]) for d in cred["decisions"]] == [("ana@example.com", True)]
    assert [e["id"] for e in decided["webhookEvents"]] == [event.id]
    for query, org, expected in (
        (live.request_id, None, [(live.request_id, "requestId")]),
        (mandate.mandate_id, None, [(mandate.request_id, "mandateId")]),
        (event.id, None, [(mandate.request_id, "eventId")]),
        ("order-cli-7", live.org_id, [(live.request_id, "internalId")]),
        ("ana@example.com", live.org_id, [(mandate.request_id, "contact"), (live.request_id, "contact")]),
        (live.request_id, new_org(engine, cipher, settings).organization_id, []),  # another org's
        ("0" * 24, None, []),
    ):
        found = await shell.json("request", "find", query, *(["--org", org] if org else []))
        assert [(r["requestId"], r["matchedBy"]) for r in found["requests"]] == expected, query
    assert "order-cli-7" in (await shell.run("request", "find", "order-cli-7", "--org", live.org_id)).stdout
    # without --org, an internalId or a contact is found in every organization (issue 34)
    anywhere = await shell.json("request", "find", "order-cli-7")
    assert [(r["requestId"], r["matchedBy"], r["organizationId"]) for r in anywhere["requests"]] == [
        (live.request_id, "internalId", live.org_id)
    ]
    by_contact = await shell.json("request", "find", "ANA@example.com")
    ours = [
        (r["requestId"], r["matchedBy"]) for r in by_contact["requests"] if r["organizationId"] == live.org_id
    ]
    assert ours == [(mandate.request_id, "contact"), (live.request_id, "contact")]
    assert all(r["organization"] for r in by_contact["requests"])
    assert "type a request id" in await shell.refused("request", "find", "   ")
    assert "not found" in await shell.refused("request", "show", "f" * 24)
    assert "24-character" in await shell.refused("request", "show", "nope")


async def test_a_missing_or_bad_reason_is_refused_before_anything_happens(
    shell: Shell, live: Live, engine: Engine
) -> None:
    before = len(chain(engine, live.org_id))
    subject = ("--subject", live.subject_id)
    event = "urn:via:event:00000000-0000-4000-8000-000000000000"
    for command in (
        ("request", "cancel", live.request_id),
        ("request", "resend", live.request_id, *subject),
        ("request", "link", live.request_id, *subject),
        ("webhook", "resend", event),
        ("mandate", "revoke", "urn:via:credential:00000000-0000-4000-8000-000000000000"),
    ):
        assert "--reason is required" in await shell.refused(*command)
    for reason, why in (
        ("  ", "the reason is empty"),
        ("x" * 201, "at most 200"),
        ("two\nlines", "U+000A"),
        ("right\u202eleft", "U+202E"),
    ):
        assert why in await shell.refused("request", "cancel", live.request_id, "--reason", reason)
    assert len(chain(engine, live.org_id)) == before
    assert _status(engine, live.org_id, live.request_id) == "PENDING"


async def test_resend_link_and_cancel_each_record_the_operator_and_the_reason(
    shell: Shell, live: Live, engine: Engine, settings: Settings, ts_env: WorkflowEnvironment
) -> None:
    subject = ("--subject", live.subject_id, "--reason", REASON)
    too_soon = await shell.refused("request", "resend", live.request_id, *subject)
    assert "A new code can be sent in" in too_soon and "seconds" in too_soon
    assert _by_operator(engine, live.org_id) == []
    first = await message_for(live.request_id, live.subject_id)
    await ts_env.sleep(61)  # CONTRACT 4's minute, skipped
    sent = await shell.json("request", "resend", live.request_id, *subject)
    assert (sent["delivered"], sent["channel"]) == (True, "email")
    await message_for(live.request_id, live.subject_id, newer_than=first.id)

    link = await shell.json("request", "link", live.request_id, *subject)
    assert link["url"] == approval_url(
        settings.public_url, journey_secrets(), live.request_id, live.subject_id
    )
    canceled = await shell.json("request", "cancel", live.request_id, "--reason", REASON)
    assert (canceled["status"], canceled["canceledBy"]) == ("CANCELED", OPERATOR)
    assert [(r.type, r.data.get("reason")) for r in _by_operator(engine, live.org_id)] == [
        (audit.OTP_RESENT, REASON),
        (audit.SUBJECT_LINK_SHOWN, REASON),
        (audit.MANDATE_CANCELED, REASON),
    ]
    assert "The request is canceled" in await shell.refused(
        "request", "cancel", live.request_id, "--reason", "x"
    )
    assert "links open nothing" in await shell.refused("request", "link", live.request_id, *subject)
    nobody = ("--subject", "nobody", "--reason", "x")
    assert "no subject" in await shell.refused("request", "link", live.request_id, *nobody)


async def test_webhook_attempts_and_resend_of_a_failed_event(
    shell: Shell, live: Live, engine: Engine
) -> None:
    event = _event(engine, live.org_id, live.request_id)
    url = "https://hooks.example.test/in?token=receivers-secret"
    webhook_store.record_attempt(engine, event.id, utcnow(), 500, "HTTP 500", False, None, url, 12)
    webhook_store.mark_failed(engine, event.id, "gave up")
    log = await shell.json("webhook", "attempts", event.id)
    assert log["event"]["state"] == "failed"
    assert [(a["number"], a["status"], a["durationMs"], a["url"]) for a in log["attempts"]] == [
        (1, 500, 12, "https://hooks.example.test/in")
    ]
    text = (await shell.run("webhook", "attempts", event.id)).stdout
    assert "#1" in text and "HTTP 500" in text and "12 ms" in text and "receivers-secret" not in text

    resent = await shell.json("webhook", "resend", event.id, "--reason", REASON)
    assert (resent["kind"], resent["workflowId"]) == ("retry", f"webhook:{event.id}")
    [record] = [r for r in _by_operator(engine, live.org_id) if r.type == audit.WEBHOOK_REDELIVERY]
    assert (record.data["eventId"], record.data["kind"], record.data["reason"]) == (event.id, "retry", REASON)
    again = await shell.refused("webhook", "resend", event.id, "--reason", REASON)  # pending or skipped now
    assert "only a failed one is retried, a delivered one resent" in again
    assert "not found" in await shell.refused("webhook", "attempts", "urn:via:event:nothing")


async def test_webhook_replay_of_a_range_of_days(shell: Shell, live: Live, engine: Engine) -> None:
    """Issue 34: every failed event made on those UTC days is delivered again, each a retry."""
    event = _event(engine, live.org_id, live.request_id)
    webhook_store.mark_failed(engine, event.id, "gave up")
    day = event.created_at.date().isoformat()
    done = await shell.json(
        "webhook", "replay", "--org", live.org_id, "--from", day, "--to", day, "--reason", REASON
    )
    assert (done["started"], done["refused"], done["more"]) == ([event.id], {}, False)
    [record] = [
        r
        for r in _by_operator(engine, live.org_id)
        if r.type == audit.WEBHOOK_REDELIVERY and r.data["eventId"] == event.id
    ]
    assert record.data["kind"] == "retry"
    bad = await shell.refused(
        "webhook", "replay", "--org", live.org_id, "--from", day, "--to", "2000-01-01", "--reason", REASON
    )
    assert "dateTo must not be before dateFrom" in bad


async def test_mandate_revoke_records_the_reason(
    shell: Shell, live: Live, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    mandate = issued_mandate(engine, cipher, settings, live.org_id)
    revoked = await shell.json("mandate", "revoke", mandate.mandate_id, "--reason", REASON)
    assert (revoked["mandateId"], revoked["organizationId"]) == (mandate.mandate_id, live.org_id)
    [record] = [r for r in _by_operator(engine, live.org_id) if r.type == audit.MANDATE_REVOKED]
    assert (record.credential_id, record.data["reason"]) == (mandate.mandate_id, REASON)
    assert "is REVOKED" in await shell.refused("mandate", "revoke", mandate.mandate_id, "--reason", REASON)
    unknown = "urn:via:credential:00000000-0000-4000-8000-000000000000"
    assert "not found" in await shell.refused("mandate", "revoke", unknown, "--reason", REASON)


def _event(engine: Engine, org_id: str, request_id: str) -> WebhookEvent:
    """A webhook event about the request, not delivered."""
    event, _ = webhook_store.create_event(
        engine, org_id, f"cli:{uuid.uuid4()}", "otp.failed", request_id, lambda event_id, at: {"id": event_id}
    )
    return event


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


async def test_with_temporal_unreachable_nothing_is_done(shell: Shell, live: Live, engine: Engine) -> None:
    down = {"MANDATUM_TEMPORAL_ADDRESS": _closed_port()}
    waiting = insert_request(engine, live.org_id)
    records = len(chain(engine, live.org_id))
    test_events = [e.id for e in webhook_store.list_events(engine, live.org_id) if e.event_type == "test"]
    for command in (
        ("webhook", "test", "--org", live.org_id),
        ("request", "cancel", waiting.request.id, "--reason", REASON),
        ("request", "resend", waiting.request.id, "--subject", waiting.subjects[0][1].id, "--reason", REASON),
    ):
        assert "Temporal at 127.0.0.1:" in await shell.refused(*command, **down)
    assert [
        e.id for e in webhook_store.list_events(engine, live.org_id) if e.event_type == "test"
    ] == test_events
    assert len(chain(engine, live.org_id)) == records
    assert _status(engine, live.org_id, waiting.request.id) == "PENDING"
