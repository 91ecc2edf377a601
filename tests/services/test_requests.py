"""services.requests: each operation by a named actor, the audit records naming it, and its refusals
as typed errors (the API renders them with one status table)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from core.actors import Actor
from core.kinds import RequestStatus, UpdateRefusal
from core.secretbox import SecretCipher
from core.settings import Settings
from services import requests
from services.context import Context
from services.errors import Conflict, Invalid, NotFound, Refused
from store import audit
from tests.conftest import new_org
from tests.support.api_client import Credentials, SignedClient, assert_error_shape, policy_request
from tests.support.audit import chain
from tests.support.journey_messages import message_for
from wire.models import CreateRequestIn

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal)


async def _create(ctx: Context, actor: Actor, org: Credentials) -> str:
    created = await requests.create(
        ctx, actor, org.organization_id, CreateRequestIn.model_validate(policy_request()), rate_per_minute=100
    )
    assert created.status_code == 201 and created.bundle is not None
    return created.bundle.request.id


def _records(engine: Engine, org_id: str, kind: str) -> list[tuple[str | None, str | None]]:
    return [(r.request_id, r.actor) for r in chain(engine, org_id) if r.type == kind]


async def test_creation_records_its_actor_through_the_service_and_the_api(
    ctx: Context, engine: Engine, org: Credentials, api: SignedClient
) -> None:
    operator = Actor.shell_operator("alice")
    by_service = await _create(ctx, operator, org)
    answer = await api.post("/request", policy_request())
    assert answer.status_code == 201, answer.text
    by_api = answer.json()["data"]["id"]
    assert _records(engine, org.organization_id, audit.REQUEST_CREATED) == [
        (by_service, "operator:alice"),
        (by_api, f"apiKey:{org.key_id}"),
    ]


async def test_cancel_by_an_actor_is_recorded_as_theirs_and_a_second_cancel_is_refused(
    ctx: Context, engine: Engine, org: Credentials, api: SignedClient
) -> None:
    request_id = await _create(ctx, Actor.api_key(org.key_id), org)
    await requests.cancel(ctx, Actor.shell_operator("bob"), org.organization_id, request_id)
    bundle = await requests.get(ctx, org.organization_id, request_id)
    assert bundle.request.status == RequestStatus.CANCELED and bundle.request.canceled_by == "operator:bob"
    assert _records(engine, org.organization_id, audit.MANDATE_CANCELED) == [(request_id, "operator:bob")]
    # the workflow has ended: the request's recorded state answers
    with pytest.raises(Conflict, match=r"^The request is canceled$"):
        await requests.cancel(ctx, Actor.shell_operator("bob"), org.organization_id, request_id)
    body = assert_error_shape(await api.delete(f"/request/{request_id}"), 409)
    assert body["message"] == "The request is canceled"
    assert len(_records(engine, org.organization_id, audit.MANDATE_CANCELED)) == 1


async def test_another_organizations_request_is_not_found_and_a_bad_id_is_invalid(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    request_id = await _create(ctx, Actor.api_key(org.key_id), org)
    stranger = new_org(engine, cipher, settings)
    with pytest.raises(NotFound):
        await requests.get(ctx, stranger.organization_id, request_id)
    with pytest.raises(NotFound):
        await requests.cancel(ctx, Actor.api_key(stranger.key_id), stranger.organization_id, request_id)
    with pytest.raises(Invalid):
        await requests.get(ctx, org.organization_id, request_id.upper())
    assert (await requests.get(ctx, org.organization_id, request_id)).request.status == RequestStatus.PENDING


async def test_a_resend_too_soon_is_a_refusal_with_its_wait_on_every_surface(
    ctx: Context, org: Credentials, api: SignedClient
) -> None:
    request_id = await _create(ctx, Actor.api_key(org.key_id), org)
    bundle = await requests.get(ctx, org.organization_id, request_id)
    subject_id = bundle.subjects[0][1].id
    await message_for(request_id, subject_id)  # the first code is out: a resend now is too soon
    with pytest.raises(Refused) as refused:
        await requests.resend_code(
            ctx, Actor.shell_operator("carol"), org.organization_id, request_id, subject_id
        )
    assert refused.value.refusal == UpdateRefusal.TOO_SOON
    assert refused.value.retry_after is not None and 0 < refused.value.retry_after <= 60
    answer = await api.request(
        "PATCH", f"/request/resend/{request_id}", params={"contact": "ana@example.com"}
    )
    assert_error_shape(answer, 429)
    assert 0 < int(answer.headers["Retry-After"]) <= 60
