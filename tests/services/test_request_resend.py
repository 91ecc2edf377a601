"""services.request_resend (issue 32): an expired, canceled or rejected request sent again as a new
request (same subjects and credentials, its own workflow, its expiry as long), once, linked both
ways, recorded with the actor and reason, announced by a ``request.resent`` event; each action's
newest published version when asked. Refused for an open request, one that issued something, one
sent again before (naming it), another organization's, and without a reason."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from cli.devstack import EXAMPLE_ACTION_ID
from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration.temporal import request_handle
from services import actions, request_resend
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import actions as action_store
from store import audit, orgs, request_records
from store import request_resend as resend_store
from store import requests as store
from store import webhooks as webhook_store
from store.db import utcnow
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.workflow import db_request

SUPPORT = Actor.member("6b0a0000000000000000beef")


@pytest.fixture
def live_ctx(
    settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client, worker: None
) -> Context:
    return Context(settings, engine, cipher, temporal)


def _request(engine: Engine, org_id: str, *, pinned: bool = False) -> store.RequestBundle:
    pin = None
    if pinned:
        pin, problems = action_store.pin_for_request(
            engine, org_id, EXAMPLE_ACTION_ID, {"maxAmount": 1200}, where="credentials.0.action"
        )
        assert pin is not None, problems
    new = store.NewRequest(
        security_level="CONTACT",
        contacts=[store.NewContact("ana@example.com", "email", internal_id="ana-1", signer_quality="Tenant")],
        credentials=[
            store.NewCredential("POLICY", "Rent payments", scope="payments", action=pin, max_executions=3),
            store.NewCredential("POLICY", "Utilities", scope="bills"),
        ],
        name="Pay the rent",
        internal_id="order-resend",
        language="PRT",
    )
    made = store.create_request(engine, org_id, new, timedelta(days=3), 10_000, None, None)
    assert isinstance(made, store.RequestBundle)
    return made


async def test_a_canceled_request_is_sent_again_once_linked_and_announced(
    live_ctx: Context, org: Credentials, engine: Engine
) -> None:
    old = _request(engine, org.organization_id)
    request_records.record_cancellation(engine, old.request.id, utcnow(), "apiKey:x", None)

    new = await request_resend.send_again(
        live_ctx, SUPPORT, org.organization_id, old.request.id, "  wrong e-mail  "
    )

    made = db_request(engine, org.organization_id, new.request.id)
    req = made.request
    assert (req.status, req.resent_from, req.name, req.internal_id, req.language) == (
        "PENDING",
        old.request.id,
        "Pay the rent",
        "order-resend",
        "PRT",
    )
    assert req.expires_at - req.created_at == old.request.expires_at - old.request.created_at
    assert [(s.id, link.internal_id, link.signer_quality) for link, s in made.subjects] == [
        (old.subjects[0][1].id, "ana-1", "Tenant")  # the same subject, with their options
    ]
    assert [(c.name, c.scope, c.max_executions) for c in made.credentials] == [
        ("Rent payments", "payments", 3),
        ("Utilities", "bills", None),
    ]
    assert {c.id for c in made.credentials}.isdisjoint({c.id for c in old.credentials})
    assert db_request(engine, org.organization_id, old.request.id).resent_as == req.id
    [resent] = [r for r in chain(engine, org.organization_id) if r.type == audit.REQUEST_RESENT]
    assert (resent.request_id, resent.actor, resent.data) == (
        old.request.id,
        str(SUPPORT),
        {"newRequestId": req.id, "reason": "wrong e-mail"},
    )
    created = [r for r in chain(engine, org.organization_id) if r.type == audit.REQUEST_CREATED]
    assert created[-1].request_id == req.id and created[-1].actor == str(SUPPORT)
    # its own workflow, named in the Temporal UI
    described = await request_handle(live_ctx.client(), req.id).describe()
    assert (
        await described.static_summary() == f"Credential request {req.id}, sent again from {old.request.id}"
    )
    # the integrator's event: the new id and the old one
    event = webhook_store.event_by_fact(engine, f"request.resent:{req.id}")
    assert event is not None and event.event_type == "request.resent" and event.request_id == req.id
    assert (event.payload["requestId"], event.payload["resentFrom"]) == (req.id, old.request.id)
    assert event.payload["user"]["contact"] == "ana@example.com"

    with pytest.raises(Conflict, match=f"already sent again as {req.id}"):
        await request_resend.send_again(live_ctx, SUPPORT, org.organization_id, old.request.id, "twice")
    with pytest.raises(Conflict, match="still open"):
        await request_resend.send_again(live_ctx, SUPPORT, org.organization_id, req.id, "open")


async def test_only_closed_requests_that_issued_nothing_are_sent_again(
    live_ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    expired = _request(engine, org.organization_id)
    request_records.record_expiry(engine, expired.request.id)
    assert await request_resend.send_again(
        live_ctx, SUPPORT, org.organization_id, expired.request.id, "again"
    )
    rejected = _request(engine, org.organization_id)
    [(_, subject)] = rejected.subjects
    for position, cred in enumerate(rejected.credentials):
        request_records.record_decision(
            engine,
            f"urn:via:decision:r{position}-{rejected.request.id}",
            rejected.request.id,
            cred.id,
            subject.id,
            False,
            "email",
            "hosted",
            utcnow(),
            position == 1,
        )
    assert db_request(engine, org.organization_id, rejected.request.id).request.status == "COMPLETED"
    assert await request_resend.send_again(
        live_ctx, SUPPORT, org.organization_id, rejected.request.id, "again"
    )
    accepted = _request(engine, org.organization_id)
    [(_, subject)] = accepted.subjects
    for position, cred in enumerate(accepted.credentials):
        request_records.record_decision(
            engine,
            f"urn:via:decision:a{position}-{accepted.request.id}",
            accepted.request.id,
            cred.id,
            subject.id,
            position == 0,
            "email",
            "hosted",
            utcnow(),
            position == 1,
        )
    with pytest.raises(Conflict, match="issued or accepted a credential"):
        await request_resend.send_again(live_ctx, SUPPORT, org.organization_id, accepted.request.id, "no")
    other = new_org(engine, cipher, settings)
    with pytest.raises(NotFound):
        await request_resend.send_again(
            live_ctx, SUPPORT, other.organization_id, expired.request.id, "theirs"
        )
    for reason in ("", " ", "two\nlines", "x" * 201):
        with pytest.raises(Invalid):
            await request_resend.send_again(
                live_ctx, SUPPORT, org.organization_id, expired.request.id, reason
            )
    with pytest.raises(Invalid):
        await request_resend.send_again(live_ctx, SUPPORT, org.organization_id, "not-an-id", "bad id")


async def test_the_newest_published_version_when_asked(
    live_ctx: Context, org: Credentials, engine: Engine
) -> None:
    old = _request(engine, org.organization_id, pinned=True)
    request_records.record_expiry(engine, old.request.id)
    v1 = old.credentials[0].action
    assert v1 is not None
    view = action_store.get_action(engine, org.organization_id, EXAMPLE_ACTION_ID)
    assert view is not None
    draft = actions.add_version(
        live_ctx, SUPPORT, org.organization_id, EXAMPLE_ACTION_ID, action_store.spec_of(view.versions[-1])
    )
    v2 = actions.publish(live_ctx, SUPPORT, draft.id, org.organization_id)

    same = await request_resend.send_again(
        live_ctx, SUPPORT, org.organization_id, old.request.id, "as it was"
    )
    assert same.credentials[0].action == v1  # the version it had
    other = _request(engine, org.organization_id, pinned=True)
    request_records.record_expiry(engine, other.request.id)
    newest = await request_resend.send_again(
        live_ctx, SUPPORT, org.organization_id, other.request.id, "newest", newest=True
    )
    pin = newest.credentials[0].action
    assert pin is not None and (pin["version"], pin["userParams"]["maxAmount"]) == (v2.id, 1200)


async def test_organizations_on_older_versions_get_no_event(
    live_ctx: Context, org: Credentials, engine: Engine
) -> None:
    """The older releases' typed parser fails on an event type it does not know: an organization
    pinned to 2026-09-01 gets no ``request.resent`` (and the worker's pass does not look for it)."""
    orgs.set_api_version(engine, org.organization_id, "2026-09-01", actor="operator:tests")
    old = _request(engine, org.organization_id)
    request_records.record_expiry(engine, old.request.id)
    new = await request_resend.send_again(live_ctx, SUPPORT, org.organization_id, old.request.id, "again")
    assert webhook_store.event_by_fact(engine, f"request.resent:{new.request.id}") is None
    missed = resend_store.unannounced(engine, utcnow() - timedelta(hours=1), utcnow() + timedelta(hours=1))
    assert all(request_id != new.request.id for _, request_id in missed)


async def test_the_workers_pass_announces_what_the_api_did_not(
    live_ctx: Context, org: Credentials, engine: Engine, settings: Settings
) -> None:
    """The API died between the new request's commit and its event: the worker's pass makes the
    event and starts its delivery, once however often it runs."""
    old = _request(engine, org.organization_id)
    request_records.record_expiry(engine, old.request.id)
    source = resend_store.source_of(engine, org.organization_id, old.request.id)
    assert source is not None
    new = resend_store.new_request_of(source, {}, "the API died after this")
    made = store.create_request(engine, org.organization_id, new, timedelta(days=1), 10_000, None, None)
    assert isinstance(made, store.RequestBundle)
    fact = f"request.resent:{made.request.id}"
    assert webhook_store.event_by_fact(engine, fact) is None
    now_graced = settings.model_copy(update={"reconcile_grace": timedelta(0)})
    for _ in range(2):
        await request_resend.announce_missed_once(engine, now_graced, live_ctx.client())
    event = webhook_store.event_by_fact(engine, fact)
    assert event is not None and event.payload["resentFrom"] == old.request.id
    assert (
        len(
            [
                e
                for e in webhook_store.list_events(engine, org.organization_id, 50)
                if e.event_type == "request.resent"
            ]
        )
        == 1
    )
