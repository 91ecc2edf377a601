"""``mandatum request retry`` (issue 32): each retry calls the dashboard's service as the operator
running the command, with the ``--reason`` it requires; refusals are one line and exit 1."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import start_request_workflow
from store import audit, request_records
from store import kyc as kyc_store
from store.db import utcnow
from tests.conftest import MASTER_KEY, new_org
from tests.support.audit import chain
from tests.support.cli import clean_env, run_cli
from tests.support.journey_messages import message_for
from tests.support.retries import failed_credential, repair
from tests.support.workflow import db_request, insert_request

pytestmark = pytest.mark.usefixtures("worker")


def env(settings: Settings, temporal: Client) -> dict[str, str]:
    return clean_env(
        MANDATUM_DATABASE_URL=settings.sqlalchemy_url,
        MANDATUM_MASTER_KEY=MASTER_KEY,
        MANDATUM_VAR_DIR=str(settings.var_dir),
        MANDATUM_PUBLIC_URL=settings.public_url,
        MANDATUM_ENVIRONMENT="test",
        MANDATUM_TASK_QUEUE=settings.task_queue,
        MANDATUM_TEMPORAL_ADDRESS=temporal.service_client.config.target_host,
        LOGNAME="support-bea",
    )


async def mandatum(settings: Settings, temporal: Client, *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(run_cli, list(args), env(settings, temporal))


async def test_retry_issuance_issues_a_failed_credential_naming_the_operator(
    temporal: Client, engine: Engine, settings: Settings, cipher: SecretCipher
) -> None:
    org_id = new_org(engine, cipher, settings).organization_id
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org_id)
    repair(engine, cred)

    done = await mandatum(
        settings, temporal, "request", "retry", "issuance", cred, "--reason", "fixed the amount", "--json"
    )

    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    [stored] = db_request(engine, org_id, request_id).credentials
    assert (shown["state"], shown["credentialId"], shown["requestId"]) == ("issued", cred, request_id)
    assert (shown["workflowId"], shown["mandateId"]) == (f"credential-retry:{cred}", stored.mandate_id)
    assert stored.status == "ACTIVE"
    [record] = [r for r in chain(engine, org_id) if r.type == audit.MANDATE_ISSUANCE_RETRIED]
    assert (record.actor, record.data["reason"]) == ("operator:support-bea", "fixed the amount")
    # asked again: the same answer, as text
    again = await mandatum(settings, temporal, "request", "retry", "issuance", cred, "--reason", "again")
    assert (
        again.returncode == 0
        and "Credential issued." in again.stdout
        and str(stored.mandate_id) in again.stdout
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("0" * 24,), "--reason is required"),
        (("0" * 24, "--reason", " "), "--reason: the reason is empty"),
        (("0" * 24, "--reason", "x" * 201), "at most 200"),
        (("nope", "--reason", "why"), "is not a credential id"),
        (("0" * 24, "--reason", "why"), "not found"),
    ],
)
async def test_refusals_are_one_line(
    temporal: Client, settings: Settings, args: tuple[str, ...], says: str
) -> None:
    done = await mandatum(settings, temporal, "request", "retry", "issuance", *args)
    assert (done.returncode, done.stdout) == (1, ""), done
    assert done.stderr.startswith("error: ") and says in done.stderr and done.stderr.count("\n") == 1


async def test_a_retry_that_fails_again_is_refused(
    temporal: Client, engine: Engine, settings: Settings, cipher: SecretCipher
) -> None:
    org_id = new_org(engine, cipher, settings).organization_id
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org_id)
    done = await mandatum(settings, temporal, "request", "retry", "issuance", cred, "--reason", "still bad")
    assert done.returncode == 1 and "FAILED again" in done.stderr
    assert db_request(engine, org_id, request_id).credentials[0].status == "FAILED"


async def test_retry_code_and_identity_call_the_service_as_the_operator(
    temporal: Client, engine: Engine, settings: Settings, cipher: SecretCipher
) -> None:
    org_id = new_org(engine, cipher, settings).organization_id
    bundle = insert_request(engine, org_id, security_level="PLATFORM_KYC")
    assert await start_request_workflow(temporal, settings.task_queue, bundle)
    request_id, subject = bundle.request.id, bundle.subjects[0][1].id
    await message_for(request_id, subject)  # the first code was delivered: nothing to retry
    delivered = await mandatum(
        settings, temporal, "request", "retry", "code", request_id, "--subject", subject, "--reason", "why"
    )
    assert delivered.returncode == 1 and "nothing to retry" in delivered.stderr
    assert delivered.stderr.count("\n") == 1

    stuck = kyc_store.start_check(engine, request_id, subject, "development", utcnow())
    done = await mandatum(
        settings,
        temporal,
        "request",
        "retry",
        "identity",
        request_id,
        "--subject",
        subject,
        "--reason",
        "provider outage",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "requestId": request_id,
        "subjectId": subject,
        "closedChecks": [stuck.id],
    }
    [record] = [r for r in chain(engine, org_id) if r.type == audit.IDENTITY_CHECK_RESTARTED]
    assert (record.actor, record.data["reason"]) == ("operator:support-bea", "provider outage")
    again = await mandatum(
        settings, temporal, "request", "retry", "identity", request_id, "--subject", subject, "--reason", "x"
    )
    assert again.returncode == 1 and "nothing errored" in again.stderr
    for args, says in (
        (("code", "nope", "--subject", subject, "--reason", "why"), "24"),
        (("identity", request_id, "--subject", "NOT-A-UUID", "--reason", "why"), "not a subject id"),
        (("code", request_id, "--subject", subject), "--reason is required"),
    ):
        refused = await mandatum(settings, temporal, "request", "retry", *args)
        assert refused.returncode == 1 and says in refused.stderr, (args, refused.stderr)


async def test_send_again_makes_the_new_request_naming_the_operator(
    temporal: Client, engine: Engine, settings: Settings, cipher: SecretCipher
) -> None:
    org_id = new_org(engine, cipher, settings).organization_id
    old = insert_request(engine, org_id, internal_id="order-cli-again")
    request_records.record_expiry(engine, old.request.id)

    done = await mandatum(
        settings,
        temporal,
        "request",
        "retry",
        "send-again",
        old.request.id,
        "--reason",
        "expired on holiday",
        "--json",
    )

    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    made = db_request(engine, org_id, shown["requestId"])
    assert (shown["resentFrom"], made.request.resent_from, made.request.internal_id) == (
        old.request.id,
        old.request.id,
        "order-cli-again",
    )
    [record] = [r for r in chain(engine, org_id) if r.type == audit.REQUEST_RESENT]
    assert (record.actor, record.data["reason"]) == ("operator:support-bea", "expired on holiday")
    shown_old = json.loads(
        (await mandatum(settings, temporal, "request", "show", old.request.id, "--json")).stdout
    )
    assert (shown_old["resentAs"], shown_old["resentFrom"]) == (shown["requestId"], None)
    text = (await mandatum(settings, temporal, "request", "show", shown["requestId"])).stdout
    assert f"sent from   {old.request.id}" in text
    twice = await mandatum(
        settings, temporal, "request", "retry", "send-again", old.request.id, "--reason", "again"
    )
    assert twice.returncode == 1 and f"already sent again as {shown['requestId']}" in twice.stderr
    unreasoned = await mandatum(settings, temporal, "request", "retry", "send-again", old.request.id)
    assert unreasoned.returncode == 1 and "--reason is required" in unreasoned.stderr
