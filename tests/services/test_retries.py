"""services.retries (issue 32): what a retry refuses before anything is started, whoever asks."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import retries
from services.context import Context
from services.errors import Conflict, Forbidden, Invalid, NotFound
from store import audit
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.retries import failed_credential, repair
from tests.support.workflow import db_request, insert_request

pytestmark = pytest.mark.usefixtures("worker")

SUPPORT = Actor.member("m-support-svc")


@pytest.fixture
def tctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal=temporal)


@pytest.mark.parametrize(
    ("credential_id", "reason", "error", "says"),
    [
        ("0" * 24, "", Invalid, "the reason is empty"),
        ("0" * 24, "x" * 201, Invalid, "at most 200"),
        ("0" * 24, "two\nlines", Invalid, "one line"),
        ("NOT-AN-ID", "why", Invalid, "is not a credential id"),
        ("a" * 25, "why", Invalid, "is not a credential id"),
        ("0" * 24, "why", NotFound, "not found"),
    ],
)
async def test_bad_values_are_refused(
    tctx: Context, org: Credentials, credential_id: str, reason: str, error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        await retries.retry_issuance(tctx, SUPPORT, org.organization_id, credential_id, reason)


async def test_another_organizations_credential_is_not_found(
    tctx: Context,
    temporal: Client,
    engine: Engine,
    settings: Settings,
    cipher: SecretCipher,
    org: Credentials,
) -> None:
    _, cred = await failed_credential(temporal, settings.task_queue, engine, org.organization_id)
    repair(engine, cred)
    other = new_org(engine, cipher, settings).organization_id
    with pytest.raises(NotFound):
        await retries.retry_issuance(tctx, SUPPORT, other, cred, "not mine")
    assert [
        r
        for r in chain(engine, org.organization_id)
        if r.type == audit.MANDATE_ISSUANCE_RETRIED and r.credential_id == cred
    ] == []


async def test_only_a_failed_credential_is_retried(tctx: Context, engine: Engine, org: Credentials) -> None:
    bundle = insert_request(engine, org.organization_id)
    cred = bundle.credentials[0].id
    with pytest.raises(Conflict, match="is DRAFT: only a FAILED credential"):
        await retries.retry_issuance(tctx, SUPPORT, org.organization_id, cred, "why")
    assert db_request(engine, org.organization_id, bundle.request.id).credentials[0].status == "DRAFT"


async def test_the_operators_retry_is_for_operators_only(
    tctx: Context, temporal: Client, engine: Engine, settings: Settings, org: Credentials
) -> None:
    request_id, cred = await failed_credential(temporal, settings.task_queue, engine, org.organization_id)
    with pytest.raises(Forbidden):
        await retries.operator_retry_issuance(tctx, SUPPORT, cred, "why")
    repair(engine, cred)
    done = await retries.operator_retry_issuance(tctx, Actor.shell_operator("ops-cy"), cred, "fixed")
    assert done.state == "issued" and done.request_id == request_id
    [record] = [
        r
        for r in chain(engine, org.organization_id)
        if r.type == audit.MANDATE_ISSUANCE_RETRIED and r.credential_id == cred
    ]
    assert (record.actor, record.data["reason"]) == ("operator:ops-cy", "fixed")
