"""services.first_steps (issue 34): the overview's five first steps, each ticked by what the
organization's own rows show, and never by another organization's; on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, update
from sqlmodel import col

from cli.devstack import publish_example_action
from core.secretbox import SecretCipher
from core.settings import Settings
from services import first_steps
from services.context import Context
from store import orgs
from store.db import utcnow, write_session
from store.tables import Credential, WebhookEvent
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.workflow import insert_request

pytestmark = pytest.mark.both_databases


def _ticks(steps: list[first_steps.Step]) -> list[bool]:
    return [s.done for s in steps]


async def test_each_step_is_ticked_by_the_organizations_own_rows(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    other = new_org(engine, cipher, settings)  # with the example action published
    made, key = orgs.create_organization(engine, cipher, "First steps", 1000)  # nothing else
    org = Credentials(made.id, key.key_id, key.api_key, key.signature_secret, "")
    steps = await first_steps.first_steps(ctx, org.organization_id)
    assert [s.href for s in steps] == [
        "/dashboard/keys",
        "/dashboard/webhooks",
        "/dashboard/actions",
        "/docs",
        "/dashboard/mandates",
    ]
    assert _ticks(steps) == [True, False, False, False, False]  # made with a key

    orgs.revoke_key(engine, org.key_id, actor="member:tests")
    assert _ticks(await first_steps.first_steps(ctx, org.organization_id))[0] is False

    # another organization's test event, request and mandate tick nothing here
    theirs = insert_request(engine, other.organization_id)
    with write_session(engine) as session:
        session.add(
            WebhookEvent(
                id="urn:via:event:first-steps-other-" + other.organization_id,
                organization_id=other.organization_id,
                fact_key="test:first-steps-" + other.organization_id,
                event_type="test",
                payload={},
                created_at=utcnow(),
                state="delivered",
            )
        )
        session.execute(
            update(Credential)
            .where(col(Credential.request_id) == theirs.request.id)
            .values(mandate_id="urn:via:credential:first-steps-" + other.organization_id)
        )
    assert _ticks(await first_steps.first_steps(ctx, org.organization_id)) == [False] * 5

    ours = insert_request(engine, org.organization_id)
    publish_example_action(engine, org.organization_id)
    with write_session(engine) as session:
        pending = WebhookEvent(
            id="urn:via:event:first-steps-" + org.organization_id,
            organization_id=org.organization_id,
            fact_key="test:first-steps-" + org.organization_id,
            event_type="test",
            payload={},
            created_at=utcnow(),
            state="pending",
        )
        session.add(pending)
    assert _ticks(await first_steps.first_steps(ctx, org.organization_id)) == [
        False,
        False,
        True,
        True,
        False,
    ]
    with write_session(engine) as session:
        session.execute(
            update(WebhookEvent).where(col(WebhookEvent.id) == pending.id).values(state="delivered")
        )
        session.execute(
            update(Credential)
            .where(col(Credential.request_id) == ours.request.id)
            .values(mandate_id="urn:via:credential:first-steps-" + org.organization_id)
        )
    assert _ticks(await first_steps.first_steps(ctx, org.organization_id)) == [False, True, True, True, True]
